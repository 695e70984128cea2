"""
The gripper on its own interface, as on a real arm.

The model's gripper value is 0 (open) .. 1 (closed) in every action space (the DROID
convention); the gripper joint in joint_states has its own units (a Panda finger 0.04 m open ..
0 closed, a Robotiq 2F-85 0 .. 0.8 rad). :class:`GripperScale` maps both ways, so inputs and
commands stay in model units inside the node. :class:`GripperOutput` sends a target only when it
changes (a gripper is not streamed at the control rate), optionally made binary at a threshold
(DROID policies are trained with a binary gripper), on one of:

action            control_msgs/action/GripperCommand (gripper_action_controller, franka_gripper)
                  or ParallelGripperCommand (parallel_gripper_action_controller, which replaces
                  gripper_action_controller from Kilted on): whichever the server on the name
                  serves, found at configure (:meth:`GripperOutput.connect`)
trajectory        a one-joint trajectory_msgs/JointTrajectory (a joint_trajectory_controller)
forward_position  std_msgs/Float64MultiArray (a forward_command_controller)

A goal the gripper rejects or aborts is recorded as a problem for /diagnostics; the node decides
from `gripper_on_failure` whether the episode holds or goes on.
"""

from dataclasses import dataclass
import math
import time
from typing import Any

from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from .arm_output import stream_trajectory

__all__ = ['GRIPPER_INTERFACES', 'GripperOutput', 'GripperScale', 'import_gripper_action']

WITH_ARM, ACTION, TRAJECTORY, FORWARD = 'with_arm', 'action', 'trajectory', 'forward_position'
PARALLEL = 'ParallelGripperCommand'
GRIPPER_INTERFACES = (WITH_ARM, ACTION, TRAJECTORY, FORWARD)
# GoalStatus values (action_msgs/GoalStatus), spelled out to keep action_msgs optional here.
_SUCCEEDED, _CANCELED, _ABORTED = 4, 5, 6


def import_gripper_action(action: str = 'GripperCommand',
                          needed_by: str = "gripper_interface 'action'") -> Any:
    """Return control_msgs' `action` type; ImportError says what needs it and what to install."""
    try:
        from control_msgs import action as actions
        return getattr(actions, action)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f'{needed_by} needs control_msgs/action/{action} '
            '(ros-<distro>-control-msgs, part of every ros2_control install, not on PyPI; '
            'ParallelGripperCommand since control_msgs 5.1); it cannot be imported here'
        ) from exc


@dataclass(frozen=True)
class GripperScale:
    """Model 0 (open) .. 1 (closed) <-> the gripper joint's own position units."""

    open_position: float
    closed_position: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.open_position) and math.isfinite(self.closed_position)) \
                or self.open_position == self.closed_position:
            raise ValueError('gripper_open_position and gripper_closed_position must be finite '
                             f'and differ, got {self.open_position}, {self.closed_position}')

    def to_joint(self, model_value: float) -> float:
        """Return the joint position of a model value (clamped to 0..1 first)."""
        value = min(1.0, max(0.0, model_value))
        return self.open_position + value * (self.closed_position - self.open_position)

    def to_model(self, joint_position: float) -> float:
        """Return the model value of a measured joint position (not clamped: NaN stays NaN)."""
        return (joint_position - self.open_position) / (self.closed_position - self.open_position)


