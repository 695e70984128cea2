"""The demo's own ROS node: drive the policy node's lifecycle and record what the loop does."""

from collections.abc import Sequence
import json
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.msg import Log
import rclpy
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from sequence_ai_ros.harness.ros_side import RosSide
from sequence_ai_ros.harness.service_calls import change_state, lifecycle_state
from sequence_ai_ros.runtime.log_level import ERROR, log_level
from sequence_ai_ros.sim.arm import JOINT_NAMES
from std_msgs.msg import Float64, String
from trajectory_msgs.msg import JointTrajectory

from .analysis import Recording

RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
COMMAND_TOPIC = 'joint_trajectory_controller/joint_trajectory'
NODE = 'policy_node'
SIM = 'sim_arm'


class JointOrder:
    """Where some joints sit in a JointState, worked out once per order of its names."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self._seen: tuple[tuple[str, ...], list[int] | None] = ((), None)

    def of(self, msg: JointState) -> list[int] | None:
        """Return the index in `msg` of each of `names`, or None if one is missing."""
        names = tuple(msg.name)
        if names != self._seen[0]:
            found = set(self.names) <= set(names)
            self._seen = (names, [names.index(n) for n in self.names] if found else None)
        return self._seen[1]


class Recorder:
    """Subscribes to one namespace's loop and calls its policy node's lifecycle services."""

    def __init__(self, ros: RosSide, namespace: str) -> None:
        self.ros = ros
        self.ns = namespace.rstrip('/')
        self.data = Recording()
        self._joints = JointOrder(JOINT_NAMES)
        self.node = rclpy.create_node('demo_recorder', context=ros.context)
        node, ns = self.node, self.ns
        node.create_subscription(JointTrajectory, f'{ns}/{COMMAND_TOPIC}', self._on_command,
                                 RELIABLE)
        node.create_subscription(JointState, f'{ns}/joint_states', self._on_joints,
                                 qos_profile_sensor_data)
        node.create_subscription(String, f'{ns}/{NODE}/chunks', self._on_chunk, RELIABLE)
        node.create_subscription(String, f'{ns}/{NODE}/episode_outcome', self._on_outcome,
                                 RELIABLE)
        node.create_subscription(Float64, f'{ns}/{SIM}/task_distance', self._on_distance, 10)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        node.create_subscription(Log, '/rosout', self._on_log, RELIABLE)
        self._change: Any = node.create_client(ChangeState, f'{ns}/{NODE}/change_state')
        self._get: Any = node.create_client(GetState, f'{ns}/{NODE}/get_state')
        ros.executor.add_node(node)

    def close(self) -> None:
        """Remove the recorder's node (the recording stays)."""
        self.ros.executor.remove_node(self.node)
        self.node.destroy_node()

    # -- the lifecycle ---------------------------------------------------------------------

    def wait_for_node(self, timeout_s: float) -> bool:
        """Wait until the policy node's lifecycle services answer requests."""
        return lifecycle_state(self._get, timeout_s) != ''

    def transition(self, transition_id: int, timeout_s: float) -> bool:
        """Request a lifecycle transition; a lost answer is recovered by reading the state."""
        return change_state(self._change, self._get, transition_id, timeout_s)

    def state(self, timeout_s: float) -> str:
        """Return the policy node's lifecycle state label, or '' if it does not answer."""
        return lifecycle_state(self._get, timeout_s)

    # -- what the loop publishes -------------------------------------------------------------

    def _on_command(self, msg: JointTrajectory) -> None:
        if msg.points:
            point = msg.points[0]
            self.data.commands.append((time.monotonic(), tuple(point.positions),
                                       tuple(point.velocities)))

    def _on_joints(self, msg: JointState) -> None:
        index = self._joints.of(msg)
        if index is not None:
            self.data.joint_states.append((time.monotonic(),
                                           tuple(msg.position[i] for i in index)))

    def _on_log(self, msg: Log) -> None:
        # A controller's logger is <namespace>.<controller> with dots: e.g. demo.on.gripper_...
        prefix = self.ns.strip('/').replace('/', '.') + '.'
        if log_level(msg) >= ERROR and msg.name.startswith(prefix) and \
                msg.name.endswith('controller'):
            self.data.controller_errors.append((msg.name, msg.msg))

    def _on_chunk(self, msg: String) -> None:
        self.data.chunks.append((time.monotonic(), json.loads(msg.data)))

    def _on_outcome(self, msg: String) -> None:
        if self.data.outcome is None:
            self.data.outcome_time = time.monotonic()
            self.data.outcome = json.loads(msg.data)

    def _on_distance(self, msg: Float64) -> None:
        self.data.distances.append((time.monotonic(), float(msg.data)))

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.hardware_id != f'{self.ns}/{NODE}':
                continue
            part = status.name.rsplit(': ', 1)[-1]
            if part == 'gateway':
                values = {kv.key: kv.value for kv in status.values}
                eta = values.get('warming ETA (s)', 'n/a')
                self.data.warming_eta_s = None if eta == 'n/a' else float(eta)
            elif part == 'episode':
                self.data.episode_message = status.message
                values = {kv.key: kv.value for kv in status.values}
                self.data.gripper_goals = int(values.get('gripper goals', '0'))
                self.data.gripper_failures = int(values.get('gripper failures', '0'))
