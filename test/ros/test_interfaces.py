"""
The generated control_msgs: upstream's fields, and action goals that cross process boundaries.

`make venv` builds test/interfaces/control_msgs into each venv (scripts/build_interfaces.py).
Its fields must be ros-controls' control_msgs fields, name for name and type for type, so that
what the node sends a real controller is what the tests exercised. The round trip serves each
action from a child process, as the sim arm and the demo's processes do: the child must find
the generated package and its libraries with nothing but the venv's own start-up.
"""

import os
import subprocess
import sys
import textwrap
import time

from fixtures_rclpy import *  # noqa: F401,F403  (context)
import pytest
from ros2_tools import CONTROL_MSGS_MISSING

action = pytest.importorskip('control_msgs.action', reason=CONTROL_MSGS_MISSING)
msg = pytest.importorskip('control_msgs.msg', reason=CONTROL_MSGS_MISSING)

# The servers' namespace: another run of this file on the same ROS domain has its own.
NAMESPACE = f'/interfaces_{os.getpid()}'
POINT = 'trajectory_msgs/JointTrajectoryPoint'
MULTI_POINT = 'trajectory_msgs/MultiDOFJointTrajectoryPoint'
# ros-controls/control_msgs: each type's fields in order, as rosidl spells their types (Kilted's
# 6.3 and later also give FollowJointTrajectory's feedback the index of the point being
# executed, which the project neither sends nor reads: see the .action file).
FIELDS = {
    msg.GripperCommand: {'position': 'double', 'max_effort': 'double'},
    msg.JointTolerance: {'name': 'string', 'position': 'double', 'velocity': 'double',
                         'acceleration': 'double'},
    msg.JointComponentTolerance: {'joint_name': 'string', 'component': 'uint16',
                                  'position': 'double', 'velocity': 'double',
                                  'acceleration': 'double'},
    action.GripperCommand.Goal: {'command': 'control_msgs/GripperCommand'},
    action.GripperCommand.Result: {'position': 'double', 'effort': 'double',
                                   'stalled': 'boolean', 'reached_goal': 'boolean'},
    action.GripperCommand.Feedback: {'position': 'double', 'effort': 'double',
                                     'stalled': 'boolean', 'reached_goal': 'boolean'},
    action.ParallelGripperCommand.Goal: {'command': 'sensor_msgs/JointState'},
    action.ParallelGripperCommand.Result: {'state': 'sensor_msgs/JointState',
                                           'stalled': 'boolean', 'reached_goal': 'boolean'},
    action.ParallelGripperCommand.Feedback: {'state': 'sensor_msgs/JointState'},
    action.FollowJointTrajectory.Goal: {
        'trajectory': 'trajectory_msgs/JointTrajectory',
        'multi_dof_trajectory': 'trajectory_msgs/MultiDOFJointTrajectory',
        'path_tolerance': 'sequence<control_msgs/JointTolerance>',
        'component_path_tolerance': 'sequence<control_msgs/JointComponentTolerance>',
        'goal_tolerance': 'sequence<control_msgs/JointTolerance>',
        'component_goal_tolerance': 'sequence<control_msgs/JointComponentTolerance>',
        'goal_time_tolerance': 'builtin_interfaces/Duration'},
    action.FollowJointTrajectory.Result: {'error_code': 'int32', 'error_string': 'string'},
    action.FollowJointTrajectory.Feedback: {
        'header': 'std_msgs/Header', 'joint_names': 'sequence<string>', 'desired': POINT,
        'actual': POINT, 'error': POINT, 'multi_dof_joint_names': 'sequence<string>',
        'multi_dof_desired': MULTI_POINT, 'multi_dof_actual': MULTI_POINT,
        'multi_dof_error': MULTI_POINT},
}
CONSTANTS = {
    action.FollowJointTrajectory.Result: {
        'SUCCESSFUL': 0, 'INVALID_GOAL': -1, 'INVALID_JOINTS': -2, 'OLD_HEADER_TIMESTAMP': -3,
        'PATH_TOLERANCE_VIOLATED': -4, 'GOAL_TOLERANCE_VIOLATED': -5},
    msg.JointComponentTolerance: {'X_AXIS': 1, 'Y_AXIS': 2, 'Z_AXIS': 3, 'TRANSLATION': 4,
                                  'ROTATION': 5},
}

