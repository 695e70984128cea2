"""
The simulated JTC accepts what a stock joint_trajectory_controller accepts, per distro.

Upstream: ros-controls/ros2_controllers. Each test names its rule's lines as
`<path> @ <commit> (<branch>), lines A-B`, and the check by the text it logs; which
versions these are and how their branch was (or was not) established is in
sequence_ai_ros/sim/jtc_rules/__init__.py. Within one comment, later "lines" are in the
version cited first; validate_trajectory_msg is lines 1995-2140 of
joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
unverified).
"""

from dataclasses import replace
import math

import pytest
from sequence_ai_ros.sim import jtc_rules
from sequence_ai_ros.sim.jtc_rules import Point, TrajectoryMsg, validate_trajectory
from sequence_ai_ros.world import arm_model

ARM = arm_model.JOINT_NAMES
FINGER = arm_model.GRIPPER_JOINT
HOME = tuple(float(v) for v in arm_model.HOME)
ZERO = (0.0,) * 7


def params(distro='jazzy', **changes):
    base = replace(jtc_rules.defaults(distro), joints=ARM, command_interfaces=('position',),
                   state_interfaces=('position', 'velocity'))
    return replace(base, **changes)


def msg(names=ARM, points=(Point(HOME, time_from_start=1.0),), stamp=0.0):
    return TrajectoryMsg(tuple(names), tuple(points), stamp)


def test_distro_defaults_follow_each_branch():
    # allow_nonzero_velocity_at_trajectory_end: joint_trajectory_controller/CHANGELOG.rst @ no
    # commit exposed (humble), line 216 (2.24.0, #705) adds it true and line 178 (2.30.0)
    # backports only the renames of #834; doc/release_notes/Jazzy.rst @ 3a1b0db1 (branch
    # unverified), line 19, and
    # joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml @ 02aa3725
    # (branch unverified), lines 123-127: false from Jazzy on (#834).
    assert jtc_rules.defaults('humble').allow_nonzero_velocity_at_trajectory_end is True
    assert jtc_rules.defaults('jazzy').allow_nonzero_velocity_at_trajectory_end is False
    assert jtc_rules.defaults('kilted').allow_nonzero_velocity_at_trajectory_end is False
    # state_publish_rate: humble only (joint_trajectory_controller/CHANGELOG.rst @ no commit
    # exposed (humble), line 84: 2.40.0 still tunes it; its removal in Iron, #520, was not
    # found in a stored version).
    assert jtc_rules.defaults('humble').state_publish_rate == 50.0
    assert jtc_rules.defaults('jazzy').state_publish_rate is None
    for distro in jtc_rules.DISTROS:
        got = jtc_rules.defaults(distro)
        # joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml
        # @ 02aa3725 (branch unverified), lines 2-135 and 204-217; not compared per branch.
        assert got.joints == () and got.command_interfaces == () and got.cmd_timeout == 0.0
        assert not got.allow_partial_joints_goal and not got.allow_integration_in_goal_trajectories
        assert got.interpolation_method == 'splines' and got.goal_time == 0.0
        assert got.stopped_velocity_tolerance == 0.01 and got.action_monitor_rate == 20.0
    with pytest.raises(ValueError, match='humble'):
        jtc_rules.defaults('rolling')


def test_a_full_positions_only_message_is_accepted():
    # Every check of validate_trajectory_msg,
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 1995-2140, passes a full positions-only message.
    assert validate_trajectory(msg(), params(), now=100.0) is None


@pytest.mark.parametrize('distro', jtc_rules.DISTROS)
def test_the_gripper_on_the_arm_controller_is_refused(distro):
    # CHECK "Partial joint goals" comes first: 8 names for 7 joints.
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 1998-2009.
    eight = msg(ARM + (FINGER,), [Point(HOME + (0.04,), time_from_start=1.0)])
    assert validate_trajectory(eight, params(distro), 0.0) == (
        "Joints on incoming trajectory don't match the controller joints.")
    # With partial goals allowed, the unknown name is what is refused:
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2025-2038.
    assert validate_trajectory(eight, params(distro, allow_partial_joints_goal=True), 0.0) == (
        f"Incoming joint {FINGER} doesn't match the controller's joints.")


