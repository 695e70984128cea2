"""
The FollowJointTrajectory action of a simulated joint_trajectory_controller, if it can be had.

control_msgs is imported lazily: without it (it is not a PyPI wheel) the controller simply has
no action, as :func:`attach` logs. Ported from ros-controls/ros2_controllers
joint_trajectory_controller.cpp (jazzy-era source): goal_received_callback (refuse while
inactive, else validate_trajectory_msg; "Received new action goal", "Accepted new action
goal"), goal_accepted_callback (a new goal preempts the active one, "Current goal cancelled
due to new incoming action."), goal_cancelled_callback (hold position), and update()'s goal
handling: feedback while executing, success ("Goal successfully reached!") once the last point
is reached, after which the last point is commanded on. Tolerances are not checked (the
defaults of 0.0 check nothing); the preempted goal is aborted with INVALID_GOAL, as rclpy
allows no canceled() from executing.
"""

from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from rclpy.task import Future
from sequence_ai_ros.sim.messages import trajectory_from_msg
from sequence_ai_ros.sim.trajectory import TrajectoryExecutor
from trajectory_msgs.msg import JointTrajectoryPoint


def attach(node: Node, executor: TrajectoryExecutor) -> 'FollowJointTrajectoryServer | None':
    """Offer `<node name>/follow_joint_trajectory` if control_msgs is importable, else None."""
    try:
        from control_msgs.action import FollowJointTrajectory
    except ImportError:
        node.get_logger().info('control_msgs is not importable: no follow_joint_trajectory action')
        return None
    return FollowJointTrajectoryServer(node, executor, FollowJointTrajectory)


class _Goal:
    """An accepted goal: its handle, the number its trajectory got, and the result to await."""

    def __init__(self, handle: Any, number: int) -> None:
        self.handle = handle
        self.number = number
        self.done = Future()


class FollowJointTrajectoryServer:
    """Runs FollowJointTrajectory goals through the controller's executor."""

    def __init__(self, node: Node, executor: TrajectoryExecutor, action_type: Any) -> None:
        self._node = node
        self._executor = executor
        self._type = action_type
        self._active: _Goal | None = None
        self._last_feedback = float('-inf')
        self._server = ActionServer(
            node, action_type, f'{node.get_name()}/follow_joint_trajectory',
            execute_callback=self._execute, goal_callback=self._on_goal,
            handle_accepted_callback=self._on_accepted, cancel_callback=self._on_cancel)

    def destroy(self) -> None:
        """Destroy the action server."""
        self._server.destroy()

    def _now(self) -> float:
        return self._node.get_clock().now().nanoseconds * 1e-9

    def _result(self, code: int, text: str) -> Any:
        return self._type.Result(error_code=code, error_string=text)

    def _on_goal(self, goal: Any) -> GoalResponse:
        logger = self._node.get_logger()
        logger.info('Received new action goal')
        if self._executor.check(trajectory_from_msg(goal.trajectory), self._now()):
            return GoalResponse.REJECT
        logger.info('Accepted new action goal')
        return GoalResponse.ACCEPT

    def _on_accepted(self, handle: Any) -> None:
        self._finish(self._result(self._type.Result.INVALID_GOAL,
                                  'Current goal cancelled due to new incoming action.'), 'abort')
        number = self._executor.accept(trajectory_from_msg(handle.request.trajectory))
        self._active = _Goal(handle, number)
        handle.execute()

    def _on_cancel(self, handle: Any) -> CancelResponse:
        logger = self._node.get_logger()
        logger.info('Got request to cancel goal')
        if self._active is not None and self._active.handle is handle:
            logger.info('Canceling active action goal because cancel callback received.')
            self._executor.hold()
        return CancelResponse.ACCEPT

    async def _execute(self, handle: Any) -> Any:
        goal = self._active
        if goal is None or goal.handle is not handle:
            return self._result(self._type.Result.INVALID_GOAL, 'goal is no longer active')
        return await goal.done

    def _finish(self, result: Any, how: str) -> None:
        goal, self._active = self._active, None
        if goal is None:
            return
        if goal.handle.is_active:
            getattr(goal.handle, {'succeed': 'succeed', 'abort': 'abort',
                                  'cancel': 'canceled'}[how])()
        goal.done.set_result(result)

    def after_update(self, now: float) -> None:
        """Publish feedback and settle the active goal; call after every controller update."""
        goal = self._active
        if goal is None:
            return
        if goal.handle.is_cancel_requested:
            self._finish(self._result(self._type.Result.SUCCESSFUL, ''), 'cancel')
            return
        executor = self._executor
        if now - self._last_feedback >= 1.0 / executor.params.action_monitor_rate:
            self._last_feedback = now
            feedback = self._type.Feedback(joint_names=list(executor.joints))
            feedback.header.stamp = self._node.get_clock().now().to_msg()
            if executor.command is not None and executor.measured is not None:
                feedback.desired = JointTrajectoryPoint(positions=executor.command.tolist())
                feedback.actual = JointTrajectoryPoint(positions=executor.measured.tolist())
            goal.handle.publish_feedback(feedback)
        if executor.running >= goal.number and not executor.before_last_point:
            self._node.get_logger().info('Goal reached, success!')
            executor.succeed()
            self._finish(self._result(self._type.Result.SUCCESSFUL, 'Goal successfully reached!'),
                         'succeed')
