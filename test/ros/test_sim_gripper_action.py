"""
The simulated gripper_action_controller: its rules with injected time, then its action server.

Upstream: ros-controls/ros2_controllers. Each test names its rule's lines as
`<path> @ <commit> (<branch>), lines A-B`; how far each branch was established is in
sequence_ai_ros/sim/gripper_rules.py. The finger here is the test's own hardware: a
position servo on panda_finger_joint1 (0.0 closed .. 0.04 m open) at 0.05 m/s.
"""

import contextlib
import itertools
import sys
import threading
import time

from action_msgs.msg import GoalStatus
import numpy as np
import pytest
from rcl_interfaces.srv import GetParameters
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from ros2_tools import CONTROL_MSGS_MISSING
from ros_harness import wait_until
from sequence_ai_ros.harness.service_calls import call_service
from sequence_ai_ros.sim.gripper_action import GripperActionController
from sequence_ai_ros.sim.gripper_rules import (
    ABORTED,
    CANCELED,
    check_goal,
    GripperAction,
    GripperResult,
    GripperSettings,
    Outcome,
    SUCCEEDED,
)
from spun_nodes import spun_nodes

try:
    from control_msgs.action import GripperCommand
except ImportError:
    GripperCommand = None
needs_control_msgs = pytest.mark.skipif(GripperCommand is None, reason=CONTROL_MSGS_MISSING)
try:
    from control_msgs.action import ParallelGripperCommand
except ImportError:  # before control_msgs 5.1
    ParallelGripperCommand = None
needs_parallel_gripper = pytest.mark.skipif(
    ParallelGripperCommand is None,
    reason='control_msgs with ParallelGripperCommand (a ROS package, not on PyPI) is missing')

JOINT = 'panda_finger_joint1'
CLOSED, OPEN = 0.0, 0.04
SPEED = 0.05
DT = 0.01
NAMES = itertools.count()


class Finger:
    """A position servo at `speed` inside the finger's travel; `blocked_at` is an object."""

    def __init__(self, position=OPEN, speed=SPEED, blocked_at=None):
        self.position, self.velocity = position, 0.0
        self.speed, self.blocked_at = speed, blocked_at

    def step(self, command, dt):
        if command is None or dt <= 0.0:
            self.velocity = 0.0
            return
        target = min(max(command, CLOSED), OPEN)
        if self.blocked_at is not None:
            target = max(target, self.blocked_at)
        reach = self.speed * dt
        new = self.position + min(max(target - self.position, -reach), reach)
        self.velocity, self.position = (new - self.position) / dt, new


def run(core, finger, t, seconds):
    """Run controller and finger for `seconds` from time `t`; return the time reached."""
    for _ in range(round(seconds / DT)):
        finger.step(core.update(t, finger.position, finger.velocity), DT)
        t += DT
    return t


def run_until_outcome(core, finger, t, limit=30.0):
    """Run until a goal ends; return (its outcome, the time it ended)."""
    for _ in range(round(limit / DT)):
        t = run(core, finger, t, DT)
        outcomes = core.pop_outcomes()
        if outcomes:
            return outcomes, t
    raise AssertionError('no outcome')


def started(finger, **settings):
    """Return a controller activated on `finger` at t = 0 (its first cycle holds it)."""
    core = GripperAction(GripperSettings(JOINT, **settings))
    assert core.update(0.0, finger.position, finger.velocity) == finger.position
    return core


# -- the rules, with injected time ----------------------------------------------------------

def test_activation_holds_where_the_finger_is():
    # on_activate: the command starts at the measured position.
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 284-286.
    finger = Finger(position=0.03)
    core = started(finger)
    run(core, finger, 0.0, 1.0)
    assert finger.position == 0.03 and core.pop_outcomes() == []


def test_a_goal_is_forwarded_at_once_and_succeeds_within_goal_tolerance():
    # The position adapter forwards the goal:
    # gripper_controllers/include/gripper_controllers/hardware_interface_adapter.hpp
    # @ 0ddf0ff8 (branch unverified), lines 82-89; check_for_success: |error| < goal_tolerance
    # succeeds with reached_goal,
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 156-165.
    finger = Finger()
    core = started(finger)
    core.accept('g1', CLOSED, 20.0, 0.0)
    assert core.update(0.0, finger.position, 0.0) == CLOSED
    (outcome,), t = run_until_outcome(core, finger, 0.0)
    assert outcome.goal_id == 'g1' and outcome.status == SUCCEEDED
    assert outcome.result.reached_goal and not outcome.result.stalled
    # The measured position of the first cycle inside the tolerance, not the goal itself.
    assert 0.01 - SPEED * DT <= outcome.result.position < 0.01
    assert outcome.result.effort == 20.0  # the position adapter's effort: the goal's max_effort
    assert t == pytest.approx((OPEN - 0.01) / SPEED, abs=2 * DT)  # at the tolerance, not 0
    run(core, finger, t, 1.0)
    assert finger.position == pytest.approx(CLOSED)  # the goal stays commanded


