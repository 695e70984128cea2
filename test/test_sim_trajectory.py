"""The simulated arm's trajectory executor and servo, with injected time (no ROS, no sleeping)."""

import math

from builtin_interfaces.msg import Duration, Time
import numpy as np
import pytest
from sequence_ai_ros import arm_model
from sequence_ai_ros.sim.arm import GRIPPER_VELOCITY_LIMIT, initial_state, JOINT_NAMES, SimArm
from sequence_ai_ros.sim.messages import trajectory_from_msg
from sequence_ai_ros.sim.trajectory import (
    make_trajectory,
    TrajectoryError,
    TrajectoryExecutor,
)
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

Q0 = initial_state(arm_model.HOME)
ZERO = np.zeros(len(JOINT_NAMES))
J1, J3, J4, GRIP = 'panda_joint1', 'panda_joint3', 'panda_joint4', arm_model.GRIPPER_JOINT


def traj(names, times, positions, velocities=(), start_time=0.0):
    return make_trajectory(JOINT_NAMES, names, times, positions, velocities,
                           start_time=start_time)


def started(trajectory, now=10.0, q=Q0, v=ZERO):
    executor = TrajectoryExecutor(JOINT_NAMES)
    executor.set_trajectory(trajectory, now, q, v)
    return executor


def run(arm, executor, t0, t1, dt=0.01):
    """Step the arm from t0 to t1; returns the positions after each step."""
    history = []
    for k in range(1, round((t1 - t0) / dt) + 1):
        arm.step(executor.sample(t0 + k * dt), dt)
        history.append(arm.position.copy())
    return np.array(history)


def test_single_point_is_reached_linearly_from_the_state_at_receipt_then_held():
    executor = started(traj([J1], [2.0], [[1.0]]))
    assert executor.sample(10.0)[0] == pytest.approx(Q0[0])
    assert executor.sample(11.0)[0] == pytest.approx(0.5)
    assert executor.sample(11.5)[0] == pytest.approx(0.75)
    assert executor.sample(12.0)[0] == pytest.approx(1.0)
    assert executor.sample(30.0)[0] == pytest.approx(1.0)
    np.testing.assert_allclose(executor.sample(11.0)[1:], Q0[1:])


def test_points_without_velocities_are_joined_linearly():
    executor = started(traj([J1], [1.0, 3.0], [[0.2], [1.2]]))
    assert executor.sample(11.0)[0] == pytest.approx(0.2)
    assert executor.sample(11.5)[0] == pytest.approx(0.45)
    assert executor.sample(12.0)[0] == pytest.approx(0.7)


def test_points_with_velocities_use_cubic_hermite():
    executor = started(traj([J1], [1.0, 2.0], [[0.0], [1.0]], [[0.0], [0.0]]))
    # Smoothstep 3s^2 - 2s^3 at s = 0.25, where linear would give 0.25.
    assert executor.sample(11.25)[0] == pytest.approx(0.15625)
    assert executor.sample(11.5)[0] == pytest.approx(0.5)

    executor = started(traj([J1], [1.0, 2.0], [[0.0], [1.0]], [[0.5], [2.0]]))
    h = 1e-6
    slope_start = (executor.sample(11.0 + h)[0] - executor.sample(11.0)[0]) / h
    slope_end = (executor.sample(12.0)[0] - executor.sample(12.0 - h)[0]) / h
    assert slope_start == pytest.approx(0.5, abs=1e-3)
    assert slope_end == pytest.approx(2.0, abs=1e-3)


def test_segment_before_first_point_starts_from_current_velocity_when_velocities_given():
    executor = started(traj([J1], [1.0], [[1.0]], [[0.0]]), q=np.r_[0.0, Q0[1:]],
                       v=np.r_[1.0, ZERO[1:]])
    h = 1e-6
    assert (executor.sample(10.0 + h)[0] - executor.sample(10.0)[0]) / h == pytest.approx(
        1.0, abs=1e-3)


def test_new_trajectory_takes_over_at_once_from_the_current_state():
    arm = SimArm(Q0)
    executor = started(traj([J1], [2.0], [[1.0]]), q=arm.position, v=arm.velocity)
    run(arm, executor, 10.0, 11.0)
    at_switch = arm.position.copy()
    assert at_switch[0] == pytest.approx(0.5, abs=0.01)

    executor.set_trajectory(traj([J1], [1.0], [[-0.5]]), 11.0, arm.position, arm.velocity)
    assert executor.sample(11.0)[0] == pytest.approx(at_switch[0])
    history = run(arm, executor, 11.0, 12.0)
    assert history[0, 0] < at_switch[0]  # reversed on the very next tick, not after 1.0
    assert history[49, 0] == pytest.approx((at_switch[0] - 0.5) / 2, abs=0.02)
    assert arm.position[0] == pytest.approx(-0.5)


def test_motion_respects_velocity_and_position_limits():
    arm = SimArm(Q0)
    goal = np.r_[2.0, Q0[1:3], 0.5, Q0[4:7], 1.0]  # joint 4's upper limit is -0.0698
    executor = started(traj(JOINT_NAMES, [0.1], [goal]), q=arm.position, v=arm.velocity)
    history = run(arm, executor, 10.0, 12.0)
    steps = np.abs(np.diff(np.vstack([Q0, history]), axis=0))
    limits = np.append(arm_model.VELOCITY_LIMITS, GRIPPER_VELOCITY_LIMIT) * 0.01
    assert np.all(steps <= limits + 1e-12)
    assert history[9, 0] == pytest.approx(arm_model.VELOCITY_LIMITS[0] * 0.1)
    assert arm.position[0] == pytest.approx(2.0)
    assert arm.position[3] == pytest.approx(arm_model.UPPER_LIMITS[3])
    assert arm.position[7] == pytest.approx(1.0)
    assert np.all(np.abs(arm.velocity) <= limits / 0.01 + 1e-9)