def test_partial_goals_need_allow_partial_joints_goal():
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 1998-2009; fill_partial_goal then fills the others, lines 1654-1733.
    partial = msg(ARM[:3], [Point((0.1, 0.2, 0.3), time_from_start=1.0)])
    assert validate_trajectory(partial, params(), 0.0) == (
        "Joints on incoming trajectory don't match the controller joints.")
    assert validate_trajectory(partial, params(allow_partial_joints_goal=True), 0.0) is None


def test_empty_joint_names_and_empty_points_are_refused():
    # "Empty joint names on incoming trajectory." (reached only with partial goals allowed):
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2011-2016.
    loose = params(allow_partial_joints_goal=True)
    assert validate_trajectory(msg(names=(), points=[Point((), time_from_start=1.0)]), loose,
                               0.0) == 'Empty joint names on incoming trajectory.'
    # #902 "Invalidate empty trajectory messages":
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2018-2023; humble:
    # joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble), line 147
    # (2.33.0); doc/release_notes/Jazzy.rst @ 3a1b0db1 (branch unverified), line 32.
    for distro in jtc_rules.DISTROS:
        assert validate_trajectory(msg(points=()), params(distro), 0.0) == (
            'Empty trajectory received.')


@pytest.mark.parametrize('distro, accepted', [('humble', True), ('jazzy', False),
                                              ('kilted', False)])
def test_a_moving_last_point_depends_on_the_distro_default(distro, accepted):
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2040-2054, under each distro's default (see the defaults test).
    moving = msg(points=[Point(HOME, (0.1,) + ZERO[1:], time_from_start=1.0)])
    got = validate_trajectory(moving, params(distro), 0.0)
    if accepted:
        assert got is None
    else:
        # "%.15f" of the velocity, and the joint named by its place in the message.
        assert got == ('Velocity of last trajectory point of joint panda_joint1 is not zero: '
                       '0.100000000000000')
    explicit = params(distro, allow_nonzero_velocity_at_trajectory_end=not accepted)
    assert (validate_trajectory(moving, explicit, 0.0) is None) is (not accepted)


def test_zero_means_below_float_epsilon_and_only_the_last_point_counts():
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2040-2054: only points.back() is read (line 2043), against
    # numeric_limits<float>::epsilon() (line 2045).
    tiny = (1.0e-7,) + ZERO[1:]  # below numeric_limits<float>::epsilon() = 1.19e-7
    assert validate_trajectory(msg(points=[Point(HOME, tiny, time_from_start=1.0)]), params(),
                               0.0) is None
    small = ZERO[:6] + (-2.0e-7,)
    assert validate_trajectory(msg(points=[Point(HOME, small, time_from_start=1.0)]), params(),
                               0.0) == ('Velocity of last trajectory point of joint panda_joint7 '
                                        'is not zero: -0.000000200000000')
    middle_moves = [Point(HOME, (0.5,) * 7, time_from_start=0.5),
                    Point(HOME, ZERO, time_from_start=1.0)]
    assert validate_trajectory(msg(points=middle_moves), params(), 0.0) is None


def test_a_stamped_trajectory_that_already_ended_is_refused():
    # "Received trajectory with non-zero start time (%f) that ends in the past (%f)":
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2056-2073; the end is stamp + the last point's time (#1090: humble
    # joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble), line 125;
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master,
    # 4.5.0), lines 1361-1380, still sums every point's time).
    two = [Point(HOME, time_from_start=0.5), Point(HOME, time_from_start=1.0)]
    assert validate_trajectory(msg(points=two, stamp=5.0), params(), now=6.5) == (
        'Received trajectory with non-zero start time (5.000000) that ends in the past '
        '(6.000000)')
    assert validate_trajectory(msg(points=two, stamp=5.0), params(), now=5.9) is None
    assert validate_trajectory(msg(points=two, stamp=0.0), params(), now=1e9) is None