class GripperOutput:
    """Sends the gripper target on change over one interface; remembers what went wrong."""

    def __init__(self, node: Any, interface: str, name: str, joint: str, scale: GripperScale,
                 *, max_effort: float, threshold: float, min_change: float) -> None:
        if interface not in GRIPPER_INTERFACES or interface == WITH_ARM:
            raise ValueError(f'gripper_interface {interface!r} has no output of its own')
        self.interface, self.name, self.joint, self.scale = interface, name, joint, scale
        self.max_effort, self.threshold, self.min_change = max_effort, threshold, min_change
        self.goals = 0
        self.on_publish: Any = None  # told each command sent (episode recording)
        self.failures = 0
        self.action = ''
        self.problem = ''
        self._failed_unseen = False
        self._node = node
        self._sent: float | None = None
        self._action_type: Any = None
        self._client: Any = None
        self._publisher: Any = None
        if interface != ACTION:
            kind = JointTrajectory if interface == TRAJECTORY else Float64MultiArray
            self._publisher = node.create_publisher(kind, name, 10)

    def connect(self, timeout_s: float) -> str:
        """
        Find the action server and what it serves, then its client; return why not, or ''.

        A topic connects at once. The action's type is the server's (GripperCommand or
        ParallelGripperCommand), so the client is made only once the server is seen.
        """
        if self.interface != ACTION or self._client is not None:
            return ''
        from rclpy.action import ActionClient

        from .controller_check import gripper_action_type
        from .probe import action_server_types
        deadline = time.monotonic() + timeout_s
        resolved = self._resolved()
        action, problem = gripper_action_type(
            action_server_types(self._node, resolved, timeout_s), resolved, timeout_s)
        if problem:
            return problem
        try:
            self._action_type = import_gripper_action(action)
        except ImportError as exc:
            return f'{resolved} serves control_msgs/action/{action}: {exc}'
        self.action = action
        self._client = ActionClient(self._node, self._action_type, self.name)
        if not self._client.wait_for_server(
                timeout_sec=max(0.1, deadline - time.monotonic())):
            return f'the {action} server on {resolved} is in the graph but does not answer'
        return ''

    def target(self, model_value: float) -> float:
        """Return the model value that would be sent: binary at the threshold if one is set."""
        if self.threshold >= 0.0:
            return 1.0 if model_value >= self.threshold else 0.0
        return min(1.0, max(0.0, model_value))

    def command(self, model_value: float, period_s: float) -> bool:
        """Send `model_value` if it changed enough since the last goal; True if sent."""
        target = self.target(model_value)
        if self._sent is not None and abs(target - self._sent) < max(self.min_change, 1e-9):
            return False
        self._sent = target
        self.goals += 1
        position = self.scale.to_joint(target)
        if self.interface == ACTION:
            self._send_goal(position)
        elif self.interface == TRAJECTORY:
            self._publish(stream_trajectory([self.joint], [position], period_s))
        else:
            self._publish(Float64MultiArray(data=[position]))
        return True

    def reset(self) -> None:
        """Forget the last target (a new episode sends its first value whatever it is)."""
        self._sent = None
        self._failed_unseen = False

    def take_failure(self) -> str:
        """Return a goal failure not yet acted on ('' if none), once."""
        if not self._failed_unseen:
            return ''
        self._failed_unseen = False
        return self.problem

    def close(self) -> None:
        """Destroy the client or publisher."""
        if self._client is not None:
            self._client.destroy()
            self._client = None
        if self._publisher is not None:
            self._node.destroy_publisher(self._publisher)
            self._publisher = None

    def _send_goal(self, position: float) -> None:
        client = self._client
        if client is None or not client.server_is_ready():
            self._fail(f'gripper action server {self._resolved()} is not available')
            return
        goal = self._action_type.Goal()
        if self.action == PARALLEL:
            # A JointState: one position; an effort only when one is asked for, since a
            # controller with an effort interface would write a 0 as the limit.
            goal.command.name = [self.joint]
            goal.command.position = [float(position)]
            goal.command.effort = [float(self.max_effort)] if self.max_effort > 0 else []
        else:
            goal.command.position = float(position)
            goal.command.max_effort = float(self.max_effort)
        if self.on_publish is not None:
            self.on_publish(goal)
        client.send_goal_async(goal).add_done_callback(
            self._guarded('gripper goal response', self._on_goal_response))

    def _publish(self, message: Any) -> None:
        self._publisher.publish(message)
        if self.on_publish is not None:
            self.on_publish(message)

    def _on_goal_response(self, future: Any) -> None:
        handle = future.result()
        if handle is None or not handle.accepted:
            self._fail(f'gripper {self._resolved()} rejected the goal')
            return
        handle.get_result_async().add_done_callback(
            self._guarded('gripper result', self._on_result))

    def _on_result(self, future: Any) -> None:
        answer = future.result()
        status, result = answer.status, answer.result
        if status == _ABORTED:
            stalled = ' (stalled)' if result.stalled else ''
            self._fail(f'gripper {self._resolved()} aborted the goal{stalled} at '
                       f'{_result_position(result):.4f}')
        elif status == _SUCCEEDED:
            self.problem = ''
        elif status != _CANCELED:
            self._fail(f'gripper {self._resolved()} ended the goal with status {status}')

    def _guarded(self, entry: str, callback: Any) -> Any:
        # Future callbacks run on the executor, outside the node's create_* wrappers.
        guard = getattr(self._node, 'callback_guard', None)
        return callback if guard is None else guard.wrap(entry, callback)

    def _fail(self, problem: str) -> None:
        self.failures += 1
        self.problem = problem
        self._failed_unseen = True

    def _resolved(self) -> str:
        try:
            return str(self._node.resolve_topic_name(self.name))
        except Exception:  # a name rclpy cannot resolve is still worth naming as given
            return self.name


def _result_position(result: Any) -> float:
    """Return a result's measured position: GripperCommand's field, or the JointState's."""
    if hasattr(result, 'state'):
        return float(result.state.position[0]) if len(result.state.position) else math.nan
    return float(result.position)
