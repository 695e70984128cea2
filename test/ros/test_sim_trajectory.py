"""
The simulated JTC's execution and the arm's servo, with injected time (no ROS, no sleeping).

Upstream: ros-controls/ros2_controllers joint_trajectory_controller/src/trajectory.cpp
(Trajectory::sample, interpolate_between_points, deduce_from_derivatives) and
joint_trajectory_controller.cpp (update, topic_callback, fill_partial_goal,
sort_to_local_joint_order, set_hold_position, on_activate), jazzy-era source; humble's
sampling without the one-period look-ahead per its CHANGELOG (#1306 is jazzy 4.17.0).
"""

from dataclasses import replace
import math

from builtin_interfaces.msg import Duration, Time
import numpy as np
import pytest
from sequence_ai_ros.sim import jtc_rules
from sequence_ai_ros.sim.arm import initial_state, JOINT_NAMES, SimArm
from sequence_ai_ros.sim.jtc_rules import Point, TrajectoryMsg
from sequence_ai_ros.sim.messages import trajectory_from_msg
from sequence_ai_ros.sim.trajectory import TrajectoryExecutor
from sequence_ai_ros.world import arm_model
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

JOINTS = ('j1', 'j2', 'j3')
DT = 0.01
Q0 = np.array([0.0, 0.5, -0.5])
ZERO = np.zeros(3)


class Run:
    """One executor fed its own commands back as the measured state (a perfect servo)."""

    def __init__(self, distro='humble', q=Q0, **changes):
        base = replace(jtc_rules.defaults(distro), joints=JOINTS,
                       command_interfaces=('position',),
                       state_interfaces=('position', 'velocity'))
        self.logs = []
        self.ex = TrajectoryExecutor(replace(base, **changes), DT,
                                     lambda level, text: self.logs.append((level, text)))
        self.q, self.v, self.t = np.array(q, dtype=float), ZERO.copy(), 0.0
        self.measured = self.q.copy()
        self.tick()  # activation: hold where the joints are

    def send(self, names, *points, stamp=0.0):
        return self.ex.receive(TrajectoryMsg(tuple(names), tuple(points), stamp), self.t)

    def tick(self, follow=True):
        self.measured = self.q.copy()
        command = self.ex.update(self.t, self.q, self.v)
        if follow:
            self.v = (command - self.q) / DT if self.t > 0 else ZERO.copy()
            self.q = command
        self.t = round(self.t + DT, 9)
        return command

    def until(self, t_end, follow=True):
        out = []
        while self.t <= t_end + 1e-9:
            out.append((self.t, self.tick(follow)))
        return out


def pt(positions, t, velocities=(), accelerations=()):
    return Point(tuple(positions), tuple(velocities), tuple(accelerations), (), t)


def at(history, t):
    return next(c for s, c in history if abs(s - t) < 1e-9)


def test_activation_holds_the_measured_position():
    run = Run()
    np.testing.assert_allclose(run.until(0.5)[-1][1], Q0)
    assert run.ex.holding


def test_one_positions_only_point_is_reached_linearly_from_the_first_update_then_held():
    run = Run()
    assert run.send(JOINTS, pt([1.0, 0.5, -0.5], 1.0)) is None
    start = run.t  # a zero stamp starts the trajectory at the next update, not at receipt
    history = run.until(3.0)
    assert at(history, start)[0] == pytest.approx(0.0)
    assert at(history, start + 0.5)[0] == pytest.approx(0.5)
    assert at(history, start + 1.0)[0] == pytest.approx(1.0)
    assert at(history, 3.0)[0] == pytest.approx(1.0)
    np.testing.assert_allclose(at(history, start + 0.5)[1:], Q0[1:])


def test_a_first_point_at_time_zero_is_a_step_straight_to_it():
    run = Run()
    run.send(JOINTS, pt([0.3, 0.2, 0.1], 0.0))
    np.testing.assert_allclose(run.tick(), [0.3, 0.2, 0.1])