def test_times_must_strictly_increase():
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2078-2088.
    same = [Point(HOME, time_from_start=1.0), Point(HOME, time_from_start=1.0)]
    assert validate_trajectory(msg(points=same), params(), 0.0) == (
        'Time between points 0 and 1 is not strictly increasing, it is 1.000000 and 1.000000 '
        'respectively')
    back = [Point(HOME, time_from_start=0.5), Point(HOME, time_from_start=1.5),
            Point(HOME, time_from_start=1.25)]
    assert validate_trajectory(msg(points=back), params(), 0.0) == (
        'Time between points 1 and 2 is not strictly increasing, it is 1.500000 and 1.250000 '
        'respectively')


def test_each_point_needs_positions_and_fields_of_the_right_size():
    # validate_trajectory_point_field as called from validate_trajectory_msg:
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 1976-1993 and 2121-2128: positions may not be empty, the others may.
    assert validate_trajectory(msg(points=[Point(HOME[:6], time_from_start=1.0)]), params(),
                               0.0) == ('Mismatch between joint_names size (7) and positions (6) '
                                        'at point #0.')
    no_positions = [Point(HOME, time_from_start=0.5), Point((), ZERO, time_from_start=1.0)]
    assert validate_trajectory(msg(points=no_positions), params(), 0.0) == (
        'Mismatch between joint_names size (7) and positions (0) at point #1.')
    short_velocities = [Point(HOME, ZERO[:5], time_from_start=1.0)]
    assert validate_trajectory(msg(points=short_velocities), params(), 0.0) == (
        'Mismatch between joint_names size (7) and velocities (5) at point #0.')
    short_accel = [Point(HOME, ZERO, ZERO[:2], time_from_start=1.0)]
    assert validate_trajectory(msg(points=short_accel), params(), 0.0) == (
        'Mismatch between joint_names size (7) and accelerations (2) at point #0.')
    full = [Point(HOME, ZERO, ZERO, time_from_start=1.0)]
    assert validate_trajectory(msg(points=full), params(), 0.0) is None


def test_allow_integration_in_goal_trajectories_accepts_points_without_positions():
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2095-2120 ("The given trajectory has no position, velocity, or
    # acceleration points.": 2097-2105;
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master,
    # 4.5.0), lines 1433-1452, refuses it without a message).
    integrate = params(allow_integration_in_goal_trajectories=True)
    velocity_only = [Point((), (0.1,) * 7, time_from_start=0.5),
                     Point((), ZERO, time_from_start=1.0)]
    assert validate_trajectory(msg(points=velocity_only), integrate, 0.0) is None
    assert validate_trajectory(msg(points=[Point(time_from_start=1.0)]), integrate, 0.0) == (
        'The given trajectory has no position, velocity, or acceleration points.')
    assert validate_trajectory(msg(points=[Point((), ZERO[:3], time_from_start=1.0)]), integrate,
                               0.0) == ('Mismatch between joint_names size (7) and velocities (3) '
                                        'at point #0.')


def test_effort_fields_are_refused_with_each_distros_words():
    # Humble: "Reject messages with effort fields" (#699,
    # joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble), line 215), in the
    # words of joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0
    # (master, 4.5.0), lines 1461-1467. Later, effort only on an effort command interface:
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2129-2137.
    with_effort = msg(points=[Point(HOME, effort=ZERO, time_from_start=1.0)])
    assert validate_trajectory(with_effort, params('humble'), 0.0) == (
        'Trajectories with effort fields are currently not supported.')
    for distro in ('jazzy', 'kilted'):
        assert validate_trajectory(with_effort, params(distro), 0.0) == (
            'Trajectories with effort fields are only supported for controllers using the '
            "'effort' command interface.")
        assert validate_trajectory(with_effort, params(distro), 0.0,
                                   has_effort_command_interface=True) is None


def test_the_first_failing_check_in_upstream_order_is_reported():
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified): unknown joint (lines 2025-2038) before moving last point (2040-2054) before
    # the end time (2056-2073).
    unknown_and_moving = msg(('elbow',) + ARM[1:], [Point(HOME, (1.0,) * 7, time_from_start=1)])
    assert validate_trajectory(unknown_and_moving, params(), 0.0) == (
        "Incoming joint elbow doesn't match the controller's joints.")
    moving_and_past = msg(points=[Point(HOME, (1.0,) * 7, time_from_start=1)], stamp=1.0)
    assert validate_trajectory(moving_and_past, params(), now=50.0).startswith(
        'Velocity of last trajectory point of joint panda_joint1')


