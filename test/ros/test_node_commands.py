"""Model actions to joint targets and JointTrajectory messages (no node, no ROS graph)."""

import math

from builtin_interfaces.msg import Duration
import pytest
from sequence_ai_ros.node.arm_output import (
    hold_trajectory,
    plan_trajectory,
    stream_trajectory,
)
from sequence_ai_ros.node.commands import (
    Command,
    CommandMapper,
    supported_action_space,
    UnsupportedActionSpace,
)
from sequence_ai_ros.sim.arm import JOINT_NAMES as SIM_JOINTS
from sequence_ai_ros.sim.messages import trajectory_from_msg

START = (0.1, -0.2, 0.3, -1.5, 0.0, 1.2, 0.7, 0.25)  # 7 joints + gripper
DT = 1 / 15


def mapper(space, joints=7, gripper=True, start=START):
    m = CommandMapper(space, joints, gripper)
    m.reset(start)
    return m


def close(a, b, tol=1e-12):
    assert len(a) == len(b), (a, b)
    assert all(math.isclose(x, y, rel_tol=0.0, abs_tol=tol) for x, y in zip(a, b)), (a, b)


@pytest.mark.parametrize('space', ['joint_absolute', 'joint_position', 'joint_pos',
                                   'JOINT_POSITION', 'joint_delta', 'joint_velocity'])
def test_joint_spaces_are_supported(space):
    assert supported_action_space(space)
    CommandMapper(space, 7, True)


@pytest.mark.parametrize('space', ['ee_absolute', 'ee_delta', 'ee_velocity', 'cartesian_position',
                                   'joint_torque', 'joint_position_delta', '', None, 'velocity'])
def test_other_spaces_are_unsupported_and_raise(space):
    assert not supported_action_space(space)
    with pytest.raises(UnsupportedActionSpace) as info:
        CommandMapper(space, 7, True)
    assert repr(space) in str(info.value)
    assert 'joint_velocity' in str(info.value)  # says what is supported
    assert isinstance(info.value, ValueError)


def test_expected_dim_counts_the_gripper():
    assert CommandMapper('joint_velocity', 7, True).expected_dim == 8
    assert CommandMapper('joint_velocity', 6, False).expected_dim == 6
    with pytest.raises(ValueError):
        CommandMapper('joint_velocity', 0, False)


def test_velocity_integrates_v_times_dt_over_steps():
    m = mapper('joint_velocity')
    v = (0.3, -0.15, 0.0, 0.6, -0.45, 0.15, 0.9)
    for k in range(1, 6):
        cmd = m.command([*v, 0.25], DT)
        close(cmd.positions[:7], [p + k * x * DT for p, x in zip(START, v)], 1e-12)
        close(cmd.velocities[:7], v)
    assert m.last_target == cmd.positions


def test_delta_accumulates_and_velocity_is_delta_over_dt():
    m = mapper('joint_delta')
    deltas = [(0.01 * (k + 1),) * 7 for k in range(4)]
    expected = list(START[:7])
    for d in deltas:
        cmd = m.command([*d, 0.25], DT)
        expected = [e + x for e, x in zip(expected, d)]
        close(cmd.positions[:7], expected)
        close(cmd.velocities[:7], [x / DT for x in d], 1e-9)
    close(cmd.positions[:7], [s + 0.1 for s in START[:7]])


def test_absolute_targets_are_the_action_and_velocities_finite_differences():
    m = mapper('joint_absolute')
    first = [s + 0.05 for s in START[:7]]
    second = [s - 0.02 for s in START[:7]]
    cmd = m.command([*first, 0.25], DT)
    close(cmd.positions[:7], first)
    close(cmd.velocities[:7], [0.05 / DT] * 7, 1e-9)
    cmd = m.command([*second, 0.25], 0.1)
    close(cmd.positions[:7], second)
    close(cmd.velocities[:7], [-0.07 / 0.1] * 7, 1e-9)


@pytest.mark.parametrize('space', ['joint_absolute', 'joint_delta', 'joint_velocity'])
def test_gripper_is_absolute_in_every_space(space):
    m = mapper(space)
    zeros = [0.0] * 7 if space != 'joint_absolute' else list(START[:7])
    cmd = m.command([*zeros, 0.85], 0.1)
    assert cmd.positions[7] == 0.85
    assert math.isclose(cmd.velocities[7], (0.85 - 0.25) / 0.1)
    cmd = m.command([*zeros, 0.85], 0.1)
    assert cmd.positions[7] == 0.85  # not accumulated like a delta
    assert cmd.velocities[7] == 0.0


def test_without_gripper_the_action_is_only_joints():
    m = mapper('joint_delta', joints=3, gripper=False, start=(0.0, 1.0, 2.0))
    cmd = m.command([0.1, 0.1, 0.1], 0.5)
    close(cmd.positions, (0.1, 1.1, 2.1))
    close(cmd.velocities, (0.2, 0.2, 0.2))
    with pytest.raises(ValueError, match='expected 3'):
        m.command([0.1, 0.1, 0.1, 0.5], 0.5)