def test_jazzy_commands_the_sample_one_period_ahead_humble_the_sample_now():
    for distro, lead in (('humble', 0.0), ('jazzy', DT), ('kilted', DT)):
        run = Run(distro)
        run.send(JOINTS, pt([1.0, 0.5, -0.5], 1.0))
        start = run.t
        history = run.until(start + 0.5)
        assert at(history, start + 0.5)[0] == pytest.approx(0.5 + lead), distro


def test_a_new_message_replaces_the_running_one_from_the_current_state():
    run = Run()
    run.send(JOINTS, pt([2.0, 0.5, -0.5], 2.0))
    run.until(1.0)
    here = run.q.copy()
    assert here[0] == pytest.approx(1.0, abs=0.02)
    run.send(JOINTS, pt([-1.0, 0.5, -0.5], 1.0))
    history = run.until(3.0)
    assert history[1][1][0] < here[0]  # turned round at once, not after the old end
    assert at(history, 2.5)[0] == pytest.approx(-1.0)


def test_only_the_newest_message_before_an_update_is_executed():
    run = Run()
    run.send(JOINTS, pt([5.0, 0.5, -0.5], 0.0))
    run.send(JOINTS, pt([0.25, 0.5, -0.5], 0.0))
    assert run.tick()[0] == pytest.approx(0.25)


def test_joints_a_partial_goal_omits_hold_their_last_command():
    run = Run(allow_partial_joints_goal=True)
    run.send(JOINTS, pt([0.4, 0.6, -0.2], 0.0))
    run.until(run.t + 0.05)  # settled: the measured velocity is zero again
    run.send(['j3', 'j1'], pt([0.7, -0.3], 1.0, [0.0, 0.0]))  # any order, mapped by name
    history = run.until(2.0)
    final = history[-1][1]
    assert final[0] == pytest.approx(-0.3) and final[2] == pytest.approx(0.7)
    assert all(c[1] == pytest.approx(0.6) for _, c in history)


def test_cmd_timeout_holds_the_measured_position_after_the_last_point():
    run = Run(cmd_timeout=0.5)
    run.send(JOINTS, pt([1.0, 0.5, -0.5], 0.5))
    start = run.t
    run.until(start + 0.9, follow=False)  # the joints do not move: the arm lags behind
    assert not run.logs
    assert run.tick(follow=False)[0] == pytest.approx(1.0)
    history = run.until(start + 1.3, follow=False)
    assert run.logs == [('warn', 'Aborted due to command timeout')]
    assert run.ex.holding
    np.testing.assert_allclose(history[-1][1], Q0)  # holds where the joints really are
    assert run.send(JOINTS, pt([0.2, 0.5, -0.5], 0.0)) is None
    assert run.tick()[0] == pytest.approx(0.2)  # a new message moves it again


def test_cmd_timeout_not_above_goal_time_is_switched_off_with_upstreams_warning():
    run = Run(cmd_timeout=0.2, goal_time=0.5)
    assert run.logs == [('warn', 'Command timeout must be higher than goal_time tolerance '
                                 '(0.200000 vs. 0.500000)')]
    run.send(JOINTS, pt([1.0, 0.5, -0.5], 0.1))
    run.until(2.0, follow=False)
    assert run.tick(follow=False)[0] == pytest.approx(1.0)


def test_a_rejected_message_leaves_the_motion_unchanged_and_logs_the_reason():
    run = Run('jazzy')
    run.send(JOINTS, pt([1.0, 0.5, -0.5], 1.0))
    run.until(0.3)
    reason = run.send(JOINTS, pt([0.0, 0.0, 0.0], 1.0, [0.5, 0.0, 0.0]))
    assert reason == ('Velocity of last trajectory point of joint j1 is not zero: '
                      '0.500000000000000')
    assert run.logs == [('error', reason)]
    history = run.until(1.5)
    assert history[-1][1][0] == pytest.approx(1.0)


