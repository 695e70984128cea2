"""
A robot over DDS for one namespace: what a policy node subscribes to and calls, no arm behind it.

It publishes joint states and two camera frames rendered from where it stands (raw or JPEG),
keeps every command it gets (and by default stands where the last one told it), serves the hold
service the node calls, and calls the node's lifecycle, parameter and episode services. Each
setting a test may break (stale or NaN inputs, stamps off, frames replaced) is an attribute;
`reset` undoes them all. Many robots share one node (a RosSide's): the tests keep one per
namespace for a module, the benchmarks make one per node run and close it after. For the cost
or the faults of the node alone: the simulated arm (sequence_ai_ros.sim) is the robot that moves.
"""

from array import array
import collections
from collections.abc import Callable, Sequence
import io
import threading
import time
from typing import Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from PIL import Image as PILImage
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros.harness.service_calls import call_service, change_state
from sequence_ai_ros.sim.render import SceneRenderer
from sequence_ai_ros.world import arm_model
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

NAMES = (*arm_model.JOINT_NAMES, arm_model.GRIPPER_JOINT)
HOME = (*(float(v) for v in arm_model.HOME), 0.0)  # the gripper open
VIEWS = ('exterior', 'wrist')
TARGET_XY = (0.5, 0.2)  # where the scene's red disc lies
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def raw_frame(pixels: Any) -> Image:
    """Return an rgb8 sensor_msgs/Image of an (height, width, 3) uint8 array."""
    return Image(height=pixels.shape[0], width=pixels.shape[1], encoding='rgb8',
                 step=pixels.shape[1] * 3, data=pixels.tobytes())


def jpeg_frame(pixels: Any) -> CompressedImage:
    """Return a JPEG sensor_msgs/CompressedImage of an (height, width, 3) uint8 array."""
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, 'JPEG', quality=92)
    return CompressedImage(format='jpeg', data=array('B', buffer.getvalue()))