def test_hold_stops_and_becomes_the_new_origin():
    m = mapper('joint_velocity')
    for _ in range(3):
        m.command([1.0] * 7 + [0.25], DT)
    measured = (0.5,) * 7 + (0.3,)
    held = m.hold(measured)
    assert held == Command(measured, (0.0,) * 8)
    cmd = m.command([0.3] * 7 + [0.3], 0.1)
    close(cmd.positions[:7], [0.5 + 0.03] * 7)  # from the held position, not the old target


def test_reset_sets_the_origin_for_delta():
    m = mapper('joint_delta')
    m.command([0.2] * 7 + [0.0], DT)
    m.reset([0.0] * 8)
    close(m.command([0.01] * 7 + [0.0], DT).positions, [0.01] * 7 + [0.0])


def test_command_before_reset_raises():
    m = CommandMapper('joint_velocity', 7, True)
    assert m.last_target is None
    with pytest.raises(ValueError, match='reset'):
        m.command([0.0] * 8, DT)


@pytest.mark.parametrize('length', [0, 7, 9])
def test_wrong_lengths_raise(length):
    m = mapper('joint_velocity')
    with pytest.raises(ValueError, match='expected 8'):
        m.command([0.0] * length, DT)
    with pytest.raises(ValueError, match='expected 8'):
        m.reset([0.0] * length)
    with pytest.raises(ValueError, match='expected 8'):
        m.hold([0.0] * length)
    assert m.last_target == START  # a rejected call changes nothing


@pytest.mark.parametrize('dt', [0.0, -0.1, math.nan, math.inf])
def test_bad_dt_raises(dt):
    with pytest.raises(ValueError, match='dt_s'):
        mapper('joint_velocity').command([0.0] * 8, dt)


def test_non_finite_measured_positions_raise():
    with pytest.raises(ValueError, match='finite'):
        mapper('joint_velocity').hold([math.nan] + [0.0] * 7)


def test_non_finite_action_passes_through_for_the_safety_check():
    cmd = mapper('joint_absolute').command([math.nan] + [0.0] * 7, DT)
    assert math.isnan(cmd.positions[0])


@pytest.mark.parametrize('seconds, sec, nanosec', [
    (0.0666, 0, 66_600_000),
    (0.0, 0, 0),
    (1 / 15, 0, 66_666_667),
    (1.5, 1, 500_000_000),
    (2.9999999999, 3, 0),  # rounds up to a whole second, never nanosec == 1e9
    (12.000000001, 12, 1),
])
def test_duration_is_split_into_sec_and_nanosec(seconds, sec, nanosec):
    msg = stream_trajectory(['a'], (0.0,), seconds)
    assert msg.points[0].time_from_start == Duration(sec=sec, nanosec=nanosec)


def test_stream_and_hold_message_fields():
    stream = stream_trajectory(('j1', 'j2', 'grip'), (0.1, 0.2, 0.8), 0.1)
    assert stream.header.stamp.sec == 0 and stream.header.stamp.nanosec == 0
    assert list(stream.joint_names) == ['j1', 'j2', 'grip']
    assert len(stream.points) == 1
    assert list(stream.points[0].positions) == [0.1, 0.2, 0.8]
    assert list(stream.points[0].velocities) == [], 'a moving point carries no velocity'
    assert list(stream.points[0].accelerations) == []
    hold = hold_trajectory(('j1', 'j2'), (0.1, 0.2), 0.1)
    assert list(hold.points[0].velocities) == [0.0, 0.0]


def test_a_plan_is_timed_per_step_and_ends_at_rest():
    steps = [Command((0.1 * k, 0.2), (1.0, -1.0)) for k in range(1, 4)]
    msg = plan_trajectory(('j1', 'j2'), steps, 2, 0.1)
    times = [p.time_from_start.nanosec for p in msg.points]
    assert times == [100_000_000, 200_000_000, 300_000_000]
    assert [list(p.velocities) for p in msg.points] == [[1.0, -1.0], [1.0, -1.0], [0.0, 0.0]]
    assert list(msg.points[2].positions) == [0.30000000000000004, 0.2]
    with pytest.raises(ValueError):
        plan_trajectory(('j1', 'j2'), [], 2, 0.1)


def test_messages_reject_mismatched_names_and_bad_times():
    with pytest.raises(ValueError):
        stream_trajectory(['j1'], (0.1, 0.2), 0.1)
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(ValueError):
            stream_trajectory(['j1', 'j2'], (0.1, 0.2), bad)


def test_message_is_accepted_by_the_simulated_arm():
    m = CommandMapper('joint_velocity', len(SIM_JOINTS) - 1, True)
    m.reset([0.0] * len(SIM_JOINTS))
    cmd = m.command([0.15] * (len(SIM_JOINTS) - 1) + [0.04], DT)
    trajectory = trajectory_from_msg(stream_trajectory(SIM_JOINTS, cmd.positions, DT), SIM_JOINTS)
    assert math.isclose(trajectory.times[0], 0.0666667, abs_tol=1e-6)
    close(trajectory.positions[0], cmd.positions)