def test_a_stamped_trajectory_under_way_is_joined_where_it_is_now():
    run = Run()
    run.t = 11.0
    run.send(JOINTS, pt([0.0, 0.5, -0.5], 1.0), pt([1.0, 0.5, -0.5], 3.0), stamp=9.0)
    assert run.tick()[0] == pytest.approx(0.5)  # t = 11 is half way from 10.0 to 12.0


def test_a_future_stamp_stretches_the_segment_before_the_first_point():
    run = Run()
    run.t = 10.0
    run.send(JOINTS, pt([1.0, 0.5, -0.5], 1.0), stamp=12.0)
    history = run.until(13.5)
    assert at(history, 11.0)[0] == pytest.approx(1.0 / 3)  # from t = 10 to 13
    assert at(history, 12.99)[0] < 1.0
    assert at(history, 13.0)[0] == pytest.approx(1.0)


def test_positions_with_velocities_use_a_cubic_segment():
    run = Run()
    run.send(JOINTS, pt([0.0, 0.5, -0.5], 1.0, [0.0, 0.0, 0.0]),
             pt([1.0, 0.5, -0.5], 2.0, [0.0, 0.0, 0.0]))
    start = run.t
    history = run.until(start + 2.0)
    # Smoothstep 3s^2 - 2s^3 at s = 0.25, where linear would give 0.25.
    assert at(history, start + 1.25)[0] == pytest.approx(0.15625)
    assert at(history, start + 1.5)[0] == pytest.approx(0.5)


def test_the_first_segment_starts_from_the_measured_velocity_only_with_a_velocity_state():
    for interfaces, slope in ((('position', 'velocity'), 2.0), (('position',), 1.0)):
        run = Run(state_interfaces=interfaces)
        run.v = np.array([2.0, 0.0, 0.0])  # moving when the message arrives
        run.send(JOINTS, pt([1.0, 0.5, -0.5], 1.0, [0.0, 0.0, 0.0]))
        run.q = Q0.copy()
        first = run.ex.update(run.t, run.q, run.v)
        later = run.ex.update(run.t + 0.001, run.q, run.v)
        assert (later[0] - first[0]) / 0.001 == pytest.approx(slope, rel=0.02), interfaces


def test_positions_velocities_and_accelerations_use_a_quintic_segment():
    run = Run()
    a = pt([0.0, 0.5, -0.5], 1.0, [0.0] * 3, [0.0] * 3)
    b = pt([1.0, 0.5, -0.5], 2.0, [0.0] * 3, [0.0] * 3)
    run.send(JOINTS, a, b)
    start = run.t
    history = run.until(start + 2.0)
    # Minimum jerk 10s^3 - 15s^4 + 6s^5 at s = 0.25.
    assert at(history, start + 1.25)[0] == pytest.approx(10 / 64 - 15 / 256 + 6 / 1024)


def test_interpolation_method_none_forwards_the_next_waypoint():
    run = Run(interpolation_method='none')
    run.send(JOINTS, pt([0.3, 0.5, -0.5], 1.0), pt([0.9, 0.5, -0.5], 2.0))
    start = run.t
    history = run.until(start + 2.5)
    assert at(history, start + 0.5)[0] == pytest.approx(0.0)  # the state before, held
    assert at(history, start + 1.5)[0] == pytest.approx(0.9)


def test_velocity_only_points_are_integrated_when_allowed():
    run = Run(allow_integration_in_goal_trajectories=True)
    run.send(JOINTS, Point((), (1.0, 0.0, 0.0), (), (), 1.0), Point((), (0.0,) * 3, (), (), 2.0))
    history = run.until(3.0)
    assert history[-1][1][0] == pytest.approx(Q0[0] + 0.5 + 0.5)  # two trapezoids of 0.5


