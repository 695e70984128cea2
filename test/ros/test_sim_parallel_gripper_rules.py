"""
The simulated parallel_gripper_action_controller's rules with injected time (no control_msgs).

Upstream: ros-controls/ros2_controllers, parallel_gripper_controller/include/
parallel_gripper_controller/parallel_gripper_action_controller_impl.hpp @ 89446c8f (the only
stored version; branch unverified) and src/parallel_gripper_action_controller_parameters.yaml
@ 6b44ba8e. The finger is test_sim_gripper_action's: a position servo on panda_finger_joint1
(0.0 closed .. 0.04 m open) at 0.05 m/s.
"""

import pytest
from ros.test_sim_gripper_action import (
    CLOSED,
    DT,
    Finger,
    JOINT,
    OPEN,
    run,
    run_until_outcome,
    SPEED,
)
from sequence_ai_ros.sim.gripper_action import (
    controller_manager_type,
    GRIPPER_COMMAND_TYPE,
    PARALLEL_TYPE,
)
from sequence_ai_ros.sim.gripper_rules import (
    ABORTED,
    CANCELED,
    check_parallel_goal,
    GripperResult,
    Outcome,
    ParallelGripperAction,
    ParallelGripperSettings,
    SUCCEEDED,
)


def started(finger, **settings):
    """Return a controller activated on `finger` at t = 0 (on_activate holds the finger)."""
    core = ParallelGripperAction(ParallelGripperSettings(JOINT, **settings))
    assert core.update(0.0, finger.position, finger.velocity) == finger.position
    return core


def test_upstreams_defaults():
    # parallel_gripper_action_controller_parameters.yaml: max_effort 10, max_velocity 0.1, the
    # rest as gripper_action_controller's.
    settings = ParallelGripperSettings(JOINT)
    assert (settings.max_effort, settings.max_velocity, settings.goal_tolerance,
            settings.stall_timeout, settings.stall_velocity_threshold,
            settings.action_monitor_rate, settings.allow_stalling) == (
        10.0, 0.1, 0.01, 1.0, 0.001, 20.0, False)
    assert settings.state_interfaces == ('position', 'velocity')
    assert settings.max_effort_interface == settings.max_velocity_interface == ''


def test_a_goal_needs_exactly_one_position_and_its_names_are_not_read():
    # goal_callback: position.size() != 1 is rejected with this text; names are never read.
    assert check_parallel_goal([0.02]) == ''
    assert check_parallel_goal([]) == (
        'Received action goal with wrong number of position values, expects 1, got 0')
    assert check_parallel_goal([0.0, 0.0]).endswith('expects 1, got 2')
    # Out of travel is accepted, as upstream; a non-finite position is the sim's refusal.
    assert check_parallel_goal([0.5]) == ''
    assert 'finite' in check_parallel_goal([float('nan')])


def test_a_goal_succeeds_within_goal_tolerance_with_an_effort_upstream_never_sets():
    # check_for_success as gripper_action_controller's; the result's effort is
    # computed_command_, never assigned upstream: the sim reports 0.
    finger = Finger()
    core = started(finger)
    core.accept_command('g1', [CLOSED], [], [25.0], 0.0)
    assert core.update(0.0, finger.position, 0.0) == CLOSED
    (outcome,), t = run_until_outcome(core, finger, 0.0)
    assert outcome.goal_id == 'g1' and outcome.status == SUCCEEDED
    assert outcome.result.reached_goal and not outcome.result.stalled
    assert 0.01 - SPEED * DT <= outcome.result.position < 0.01
    assert outcome.result.effort == 0.0
    assert t == pytest.approx((OPEN - 0.01) / SPEED, abs=2 * DT)
    run(core, finger, t, 1.0)
    assert finger.position == pytest.approx(CLOSED)  # the goal stays commanded


def test_the_goals_velocity_and_effort_count_only_with_their_interfaces():
    # accepted_callback: velocity[0] / effort[0] only if max_velocity_interface /
    # max_effort_interface name an interface, else the parameters.
    core = started(Finger(), max_effort=4.0, max_velocity=0.02)
    core.accept_command('g', [CLOSED], [0.3], [50.0], 0.0)
    assert (core.max_velocity, core.max_effort) == (0.02, 4.0)
    named = started(Finger(), max_effort_interface='f/effort', max_velocity_interface='f/speed')
    named.accept_command('g', [CLOSED], [0.3], [50.0], 0.0)
    assert (named.max_velocity, named.max_effort) == (0.3, 50.0)
    named.accept_command('h', [CLOSED], [], [], 0.0)  # empty lists: the parameters
    assert (named.max_velocity, named.max_effort) == (0.1, 10.0)
    # The sim's finger has neither interface: its node refuses to claim one.
    assert named.settings.missing_interface([f'{JOINT}/position']) == (
        "command interface 'f/effort' does not exist on this hardware")
    assert named.settings.missing_interface(['f/effort', 'f/speed']) == ''