def test_time_scale_divides_the_velocity_limits():
    arm = SimArm(Q0, time_scale=0.5)
    arm.step(np.r_[Q0[0] + 1.0, Q0[1:]], 0.01)
    assert arm.position[0] - Q0[0] == pytest.approx(2 * arm_model.VELOCITY_LIMITS[0] * 0.01)
    assert arm.velocity[0] == pytest.approx(2 * arm_model.VELOCITY_LIMITS[0])


def test_subset_of_joints_in_any_order_is_mapped_by_name():
    executor = started(traj([GRIP, J3, J1], [1.0], [[0.8, 0.3, -0.2]]))
    desired = executor.sample(11.0)
    assert desired[7] == pytest.approx(0.8)
    assert desired[2] == pytest.approx(0.3)
    assert desired[0] == pytest.approx(-0.2)
    untouched = [1, 3, 4, 5, 6]
    np.testing.assert_allclose(desired[untouched], Q0[untouched])


@pytest.mark.parametrize('names, times, positions, velocities', [
    (['elbow'], [1.0], [[0.1]], ()),
    ([J1, J1], [1.0], [[0.1, 0.2]], ()),
    ([J1, J3], [1.0], [[0.1]], ()),
    ([J1], [1.0, 2.0], [[0.1]], ()),
    ([J1], [1.0], [[math.nan]], ()),
    ([J1], [1.0], [[0.1]], [[math.inf]]),
    ([J1], [math.inf], [[0.1]], ()),
    ([J1], [1.0, 1.0], [[0.1], [0.2]], ()),
    ([J1], [-1.0], [[0.1]], ()),
    ([J1], [1.0, 2.0], [[0.1], [0.2]], [[0.0], []]),
    ([J1], [1.0], [[]], ()),
])
def test_bad_trajectories_are_rejected(names, times, positions, velocities):
    with pytest.raises(TrajectoryError):
        traj(names, times, positions, velocities)


def test_rejected_message_leaves_the_motion_unchanged():
    executor = started(traj([J1], [2.0], [[1.0]]))
    before = executor.sample(11.0)
    bad = JointTrajectory(joint_names=[J1, 'gripper'], points=[
        JointTrajectoryPoint(positions=[0.0, 0.0], time_from_start=Duration(sec=1))])
    with pytest.raises(TrajectoryError):
        trajectory_from_msg(bad, JOINT_NAMES)
    ended = traj([J1], [1.0], [[-1.0]], start_time=5.0)
    with pytest.raises(TrajectoryError):
        executor.set_trajectory(ended, 10.5, Q0, ZERO)
    np.testing.assert_allclose(executor.sample(11.0), before)


def test_message_conversion_reads_stamp_durations_and_fields():
    msg = JointTrajectory(joint_names=[J4, J1])
    msg.header.stamp = Time(sec=12, nanosec=500_000_000)
    msg.points = [JointTrajectoryPoint(positions=[-1.0, 0.25], velocities=[0.0, 0.1],
                                       time_from_start=Duration(sec=0, nanosec=250_000_000))]
    trajectory = trajectory_from_msg(msg, JOINT_NAMES)
    assert trajectory.start_time == pytest.approx(12.5)
    assert trajectory.times.tolist() == pytest.approx([0.25])
    assert trajectory.indices.tolist() == [3, 0]
    np.testing.assert_allclose(trajectory.velocities, [[0.0, 0.1]])


def test_empty_trajectory_stops_and_the_arm_holds():
    arm = SimArm(Q0)
    executor = started(traj([J1], [2.0], [[1.0]]), q=arm.position, v=arm.velocity)
    run(arm, executor, 10.0, 10.5)
    executor.set_trajectory(traj([J1], [], []), 10.5, arm.position, arm.velocity)
    assert not executor.active
    held = arm.position.copy()
    run(arm, executor, 10.5, 11.5)
    np.testing.assert_array_equal(arm.position, held)
    assert not np.any(arm.velocity)
    assert held[0] == pytest.approx(0.25, abs=0.02)


def test_future_start_stamp_delays_the_points():
    executor = started(traj([J1], [1.0], [[1.0]], start_time=12.0), now=10.0)
    # JTC stretches the approach from the receipt (t=10) to the point's due time (t=13).
    assert executor.sample(11.0)[0] == pytest.approx(1.0 / 3)
    assert executor.sample(12.5)[0] == pytest.approx(5.0 / 6)
    assert executor.sample(12.99)[0] < 1.0
    assert executor.sample(13.0)[0] == pytest.approx(1.0)


def test_past_start_stamp_joins_the_trajectory_where_it_is_now():
    executor = started(traj([J1], [1.0, 3.0], [[0.0], [1.0]], start_time=9.0), now=10.5)
    assert executor.sample(10.5)[0] == pytest.approx(0.25)
    assert executor.sample(11.0)[0] == pytest.approx(0.5)
