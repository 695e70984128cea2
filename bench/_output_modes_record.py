"""
The output-modes bench's ROS side: what the arm did and what the node sent, on one clock.

The demo's Recorder drives the policy node's lifecycle and collects its outcome, chunks and
the controllers' ERROR lines; this adds the controller_manager's ERROR lines (a command
clamped to the joints' limits), the two series the bench measures, both on the
system clock that the simulated arm writes into `header.stamp` (it runs without sim time):
every joint_states sample at its stamp (the physics step it reports), and every command on
the output mode's own topic at its receipt (`time.time()`, a DDS hop after the node's tick).
It also moves the sim's target (a parameter) and stops the episode (a service).
"""

from dataclasses import dataclass, field
import threading
import time
from typing import Any

from rcl_interfaces.msg import Log, ParameterType, ParameterValue
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParameters
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from sequence_ai_ros.demo.controllers import ARM_CONTROLLERS
from sequence_ai_ros.demo.record import JointOrder, NODE, Recorder, SIM
from sequence_ai_ros.harness.ros_side import RosSide
from sequence_ai_ros.harness.service_calls import call_service
from sequence_ai_ros.runtime.log_level import ERROR, log_level
from sequence_ai_ros.world.arm_model import JOINT_NAMES
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

Vector = tuple[float, ...]
# Every sample of a reliable publisher: the bench differentiates the series three times.
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


@dataclass(frozen=True)
class Sent:
    """
    One command as the controller got it, arm joints only.

    `first` is the step's own value (positions; velocities for forward_velocity), `last` the
    end of what the message commits the arm to (a trajectory's last point), `velocities` the
    first point's (empty when the message carries none), `first_s` when the first point is
    due after receipt (a trajectory's time_from_start; None for a forward command).
    """

    time: float
    first: Vector
    last: Vector
    velocities: Vector
    first_s: float | None = None


@dataclass
class Series:
    """The arm's joint states (stamp, positions, velocities) and the commands sent."""

    states: list[tuple[float, Vector, Vector]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def latest_speed(self, span_s: float) -> float | None:
        """Return the mean joint-space speed (rad/s) over the last `span_s` of states."""
        with self.lock:
            if not self.states:
                return None
            end = self.states[-1][0]
            recent = [s for s in self.states[-400:] if s[0] >= end - span_s]
        speeds = [sum(v * v for v in vel) ** 0.5 for _, _, vel in recent]
        return sum(speeds) / len(speeds)


class ModeRecorder(Recorder):
    """The demo's Recorder plus the stamped joint states and the mode's command topic."""

    def __init__(self, ros: RosSide, namespace: str, output_mode: str) -> None:
        super().__init__(ros, namespace)
        self.series = Series()
        self.limit_clamps: list[str] = []  # the controller_manager's ERROR lines
        self._arm_joints = JointOrder(JOINT_NAMES)
        node, ns = self.node, self.ns
        controller = ARM_CONTROLLERS[output_mode]
        if output_mode.startswith('trajectory'):
            node.create_subscription(JointTrajectory, f'{ns}/{controller}/joint_trajectory',
                                     self._on_trajectory, RELIABLE)
        else:
            node.create_subscription(Float64MultiArray, f'{ns}/{controller}/commands',
                                     self._on_forward, RELIABLE)
        node.create_subscription(JointState, f'{ns}/joint_states', self._on_state, RELIABLE)
        self._set_params: Any = node.create_client(SetParameters,
                                                   f'{ns}/{SIM}/set_parameters')
        self._stop: Any = node.create_client(Trigger, f'{ns}/{NODE}/stop_episode')

    def set_target(self, xy: tuple[float, float], timeout_s: float = 5.0) -> bool:
        """Move the red disc on the sim's table; return whether the sim took it."""
        value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                               double_array_value=[float(xy[0]), float(xy[1])])
        request = SetParameters.Request(parameters=[ParameterMsg(name='target_xy',
                                                                 value=value)])
        try:
            response = call_service(self._set_params, request, timeout_s)
        except TimeoutError:
            return False
        return all(result.successful for result in response.results)

    def stop_episode(self, timeout_s: float = 5.0) -> bool:
        """Ask the policy node to end its episode holding; return whether it did."""
        try:
            return bool(call_service(self._stop, Trigger.Request(), timeout_s).success)
        except TimeoutError:
            return False

    def _on_state(self, msg: JointState) -> None:
        index = self._arm_joints.of(msg)
        if index is None:
            return
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        velocities = tuple(msg.velocity[i] for i in index) if msg.velocity else ()
        with self.series.lock:
            self.series.states.append((stamp, tuple(msg.position[i] for i in index),
                                       velocities))

    def _on_log(self, msg: Log) -> None:
        super()._on_log(msg)
        manager = f'{self.ns.strip("/").replace("/", ".")}.controller_manager'
        if log_level(msg) >= ERROR and msg.name == manager:
            self.limit_clamps.append(msg.msg)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        now = time.time()
        if not msg.points:
            return
        first, last = msg.points[0], msg.points[-1]
        with self.series.lock:
            self.series.sent.append(Sent(now, tuple(first.positions), tuple(last.positions),
                                         tuple(first.velocities),
                                         first.time_from_start.sec
                                         + first.time_from_start.nanosec * 1e-9))

    def _on_forward(self, msg: Float64MultiArray) -> None:
        now = time.time()
        values = tuple(msg.data)
        with self.series.lock:
            self.series.sent.append(Sent(now, values, values, ()))