def test_the_result_carries_the_previous_cycles_effort_command():
    # check_for_success reads computed_command_ before update() recomputes it:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 68-73.
    finger = Finger()
    core = started(finger, max_effort=3.0)
    core.accept('here', OPEN, 40.0, 0.0)
    (outcome,), _ = run_until_outcome(core, finger, 0.0)
    assert outcome.result.effort == 3.0  # the hold's max_effort, from the cycle before


def test_a_goal_beyond_the_travel_stalls_and_aborts_after_stall_timeout():
    # No motion above stall_velocity_threshold for stall_timeout -> ABORTED:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 166-191.
    finger = Finger(position=CLOSED)
    core = started(finger, stall_timeout=1.0)
    core.accept('wide', 0.08, 10.0, 0.0)
    (outcome,), t = run_until_outcome(core, finger, 0.0)
    stopped = OPEN / SPEED  # the hardware stops at its limit, 0.02 m short of the goal
    assert outcome == Outcome('wide', ABORTED, GripperResult(OPEN, 10.0, True, False))
    assert stopped + 1.0 < t <= stopped + 1.0 + 3 * DT


def test_allow_stalling_turns_a_stall_into_success_still_marked_stalled():
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 174-183 (stalled set, succeeded).
    finger = Finger(position=CLOSED)
    core = started(finger, allow_stalling=True, stall_timeout=0.5)
    core.accept('wide', 0.08, 0.0, 0.0)
    (outcome,), _ = run_until_outcome(core, finger, 0.0)
    assert outcome.status == SUCCEEDED
    assert outcome.result.stalled and not outcome.result.reached_goal


def test_an_object_in_the_grip_stalls_the_close_and_the_gripper_keeps_pressing():
    # A stall ends the goal but update keeps sending the goal's position:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 172-190 and 56-75.
    finger = Finger(blocked_at=0.02)
    core = started(finger)
    core.accept('grasp', CLOSED, 5.0, 0.0)
    (outcome,), t = run_until_outcome(core, finger, 0.0)
    assert outcome.status == ABORTED and outcome.result.stalled
    assert outcome.result.position == pytest.approx(0.02)
    assert core.update(t, finger.position, 0.0) == CLOSED


def test_a_slow_finger_still_moving_never_stalls():
    # Motion above stall_velocity_threshold restarts the stall clock:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 168-171.
    finger = Finger(speed=0.002)  # above stall_velocity_threshold (0.001 m/s)
    core = started(finger, stall_timeout=0.5)
    core.accept('slow', CLOSED, 0.0, 0.0)
    (outcome,), t = run_until_outcome(core, finger, 0.0)
    assert outcome.status == SUCCEEDED and t > 10.0


def test_the_stall_clock_starts_when_the_goal_is_accepted():
    # accepted_callback: last_movement_time_ = now, so a finger that never moves (the goal needs
    # no motion the hardware can make) stalls stall_timeout after acceptance:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), line 104.
    finger = Finger(blocked_at=OPEN)
    core = started(finger, stall_timeout=0.5)
    run(core, finger, 0.0, 2.0)
    core.accept('stuck', CLOSED, 0.0, 2.0)
    (outcome,), t = run_until_outcome(core, finger, 2.0)
    assert outcome.status == ABORTED and 2.5 < t <= 2.5 + 3 * DT


def test_a_new_goal_preempts_the_active_one_which_ends_canceled():
    # accepted_callback calls preempt_active_goal, which cancels with an empty result:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 27-37 and 93.
    finger = Finger()
    core = started(finger)
    core.accept('first', CLOSED, 0.0, 0.0)
    t = run(core, finger, 0.0, 0.2)
    core.accept('second', OPEN, 0.0, t)
    assert core.pop_outcomes() == [Outcome('first', CANCELED, GripperResult())]
    assert core.active_goal == 'second' and core.command == OPEN


