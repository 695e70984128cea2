"""
The simulated parallel_gripper_action_controller node: ParallelGripperCommand over DDS.

Rules and citations: sequence_ai_ros/sim/gripper_rules.py and test_sim_parallel_gripper_rules.py
(ros-controls/ros2_controllers, parallel_gripper_controller @ 89446c8f). The finger is
test_sim_gripper_action's servo, stepped by that module's hardware thread.
"""

from action_msgs.msg import GoalStatus
import pytest
from ros.test_sim_gripper_action import (
    CLOSED,
    controllers_with_clients,
    Finger,
    hardware,
    JOINT,
    needs_parallel_gripper,
    OPEN,
    ParallelGripperCommand,
    parameter_values,
    result_of,
)
from ros_harness import wait_until
from sequence_ai_ros.sim.gripper_action import PARALLEL_TYPE

pytestmark = needs_parallel_gripper


@pytest.fixture
def gripper(ros):
    yield from controllers_with_clients(ros, ParallelGripperCommand, 'parallel_gripper',
                                        type=PARALLEL_TYPE)


def send(client, positions, names=(JOINT,), efforts=()):
    goal = ParallelGripperCommand.Goal()
    goal.command.name = list(names)
    goal.command.position = [float(p) for p in positions]
    goal.command.effort = [float(e) for e in efforts]
    future = client.send_goal_async(goal)
    assert wait_until(future.done, 10)
    return future.result()


def test_a_goal_moves_the_finger_and_succeeds_with_a_joint_state_result(gripper):
    node, client = gripper()
    assert node.parallel and node.claimed_joints == (JOINT,)
    with hardware(node, Finger()) as finger:
        handle = send(client, [CLOSED], efforts=[15.0])
        assert handle.accepted
        answer = result_of(handle)
    assert answer.status == GoalStatus.STATUS_SUCCEEDED
    result = answer.result
    assert result.reached_goal and not result.stalled
    assert len(result.state.position) == 1 and abs(result.state.position[0] - CLOSED) < 0.01
    assert list(result.state.effort) == [0.0]  # upstream's never-assigned computed_command_
    assert finger.position < 0.01


def test_the_goals_joint_name_is_not_read(gripper):
    # goal_callback checks only the number of positions.
    node, client = gripper()
    with hardware(node, Finger()) as finger:
        answer = result_of(send(client, [0.03], names=('some_other_joint',)))
    assert answer.status == GoalStatus.STATUS_SUCCEEDED and abs(finger.position - 0.03) < 0.01


@pytest.mark.parametrize('positions', [[], [0.0, 0.0]], ids=['none', 'two'])
def test_a_goal_without_exactly_one_position_is_rejected_in_upstreams_words(
        gripper, capfd, positions):
    node, client = gripper()
    with hardware(node, Finger()) as finger:
        assert not send(client, positions).accepted
    assert finger.position == OPEN
    assert ('Received action goal with wrong number of position values, expects 1, got '
            f'{len(positions)}') in capfd.readouterr().err


def test_a_goal_beyond_the_travel_aborts_stalled_at_the_travels_end(gripper):
    node, client = gripper(stall_timeout=0.3)
    with hardware(node, Finger(position=CLOSED)) as finger:
        answer = result_of(send(client, [0.08]))
    assert answer.status == GoalStatus.STATUS_ABORTED
    assert answer.result.stalled and not answer.result.reached_goal
    assert answer.result.state.position[0] == pytest.approx(OPEN) and finger.position == OPEN


def test_a_newer_goal_preempts_and_the_first_ends_canceled_with_an_empty_result(gripper):
    node, client = gripper()
    with hardware(node, Finger()) as finger:
        first = send(client, [CLOSED])
        second = send(client, [0.03])
        ended, done = result_of(first), result_of(second)
    assert (ended.status, done.status) == (GoalStatus.STATUS_CANCELED,
                                           GoalStatus.STATUS_SUCCEEDED)
    assert list(ended.result.state.position) == [] and list(ended.result.state.effort) == []
    assert abs(finger.position - 0.03) < 0.01


def test_get_parameters_answers_upstreams_parameters(ros, gripper):
    node, _ = gripper(goal_tolerance=0.002)
    names = ['type', 'joint', 'goal_tolerance', 'max_effort', 'max_velocity', 'allow_stalling',
             'stall_velocity_threshold', 'stall_timeout', 'action_monitor_rate',
             'max_effort_interface', 'max_velocity_interface', 'state_interfaces']
    values = parameter_values(ros, node, names)
    assert [v.string_value for v in values[:2]] == [PARALLEL_TYPE, JOINT]
    assert [v.double_value for v in values[2:5]] == [0.002, 10.0, 0.1]
    assert values[5].bool_value is False
    assert [v.double_value for v in values[6:9]] == [0.001, 1.0, 20.0]
    assert [v.string_value for v in values[9:11]] == ['', '']
    assert list(values[11].string_array_value) == ['position', 'velocity']