def test_hold_stops_at_the_last_measured_position():
    run = Run()
    run.send(JOINTS, pt([3.0, 0.5, -0.5], 3.0))
    run.until(1.0)
    measured = run.measured.copy()  # what the last update read, as state_current_ is
    assert 0.9 < measured[0] < 1.0
    run.ex.hold()
    history = run.until(2.0)
    np.testing.assert_allclose(history[-1][1], measured)
    assert run.ex.holding


def test_the_servo_respects_velocity_and_position_limits_in_real_units():
    arm = SimArm(initial_state(arm_model.HOME))
    assert arm.position[7] == pytest.approx(arm_model.FINGER_OPEN_M)  # fingers start open
    goal = np.r_[2.0, arm_model.HOME[1:3], 0.5, arm_model.HOME[4:7], 0.0]  # j4 limit -0.0698
    history = []
    for _ in range(200):
        arm.step(goal, 0.01)
        history.append(arm.position.copy())
    steps = np.abs(np.diff(np.vstack([initial_state(arm_model.HOME), history]), axis=0))
    limits = np.append(arm_model.VELOCITY_LIMITS, arm_model.FINGER_SPEED_MPS) * 0.01
    assert np.all(steps <= limits + 1e-12)
    assert history[9][0] == pytest.approx(arm_model.VELOCITY_LIMITS[0] * 0.1)
    assert history[39][7] == pytest.approx(0.04 - 0.05 * 0.4)  # 0.05 m/s per finger
    assert arm.position[3] == pytest.approx(arm_model.UPPER_LIMITS[3])
    assert arm.position[7] == pytest.approx(arm_model.FINGER_CLOSED_M)
    arm.step(np.r_[goal[:7], 0.5], 0.01)  # a finger cannot open past 0.04 m
    assert arm.position[7] <= arm_model.FINGER_OPEN_M


def test_time_scale_divides_the_velocity_limits_of_the_arm_and_the_fingers():
    arm = SimArm(arm_model.HOME, time_scale=0.5)
    arm.step(np.r_[arm_model.HOME[0] + 1.0, arm_model.HOME[1:], 0.0], 0.01)
    assert arm.position[0] - arm_model.HOME[0] == pytest.approx(
        2 * arm_model.VELOCITY_LIMITS[0] * 0.01)
    assert 0.04 - arm.position[7] == pytest.approx(2 * 0.05 * 0.01)


def test_initial_state_takes_seven_or_eight_finite_values():
    assert initial_state(list(arm_model.HOME) + [0.01])[7] == pytest.approx(0.01)
    for bad in ([0.0] * 6, [0.0] * 9, [math.nan] * 7):
        with pytest.raises(ValueError):
            initial_state(bad)


def test_message_conversion_reads_stamp_durations_and_fields():
    msg = JointTrajectory(joint_names=['panda_joint4', 'panda_joint1'])
    msg.header.stamp = Time(sec=12, nanosec=500_000_000)
    msg.points = [JointTrajectoryPoint(positions=[-1.0, 0.25], velocities=[0.0, 0.1],
                                       time_from_start=Duration(sec=0, nanosec=250_000_000))]
    got = trajectory_from_msg(msg, JOINT_NAMES)
    assert got.stamp == pytest.approx(12.5)
    assert got.times == pytest.approx((0.25,))
    assert got.joint_names == ('panda_joint4', 'panda_joint1')
    assert got.points[0].velocities == (0.0, 0.1) and got.points[0].accelerations == ()
    with pytest.raises(ValueError, match='gripper'):
        trajectory_from_msg(JointTrajectory(joint_names=['gripper']), JOINT_NAMES)