def test_a_cancel_holds_the_measured_position_with_the_max_effort_parameter():
    # cancel_callback and set_hold_position:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 114-144.
    finger = Finger()
    core = started(finger, max_effort=7.0)
    core.accept('close', CLOSED, 30.0, 0.0)
    t = run(core, finger, 0.0, 0.2)
    assert not core.cancel('another goal')
    assert core.cancel('close')
    # The position state read at the last cycle: the finger moved one step since.
    assert core.command == pytest.approx(finger.position + SPEED * DT)
    assert core.pop_outcomes() == [Outcome('close', CANCELED, GripperResult())]
    held = core.command
    t = run(core, finger, t, 1.0)
    assert finger.position == pytest.approx(held)
    assert core.active_goal is None and not core.cancel('close')
    core.accept('here', held, 0.0, t)  # succeeds at once, with the hold cycle's effort
    (outcome,), _ = run_until_outcome(core, finger, t)
    assert outcome.result.effort == 7.0


def test_an_inactive_controller_evaluates_nothing_and_keeps_its_command():
    # on_deactivate only releases the interfaces; the active goal is left as it is:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 305-314.
    finger = Finger(position=CLOSED)
    core = started(finger, stall_timeout=0.2)
    core.accept('wide', 0.08, 0.0, 0.0)
    core.deactivate()
    run(core, finger, 0.0, 5.0)
    assert core.pop_outcomes() == [] and core.update(5.0, OPEN, 0.0) == 0.08


def test_non_finite_goals_are_rejected_finite_ones_accepted():
    assert check_goal(0.02, 10.0) == ''
    # goal_callback accepts every goal; refusing non-finite ones is the sim's rule:
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 77-83.
    assert check_goal(0.5, 0.0) == ''  # out of travel: accepted, as upstream (goal_callback)
    assert 'finite' in check_goal(float('nan'), 10.0)
    assert 'finite' in check_goal(0.02, float('inf'))


@pytest.mark.parametrize('settings, reason', [
    (GripperSettings(''), 'Joint name cannot be empty'),
    (GripperSettings(JOINT, action_monitor_rate=0.05), 'action_monitor_rate'),
    (GripperSettings(JOINT, goal_tolerance=-0.1), 'goal_tolerance'),
    (GripperSettings(JOINT, stall_timeout=float('nan')), 'stall_timeout'),
])
def test_unusable_settings_are_refused(settings, reason):
    # "Joint name cannot be empty":
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 211-216; ranges:
    # gripper_controllers/src/gripper_action_controller_parameters.yaml @ 1bad1e37 (branch
    # unverified), lines 6-8, 17-19, 25-27; non-finite values are the sim's refusal.
    with pytest.raises(ValueError, match=reason):
        GripperAction(settings)


def test_the_node_names_control_msgs_when_it_cannot_be_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, 'control_msgs', None)
    monkeypatch.setitem(sys.modules, 'control_msgs.action', None)
    with pytest.raises(ImportError, match='control_msgs'):
        GripperActionController()


# -- the node: GripperCommand over DDS in this process ---------------------------------------

def controllers_with_clients(ros, action, prefix, **defaults):
    """Yield a maker of controller nodes, each with an action client; destroy them after."""
    clients = []
    with spun_nodes(ros) as spin:
        def make(**params):
            name = f'{prefix}_{next(NAMES)}'
            node = spin(GripperActionController(
                name=name, context=ros.context, parameter_overrides=[
                    Parameter(k, value=v) for k, v in {**defaults, **params}.items()]))
            client = ActionClient(ros.node, action, f'/{name}/gripper_cmd')
            assert client.wait_for_server(timeout_sec=10)
            clients.append(client)
            return node, client
        yield make
        for client in clients:
            client.destroy()


@pytest.fixture
def gripper(ros):
    yield from controllers_with_clients(ros, GripperCommand, 'gripper_action_controller')


def parameter_values(ros, node, names):
    """Return the values of `node`'s parameters `names`, asked over its get_parameters."""
    service = ros.node.create_client(GetParameters, f'/{node.get_name()}/get_parameters')
    try:
        return call_service(service, GetParameters.Request(names=names), 10).values
    finally:
        ros.node.destroy_client(service)


def clock(node):
    return node.get_clock().now().nanoseconds * 1e-9


@contextlib.contextmanager
def hardware(node, finger):
    """Update the controller and step `finger` every 10 ms on a thread, on the node's clock."""
    stop = threading.Event()

    def loop():
        last = clock(node)
        while not stop.is_set():
            now = clock(node)
            command = node.update(now, np.array([finger.position]), np.array([finger.velocity]))
            finger.step(None if command is None else float(command[0]), now - last)
            last = now
            time.sleep(DT)
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield finger
    finally:
        stop.set()
        thread.join(5)