class Robot:
    """One namespace's robot on a shared node: sensors out, commands and diagnostics in."""

    def __init__(self, node: Any, namespace: str, *, joint_rate_hz: float = 50.0,
                 camera_rate_hz: float = 10.0, frame_size: tuple[int, int] = (160, 120),
                 compressed: bool | Sequence[bool] = False, stamp_frames: bool = False,
                 watch_diagnostics: bool = False, watch_commands: bool = True) -> None:
        """
        Play the robot of `namespace` on `node` (spun by its owner).

        `compressed` is one flag for both cameras or a (exterior, wrist) pair; `stamp_frames`
        stamps camera frames (joint states are always stamped); `watch_diagnostics` keeps
        (time, status) of this namespace's /diagnostics statuses in `diagnostics`;
        `watch_commands` False leaves the node's commands unheard (one reader less for its
        publisher to serve) and the robot where it stands.
        """
        self.node = node
        self.ns = f'/{namespace}'
        self.joint_rate_hz, self.camera_rate_hz = joint_rate_hz, camera_rate_hz
        self.positions = list(HOME)
        self.names = list(NAMES)
        self.publish_joints = True
        self.publish_cameras = True
        self.follow = True
        self.stamp_frames = stamp_frames
        # Added to the stamps the timers put on (a clock that jumped); 0 = now.
        self.joint_stamp_shift_s = 0.0
        self.frame_stamp_shift_s = 0.0
        # Camera index -> message published instead of the rendered frame, every camera tick.
        self.frame_overrides: dict[int, Any] = {}
        self._injections: list[tuple[Any, Any]] = []
        self.commands: list[tuple[float, JointTrajectory]] = []
        self.outcomes: list[str] = []
        self.diagnostics: list[tuple[float, Any]] = []
        self.holds = 0
        self.hold_times: list[float] = []
        # Publish times, to tell a stall of this process from the node's.
        self.joint_sent: collections.deque[float] = collections.deque(maxlen=5000)
        self._renderer = SceneRenderer(*frame_size)
        self._frames: tuple[tuple[float, ...] | None, list[Any]] = (None, [])
        self._lock = threading.Lock()
        self._entities: list[Any] = []
        keep = self._keep
        self.joint_pub = keep(node.create_publisher(JointState, f'{self.ns}/joint_states',
                                                    qos_profile_sensor_data))
        self.compressed = compressed
        self.compressed_views = (compressed,) * 2 if isinstance(compressed, bool) \
            else tuple(compressed)
        self.image_pubs = [keep(node.create_publisher(
            *((CompressedImage, f'{self.ns}/camera/{view}/image_raw/compressed') if packed
              else (Image, f'{self.ns}/camera/{view}/image_raw')), qos_profile_sensor_data))
            for view, packed in zip(VIEWS, self.compressed_views)]
        self.instruction_pub = keep(node.create_publisher(String, f'{self.ns}/instruction',
                                                          RELIABLE))
        self.gate_pub = keep(node.create_publisher(Bool, f'{self.ns}/safety_gate', RELIABLE))
        if watch_commands:
            keep(node.create_subscription(
                JointTrajectory, f'{self.ns}/joint_trajectory_controller/joint_trajectory',
                self._on_command, RELIABLE))
        keep(node.create_subscription(String, f'{self.ns}/policy_node/episode_outcome',
                                      lambda msg: self.outcomes.append(msg.data), RELIABLE))
        keep(node.create_service(Trigger, f'{self.ns}/robot/hold', self._on_hold))
        if watch_diagnostics:
            keep(node.create_subscription(DiagnosticArray, '/diagnostics',
                                          self._on_diagnostics, 50))
        keep(node.create_timer(1.0 / joint_rate_hz, self._send_joints))
        keep(node.create_timer(1.0 / camera_rate_hz, self._send_frames))
        self.change_client = keep(node.create_client(
            ChangeState, f'{self.ns}/policy_node/change_state'))
        self.state_client = keep(node.create_client(GetState,
                                                    f'{self.ns}/policy_node/get_state'))
        self.start_client = keep(node.create_client(Trigger,
                                                    f'{self.ns}/policy_node/start_episode'))
        self.stop_client = keep(node.create_client(Trigger,
                                                   f'{self.ns}/policy_node/stop_episode'))
        self.set_params_client = keep(node.create_client(
            SetParameters, f'{self.ns}/policy_node/set_parameters'))
        self.get_params_client = keep(node.create_client(
            GetParameters, f'{self.ns}/policy_node/get_parameters'))

    def _keep(self, entity: Any) -> Any:
        self._entities.append(entity)
        return entity

    def every(self, period: float, callback: Callable[[], None]) -> Any:
        """Create a timer that goes away with this robot."""
        return self._keep(self.node.create_timer(period, callback))

    def close(self) -> None:
        """Remove every publisher, subscription, service, client and timer of this robot."""
        self.publish_joints = self.publish_cameras = False
        timers = [e for e in self._entities if hasattr(e, 'timer_period_ns')]
        for entity in timers + [e for e in self._entities if e not in timers]:
            for destroy in (self.node.destroy_timer, self.node.destroy_publisher,
                            self.node.destroy_subscription, self.node.destroy_service,
                            self.node.destroy_client):
                try:
                    if destroy(entity):
                        break
                except Exception:  # noqa: BLE001 - not this kind of entity
                    continue
        self._entities = []

    # -- what the robot hears ----------------------------------------------------------------

    def _on_command(self, msg: JointTrajectory) -> None:
        with self._lock:
            self.commands.append((time.monotonic(), msg))
        if self.follow and msg.points and len(msg.points[0].positions) == len(self.positions):
            # An ideal controller: the arm is where it was last told to be, so the loop closes.
            self.positions = [float(v) for v in msg.points[0].positions]

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        now = time.monotonic()
        # '/ns/' so that '/arm1' does not collect '/arm10'.
        self.diagnostics.extend((now, status) for status in msg.status
                                if status.hardware_id.startswith(f'{self.ns}/'))

    def _on_hold(self, request: Trigger.Request, response: Trigger.Response
                 ) -> Trigger.Response:
        self.hold_times.append(time.monotonic())
        self.holds += 1
        response.success, response.message = True, 'holding'
        return response

    def command_list(self) -> list[tuple[float, JointTrajectory]]:
        """Return the (receipt time, message) commands so far."""
        with self._lock:
            return list(self.commands)

    # -- what the robot sends ----------------------------------------------------------------

    def _send_joints(self) -> None:
        while self._injections:  # from the test thread; published on this one, in order
            publisher, message = self._injections.pop(0)
            publisher.publish(message)
        if not self.publish_joints:
            return
        msg = JointState(name=self.names, position=list(self.positions))
        msg.header.stamp = self.stamp(self.joint_stamp_shift_s)
        self.joint_pub.publish(msg)
        self.joint_sent.append(time.monotonic())

    def joint_gap_at(self, since: float) -> tuple[float, float]:
        """Return (longest pause, its start - since) of the joint states sent after `since`."""
        sent = [t for t in self.joint_sent if t > since]
        return max(((round(b - a, 3), round(a - since, 3)) for a, b in zip(sent, sent[1:])),
                   default=(0.0, 0.0))

    def stamp(self, shift_s: float = 0.0) -> Time:
        """Return now plus `shift_s` as a header stamp."""
        nanoseconds = max(0, self.node.get_clock().now().nanoseconds + round(shift_s * 1e9))
        sec, nanosec = divmod(nanoseconds, 1_000_000_000)
        return Time(sec=sec, nanosec=nanosec)

    def inject(self, publisher: Any, message: Any) -> None:
        """Publish `message` once, from the joint-state timer's thread, before the next state."""
        self._injections.append((publisher, message))

    def _send_frames(self) -> None:
        if not self.publish_cameras:
            return
        q = tuple(self.positions[:7])
        if self._frames[0] != q:  # render only when the arm moved
            renders = (self._renderer.exterior, self._renderer.wrist)
            self._frames = (q, [(jpeg_frame if packed else raw_frame)(render(q, TARGET_XY))
                                for render, packed in zip(renders, self.compressed_views)])
        for index, (pub, msg) in enumerate(zip(self.image_pubs, self._frames[1])):
            msg = self.frame_overrides.get(index, msg)
            if self.stamp_frames:
                msg.header.stamp = self.stamp(self.frame_stamp_shift_s)
            pub.publish(msg)

    # -- the node's services -----------------------------------------------------------------

    def call(self, client: Any, request: Any, timeout: float = 10.0) -> Any:
        """Call a service of the node and return its answer (raises after `timeout`)."""
        return call_service(client, request, timeout)

    def transition(self, transition_id: int, timeout: float = 20.0) -> bool:
        """Change the node's lifecycle state and return whether it took (lost replies too)."""
        return change_state(self.change_client, self.state_client, transition_id, timeout)

    def configure(self) -> bool:
        """Configure the node; return whether it took."""
        return self.transition(Transition.TRANSITION_CONFIGURE)

    def activate(self) -> bool:
        """Activate the node; return whether it took."""
        return self.transition(Transition.TRANSITION_ACTIVATE)

    def deactivate(self) -> bool:
        """Deactivate the node; return whether it took."""
        return self.transition(Transition.TRANSITION_DEACTIVATE)

    def cleanup(self) -> bool:
        """Clean the node up; return whether it took."""
        return self.transition(Transition.TRANSITION_CLEANUP)

    def state(self) -> str:
        """Return the label of the node's lifecycle state."""
        return str(self.call(self.state_client, GetState.Request()).current_state.label)

    def start_episode(self) -> Any:
        """Call ~/start_episode; return the Trigger response."""
        return self.call(self.start_client, Trigger.Request())

    def stop_episode(self) -> Any:
        """Call ~/stop_episode; return the Trigger response."""
        return self.call(self.stop_client, Trigger.Request())

    def set_parameters(self, **values: Any) -> list[Any]:
        """Set the node's parameters one by one; return the SetParametersResult of each."""
        request = SetParameters.Request(parameters=[
            Parameter(name=name, value=parameter_value(value)) for name, value in values.items()])
        return list(self.call(self.set_params_client, request).results)

    def get_parameter(self, name: str) -> Any:
        """Return the ParameterValue of one of the node's parameters."""
        answer = self.call(self.get_params_client, GetParameters.Request(names=[name]))
        return answer.values[0]

    def reset(self) -> None:
        """Back to a healthy robot at HOME: every fault a test may have set is undone."""
        self.positions = list(HOME)
        self.names = list(NAMES)
        self.publish_joints = self.publish_cameras = self.follow = True
        self.joint_stamp_shift_s = self.frame_stamp_shift_s = 0.0
        self.frame_overrides = {}
        self._frames = (None, [])


def parameter_value(value: Any) -> ParameterValue:
    """Wrap a Python value as an rcl_interfaces ParameterValue of the matching type."""
    if isinstance(value, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    if isinstance(value, int):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    if isinstance(value, float):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    if isinstance(value, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    if value and all(isinstance(v, str) for v in value):
        return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=value)
    if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER_ARRAY,
                              integer_array_value=value)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                          double_array_value=[float(v) for v in value])