def test_success_goes_on_commanding_the_last_point_and_messages_are_numbered():
    run = Run()
    assert run.ex.check(TrajectoryMsg(JOINTS, (pt([0.4, 0.5, -0.5], 0.2),)), run.t) is None
    number = run.ex.accept(TrajectoryMsg(JOINTS, (pt([0.4, 0.5, -0.5], 0.2),)))
    run.tick()
    assert run.ex.running == number and run.ex.before_last_point
    run.until(run.t + 0.3)
    assert not run.ex.before_last_point
    run.ex.succeed()
    run.tick()
    assert run.ex.holding and run.ex.running == 0  # the controller's own hold has no number
    np.testing.assert_allclose(run.until(run.t + 0.2)[-1][1], [0.4, 0.5, -0.5])


# -- cmd_timeout at the end of an episode --------------------------------------------------------

def first_update_after(t):
    """Return the first update time (a multiple of DT) strictly after `t`."""
    return (math.floor(t / DT + 1e-9) + 1) * DT


def warned_at(run, t_end):
    """Run to `t_end` following the commands; return the time of the first WARN, or None."""
    while run.t <= t_end + 1e-9:
        t = run.t
        run.tick()
        if any(level == 'warn' for level, _ in run.logs):
            return t
    return None


@pytest.mark.parametrize('distro', ['humble', 'kilted'])
def test_the_episode_end_the_node_used_to_send_times_out_cmd_timeout_after_its_point(distro):
    """
    What the real Kilted JTC logged after every trajectory episode, at the same moment.

    The node's end-at-rest message (one point, at rest, due one 15 Hz period after receipt)
    on the topic: upstream fires cmd_timeout at the first update whose time is more than
    cmd_timeout past that point (the message starts at the update after its receipt).
    """
    from sequence_ai_ros.node.arm_output import hold_trajectory
    run = Run(distro, cmd_timeout=0.5)
    sent = run.t
    assert run.ex.receive(trajectory_from_msg(hold_trajectory(JOINTS, Q0 + 0.01, 1 / 15)),
                          sent) is None
    start = run.t  # the next update takes the message up
    at_ = warned_at(run, sent + 2.0)
    assert run.logs == [('warn', 'Aborted due to command timeout')]
    # The first update more than 0.5 s past the point (0.5667 s after the message started).
    assert at_ == pytest.approx(first_update_after(start + 1 / 15 + 0.5))
    assert run.ex.holding


@pytest.mark.parametrize('distro', ['humble', 'kilted'])
def test_an_episodes_last_message_rests_so_cmd_timeout_passes_silently(distro):
    """The node's final hold: its rest point is where cmd_timeout counts from (a day on)."""
    from sequence_ai_ros.node.arm_output import FINAL_REST_S, hold_trajectory
    run = Run(distro, cmd_timeout=0.5)
    goal = Q0 + 0.01
    final = hold_trajectory(JOINTS, goal, 1 / 15, FINAL_REST_S)
    assert run.ex.receive(trajectory_from_msg(final), run.t) is None
    assert warned_at(run, 5.0) is None and run.logs == []
    np.testing.assert_allclose(run.q, goal, atol=1e-12)  # at rest where the episode ended
    assert not run.ex.holding  # still the node's message, not the controller's own hold
    # The rule is unchanged: with a short rest it fires cmd_timeout after the rest point.
    run = Run(distro, cmd_timeout=0.5)
    run.ex.receive(trajectory_from_msg(hold_trajectory(JOINTS, goal, 1 / 15, 2.0)), run.t)
    start = run.t
    assert warned_at(run, start + 3.5) == pytest.approx(first_update_after(start + 1 / 15 + 2.5))


def test_a_goal_that_succeeded_disarms_cmd_timeout():
    """The one upstream way to end silently: set_success_trajectory_point sets holding."""
    run = Run('kilted', cmd_timeout=0.5)
    run.ex.accept(TrajectoryMsg(JOINTS, (pt([0.4, 0.5, -0.5], 0.2, [0.0] * 3),)))
    run.until(run.t + 0.3)
    assert not run.ex.before_last_point
    run.ex.succeed()
    assert warned_at(run, run.t + 2.0) is None and run.logs == []