def send(client, position, max_effort=10.0):
    """Send a goal; return its client goal handle once the server answered."""
    goal = GripperCommand.Goal()
    goal.command.position, goal.command.max_effort = position, max_effort
    future = client.send_goal_async(goal)
    assert wait_until(future.done, 10)
    return future.result()


def result_of(handle, timeout=10):
    future = handle.get_result_async()
    assert wait_until(future.done, timeout)
    return future.result()


@needs_control_msgs
def test_a_goal_moves_the_finger_and_succeeds_with_reached_goal(gripper):
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 156-165; the result goes out at
    # action_monitor_rate (lines 108-111).
    node, client = gripper()
    assert (node.claimed_joints, node.command_interface) == ((JOINT,), 'position')
    with hardware(node, Finger()) as finger:
        handle = send(client, CLOSED, 15.0)
        assert handle.accepted
        answer = result_of(handle)
    assert answer.status == GoalStatus.STATUS_SUCCEEDED
    assert answer.result.reached_goal and not answer.result.stalled
    assert abs(answer.result.position - CLOSED) < 0.01 and answer.result.effort == 15.0
    assert finger.position < 0.01


@needs_control_msgs
def test_a_goal_beyond_the_travel_is_aborted_as_stalled(gripper):
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 172-190.
    node, client = gripper(stall_timeout=0.3)
    with hardware(node, Finger(position=CLOSED)) as finger:
        answer = result_of(send(client, 0.08))
    assert answer.status == GoalStatus.STATUS_ABORTED
    assert answer.result.stalled and not answer.result.reached_goal
    assert answer.result.position == pytest.approx(OPEN) and finger.position == OPEN


@needs_control_msgs
def test_allow_stalling_reports_a_stall_as_success(gripper):
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 179-183.
    node, client = gripper(stall_timeout=0.3, allow_stalling=True)
    with hardware(node, Finger(blocked_at=0.02)):
        answer = result_of(send(client, CLOSED))
    assert answer.status == GoalStatus.STATUS_SUCCEEDED
    assert answer.result.stalled and not answer.result.reached_goal


@needs_control_msgs
def test_a_newer_goal_preempts_and_the_first_ends_canceled(gripper):
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 27-37 and 85-112.
    node, client = gripper()
    with hardware(node, Finger()) as finger:
        first = send(client, CLOSED)
        second = send(client, 0.03)
        assert (result_of(first).status, result_of(second).status) == (
            GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_SUCCEEDED)
    assert abs(finger.position - 0.03) < 0.01


@needs_control_msgs
def test_a_canceled_goal_holds_the_finger_where_it_was(gripper):
    # gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
    # @ 14728ce2 (branch unverified), lines 114-144.
    node, client = gripper()
    with hardware(node, Finger()) as finger:
        handle = send(client, CLOSED)
        assert wait_until(lambda: finger.position < 0.035, 10)
        cancel = handle.cancel_goal_async()
        assert wait_until(cancel.done, 10) and cancel.result().goals_canceling
        answer = result_of(handle)
        held = finger.position
        time.sleep(0.3)
    assert answer.status == GoalStatus.STATUS_CANCELED
    assert 0.0 < held < OPEN and finger.position == pytest.approx(held, abs=SPEED * 2 * DT)


@needs_control_msgs
def test_a_non_finite_goal_is_rejected_and_the_finger_does_not_move(gripper):
    # The sim's rule: upstream's goal_callback accepts every goal (see check_goal's test).
    node, client = gripper()
    with hardware(node, Finger()) as finger:
        assert not send(client, float('nan')).accepted
        time.sleep(0.2)
    assert finger.position == OPEN


@needs_control_msgs
def test_get_parameters_answers_upstreams_parameters(ros, gripper):
    # gripper_controllers/src/gripper_action_controller_parameters.yaml @ 1bad1e37 (branch
    # unverified), lines 1-43: names and defaults.
    node, _ = gripper(goal_tolerance=0.002)
    names = ['joint', 'goal_tolerance', 'max_effort', 'allow_stalling',
             'stall_velocity_threshold', 'stall_timeout', 'action_monitor_rate']
    values = parameter_values(ros, node, names)
    assert values[0].string_value == JOINT
    assert [v.double_value for v in values[1:3]] == [0.002, 0.0]
    assert values[3].bool_value is False
    assert [v.double_value for v in values[4:]] == [0.001, 1.0, 20.0]
