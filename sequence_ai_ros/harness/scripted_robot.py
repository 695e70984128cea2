"""
A scripted robot over DDS: what a policy node subscribes to and calls, with no arm behind it.

It publishes joint states (at rest, at `positions`) and two raw camera frames rendered once,
serves the hold service the node calls, and changes the node's lifecycle state; one rclpy
context and one spinning thread of its own serve any number of namespaces, so a benchmark can
move it from one node run to the next. For benchmarks of the node's own cost: the simulated
arm (sequence_ai_ros.sim) is the robot that moves.
"""

from collections.abc import Sequence
from typing import Any

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from sequence_ai_ros.harness.ros_side import RosSide
from sequence_ai_ros.harness.service_calls import call_service
from sequence_ai_ros.sim.render import SceneRenderer
from std_srvs.srv import Trigger

VIEWS = ('exterior', 'wrist')


def raw_frame(pixels: Any) -> Image:
    """Return an rgb8 sensor_msgs/Image of an (height, width, 3) uint8 array."""
    return Image(height=pixels.shape[0], width=pixels.shape[1], encoding='rgb8',
                 step=pixels.shape[1] * 3, data=pixels.tobytes())


class ScriptedRobot:
    """Joint states and camera frames out, the hold service, lifecycle changes, per namespace."""

    def __init__(self, names: Sequence[str], positions: Sequence[float], joint_rate: float,
                 camera_rate: float, size: tuple[int, int],
                 target_xy: tuple[float, float] = (0.5, 0.2)) -> None:
        self.names = list(names)
        self.positions = [float(v) for v in positions]
        self._side = RosSide('scripted_robot')
        self.context, self.node = self._side.context, self._side.node
        renderer = SceneRenderer(*size)
        self._frames = []
        for render in (renderer.exterior, renderer.wrist):
            self._frames.append(raw_frame(render(tuple(self.positions[:7]), target_xy)))
        self._pubs: dict[str, tuple[Any, list[Any]]] = {}
        self._services: dict[str, Any] = {}
        self._change: dict[str, Any] = {}
        self.holds = 0
        self.node.create_timer(1 / joint_rate, self._send_joints)
        self.node.create_timer(1 / camera_rate, self._send_frames)

    def attach(self, ns: str) -> None:
        """Serve namespace `ns`: sensors, `robot/hold`, and its policy node's lifecycle."""
        node = self.node
        self._pubs[ns] = (
            node.create_publisher(JointState, f'/{ns}/joint_states', qos_profile_sensor_data),
            [node.create_publisher(Image, f'/{ns}/camera/{view}/image_raw',
                                   qos_profile_sensor_data) for view in VIEWS])
        self._services[ns] = node.create_service(Trigger, f'/{ns}/robot/hold', self._on_hold)
        self._change[ns] = node.create_client(ChangeState, f'/{ns}/policy_node/change_state')

    def detach(self, ns: str) -> None:
        """Stop publishing to `ns`, so later runs do not pay for its sensors."""
        # Only forgotten, not destroyed: destroying entities the spinning thread may be
        # waiting on races it, and an idle publisher or service costs nothing.
        del self._pubs[ns]

    def _on_hold(self, request: Trigger.Request, response: Trigger.Response
                 ) -> Trigger.Response:
        self.holds += 1
        response.success, response.message = True, 'holding'
        return response

    def _send_joints(self) -> None:
        for joints, _ in list(self._pubs.values()):
            msg = JointState(name=self.names, position=list(self.positions))
            msg.header.stamp = self.node.get_clock().now().to_msg()
            joints.publish(msg)

    def _send_frames(self) -> None:
        for _, cameras in list(self._pubs.values()):
            for pub, msg in zip(cameras, self._frames):
                pub.publish(msg)

    def transition(self, ns: str, transition_id: int, timeout_s: float = 20.0) -> bool:
        """Change the lifecycle state of `ns`'s policy node; return whether it took."""
        request = ChangeState.Request()
        request.transition = Transition(id=transition_id)
        return bool(call_service(self._change[ns], request, timeout_s).success)

    def close(self) -> None:
        """Stop spinning and shut the robot's context down."""
        self._side.close()