def test_a_goal_beyond_the_travel_stalls_and_aborts_after_stall_timeout():
    finger = Finger(position=CLOSED)
    core = started(finger, stall_timeout=1.0)
    core.accept_command('wide', [0.08], [], [], 0.0)
    (outcome,), t = run_until_outcome(core, finger, 0.0)
    stopped = OPEN / SPEED
    assert outcome == Outcome('wide', ABORTED, GripperResult(OPEN, 0.0, True, False))
    assert stopped + 1.0 < t <= stopped + 1.0 + 3 * DT


def test_allow_stalling_makes_a_blocked_grasp_a_success_still_marked_stalled():
    finger = Finger(blocked_at=0.02)
    core = started(finger, allow_stalling=True, stall_timeout=0.5)
    core.accept_command('grasp', [CLOSED], [], [], 0.0)
    (outcome,), t = run_until_outcome(core, finger, 0.0)
    assert outcome.status == SUCCEEDED
    assert outcome.result.stalled and not outcome.result.reached_goal
    assert outcome.result.position == pytest.approx(0.02)
    assert core.update(t, finger.position, 0.0) == CLOSED  # it keeps pressing


def test_preemption_and_cancel_end_canceled_and_a_cancel_holds_with_the_parameters():
    # preempt_active_goal, cancel_callback and set_hold_position (max_effort, max_velocity).
    finger = Finger()
    core = started(finger, max_effort=6.0, max_velocity=0.03)
    core.accept_command('first', [CLOSED], [], [], 0.0)
    t = run(core, finger, 0.0, 0.1)
    core.accept_command('second', [CLOSED], [], [], t)
    assert core.pop_outcomes() == [Outcome('first', CANCELED, GripperResult())]
    t = run(core, finger, t, 0.1)
    assert core.cancel('second')
    assert core.pop_outcomes() == [Outcome('second', CANCELED, GripperResult())]
    held = core.command
    assert held == pytest.approx(finger.position + SPEED * DT)
    assert (core.max_velocity, core.max_effort) == (0.03, 6.0)
    run(core, finger, t, 1.0)
    assert finger.position == pytest.approx(held)


@pytest.mark.parametrize('settings, reason', [
    (ParallelGripperSettings(''), 'Joint name cannot be empty'),
    (ParallelGripperSettings(JOINT, stall_timeout=-1.0), 'stall_timeout'),
    (ParallelGripperSettings(JOINT, max_velocity=-0.1), 'max_velocity'),
    (ParallelGripperSettings(JOINT, max_effort=-1.0), 'max_effort'),
    (ParallelGripperSettings(JOINT, state_interfaces=('position',)),
     'Expected 1 velocity state interface'),
])
def test_unusable_settings_are_refused(settings, reason):
    # on_configure ("Joint name cannot be empty"), the yaml's ranges, on_activate's state
    # interface checks.
    with pytest.raises(ValueError, match=reason):
        ParallelGripperAction(settings)


# -- which controller the sim runs: the controllers file's type ---------------------------------

def test_the_type_comes_from_a_controller_manager_block_the_last_file_winning(tmp_path):
    shipped = tmp_path / 'controllers.yaml'
    shipped.write_text(f"""
/**/controller_manager:
  ros__parameters:
    gripper_action_controller:
      type: {PARALLEL_TYPE}
/**/gripper_action_controller:
  ros__parameters:
    joint: panda_finger_joint1
""")
    older = tmp_path / 'humble.yaml'
    older.write_text(f"""
controller_manager:
  ros__parameters:
    gripper_action_controller.type: {GRIPPER_COMMAND_TYPE}
""")
    args = ['--ros-args', '-r', '__ns:=/x', '--params-file', str(shipped)]
    assert controller_manager_type(args, 'gripper_action_controller') == PARALLEL_TYPE
    assert controller_manager_type(args, 'another_controller') == ''
    assert controller_manager_type(args + ['--params-file', str(older)],
                                   'gripper_action_controller') == GRIPPER_COMMAND_TYPE
    assert controller_manager_type([], 'gripper_action_controller') == ''