# A child process serving each action in the namespace argv[1]: it echoes the goal into the
# result and one feedback.
SERVER = textwrap.dedent("""
    import sys

    import rclpy
    from rclpy.action import ActionServer
    from control_msgs.action import (
        FollowJointTrajectory, GripperCommand, ParallelGripperCommand)

    def gripper(handle):
        handle.publish_feedback(GripperCommand.Feedback(position=0.5))
        handle.succeed()
        command = handle.request.command
        return GripperCommand.Result(position=command.position, effort=command.max_effort,
                                     reached_goal=True)

    def parallel(handle):
        state = handle.request.command
        handle.publish_feedback(ParallelGripperCommand.Feedback(state=state))
        handle.succeed()
        return ParallelGripperCommand.Result(state=state, stalled=True)

    def trajectory(handle):
        names = list(handle.request.trajectory.joint_names)
        handle.publish_feedback(FollowJointTrajectory.Feedback(joint_names=names))
        handle.abort()
        return FollowJointTrajectory.Result(
            error_code=FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED,
            error_string=','.join(names))

    rclpy.init()
    node = rclpy.create_node('interfaces_server', namespace=sys.argv[1])
    servers = [ActionServer(node, GripperCommand, 'gripper', gripper),
               ActionServer(node, ParallelGripperCommand, 'parallel', parallel),
               ActionServer(node, FollowJointTrajectory, 'trajectory', trajectory)]
    print('serving', flush=True)
    rclpy.spin(node)
""")


@pytest.mark.parametrize('kind', list(FIELDS), ids=lambda kind: kind.__qualname__)
def test_the_fields_are_upstreams(kind):
    assert kind.get_fields_and_field_types() == FIELDS[kind]


@pytest.mark.parametrize('kind', list(CONSTANTS), ids=lambda kind: kind.__qualname__)
def test_the_constants_are_upstreams(kind):
    for name, value in CONSTANTS[kind].items():
        assert getattr(kind, name) == value, name


@pytest.fixture(scope='module')
def server():
    """Start the child serving the three actions; yield it, stopped after the module."""
    child = subprocess.Popen([sys.executable, '-c', SERVER, NAMESPACE], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in child.stdout:  # DDS may warn first; EOF if the child dies
        seen.append(line)
        if line.strip() == 'serving':
            break
    else:
        child.wait(10)
        pytest.fail(f'the action server child did not start: {"".join(seen)}')
    yield child
    child.kill()  # its own shutdown is not under test
    child.wait(10)


@pytest.fixture(scope='module')
def node(server, context):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    node = rclpy.create_node('interfaces_client', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    yield node, executor
    executor.shutdown()
    node.destroy_node()


def send(node, kind, name, goal, timeout_s=60.0):
    """Send `goal` to the child's `name` server; return (feedbacks, status, result)."""
    from rclpy.action import ActionClient
    ros_node, executor = node
    client = ActionClient(ros_node, kind, f'{NAMESPACE}/{name}')
    feedbacks = []
    try:
        deadline = time.monotonic() + timeout_s
        while not client.server_is_ready():
            assert time.monotonic() < deadline, f'no {name} server'
            executor.spin_once(timeout_sec=0.1)
        sent = client.send_goal_async(goal, feedback_callback=lambda m: feedbacks.append(m))
        executor.spin_until_future_complete(sent, timeout_sec=timeout_s)
        handle = sent.result()
        assert handle is not None and handle.accepted, name
        done = handle.get_result_async()
        executor.spin_until_future_complete(done, timeout_sec=timeout_s)
        reply = done.result()
        assert reply is not None, f'no result from {name}'
        return [m.feedback for m in feedbacks], reply.status, reply.result
    finally:
        client.destroy()


def test_a_gripper_command_goal_round_trips(node):
    from action_msgs.msg import GoalStatus
    goal = action.GripperCommand.Goal()
    goal.command.position, goal.command.max_effort = 0.031, 25.0
    feedbacks, status, result = send(node, action.GripperCommand, 'gripper', goal)
    assert status == GoalStatus.STATUS_SUCCEEDED
    assert (result.position, result.effort, result.reached_goal) == (0.031, 25.0, True)
    assert [f.position for f in feedbacks] in ([], [0.5])  # feedback is best effort


def test_a_parallel_gripper_command_goal_round_trips(node):
    from action_msgs.msg import GoalStatus
    goal = action.ParallelGripperCommand.Goal()
    goal.command.name, goal.command.position = ['panda_finger_joint1'], [0.02]
    goal.command.effort = [40.0]
    _, status, result = send(node, action.ParallelGripperCommand, 'parallel', goal)
    assert status == GoalStatus.STATUS_SUCCEEDED
    assert list(result.state.name) == ['panda_finger_joint1']
    assert list(result.state.position) == [0.02] and list(result.state.effort) == [40.0]
    assert result.stalled and not result.reached_goal


def test_a_follow_joint_trajectory_goal_round_trips(node):
    from action_msgs.msg import GoalStatus
    goal = action.FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = ['panda_joint1', 'panda_joint2']
    goal.path_tolerance = [msg.JointTolerance(name='panda_joint1', position=0.1)]
    _, status, result = send(node, action.FollowJointTrajectory, 'trajectory', goal)
    assert status == GoalStatus.STATUS_ABORTED
    assert result.error_code == action.FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
    assert result.error_string == 'panda_joint1,panda_joint2'