def test_sim_refuses_what_upstream_would_execute_badly():
    # No finiteness check in validate_trajectory_msg, and repeated names go through
    # sort_to_local_joint_order:
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 1995-2140 and 1927-1974. Accelerations without velocities match no
    # branch of interpolate_between_points (joint_trajectory_controller/src/trajectory.cpp
    # @ 01936294 (branch unverified), lines 191-192 and 207-298).
    nan = msg(points=[Point((math.nan,) + HOME[1:], time_from_start=1.0)])
    assert validate_trajectory(nan, params(), 0.0) is None  # upstream lets a NaN through
    assert jtc_rules.sim_checks(nan) == 'sim: non-finite value at point #0'
    repeated = msg(ARM[:6] + (ARM[0],))
    assert validate_trajectory(repeated, params(), 0.0) is None
    assert jtc_rules.sim_checks(repeated).startswith('sim: repeated joint names')
    accel_only = msg(points=[Point(HOME, (), ZERO, time_from_start=0.5),
                             Point(HOME, (), ZERO, time_from_start=1.0)])
    assert validate_trajectory(accel_only, params(), 0.0) is None
    assert 'accelerations without velocities' in jtc_rules.sim_checks(accel_only)
    assert jtc_rules.sim_checks(msg()) is None


def test_cmd_timeout_must_exceed_goal_time_or_it_is_dropped():
    # on_activate: "Command timeout must be higher than goal_time tolerance (%f vs. %f)":
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 1259-1278.
    assert jtc_rules.effective_cmd_timeout(params()) == (0.0, None)
    assert jtc_rules.effective_cmd_timeout(params(cmd_timeout=0.5)) == (0.5, None)
    assert jtc_rules.effective_cmd_timeout(params(cmd_timeout=0.5, goal_time=1.0)) == (
        0.0, 'Command timeout must be higher than goal_time tolerance (0.500000 vs. 1.000000)')


def test_configuration_is_checked_like_on_configure_and_the_validators():
    # on_configure:
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 883-887 and 922-926; validators in
    # joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml @ 02aa3725
    # (branch unverified): unique<> lines 8, 22, 31, 43; one_of<> line 120; goal_time gt_eq
    # line 215.
    assert jtc_rules.check_configuration(params()) is None
    assert jtc_rules.check_configuration(params(command_interfaces=())) == (
        "'command_interfaces' parameter is empty.")
    assert jtc_rules.check_configuration(params(state_interfaces=())) == (
        "'state_interfaces' parameter is empty.")
    assert 'no duplicates' in jtc_rules.check_configuration(params(joints=ARM + (ARM[0],)))
    assert 'interpolation_method' in jtc_rules.check_configuration(
        params(interpolation_method='cubic'))
    assert jtc_rules.check_configuration(params(goal_time=-1.0)).startswith(
        "Parameter 'constraints.goal_time'")


def test_upstream_names_map_onto_the_dataclass():
    # constraints.* in
    # joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml @ 02aa3725
    # (branch unverified), lines 203-217.
    got = jtc_rules.with_values(params(), {'constraints.goal_time': 0.25,
                                           'allow_partial_joints_goal': True,
                                           'joints': ['a', 'b']})
    assert got.goal_time == 0.25 and got.allow_partial_joints_goal and got.joints == ('a', 'b')
    assert jtc_rules.ROS_NAMES['stopped_velocity_tolerance'] == (
        'constraints.stopped_velocity_tolerance')
