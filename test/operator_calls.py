"""
Steps of an operator session: lifecycle transitions, the hold service, and calls to refuse.

Like operator_steps, each starts in the session's resting state and brings the node back.
"""

from collections.abc import Callable
import time

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from operator_harness import BACKOFF_S, ERROR, OK, Session
from operator_steps import BOUND_S
from ros_harness import commands_after, effective_value
from sequence_ai_ros.harness.service_calls import call_service


def refused_transition(s: Session, transition_id: int) -> bool:
    """Ask for a transition that must be refused; True if it was (no lost-reply guess)."""
    request = ChangeState.Request(transition=Transition(id=transition_id))
    return not call_service(s.robot.change_client, request, 10.0).success


def deactivate_activate(s: Session) -> str:
    robot = s.robot
    run = s.begin()
    asked = time.monotonic()
    assert robot.deactivate()
    s.check_hold('deactivate', asked, asked + BOUND_S)
    s.finish(run, 'stopped', 'deactivated')
    assert robot.state() == 'inactive'
    refused = robot.start_episode()
    assert not refused.success and 'not active' in refused.message, refused
    assert refused_transition(s, Transition.TRANSITION_DEACTIVATE), 'deactivated twice'
    s.expect_status('episode', OK, 'stopped: deactivated', run.ended)
    assert robot.activate() and robot.state() == 'active'
    return 'deactivated mid-episode (held); start and deactivate refused; activated'


def cleanup_configure(s: Session) -> str:
    robot = s.robot
    run = s.begin()
    asked = time.monotonic()
    assert robot.deactivate() and robot.cleanup()
    s.check_hold('deactivate then cleanup', asked, asked + BOUND_S)
    s.finish(run, 'stopped', 'deactivated')
    assert robot.state() == 'unconfigured'
    typed, ranged = robot.set_parameters(request_retries='two', retry_backoff_s=1000.0)
    assert not typed.successful and not ranged.successful, (typed, ranged)
    assert robot.set_parameters(retry_backoff_s=BACKOFF_S)[0].successful
    configured = time.monotonic()
    assert robot.configure(), s.log_tail()
    s.expect_status('episode', OK, 'idle: no episode', configured)
    assert robot.activate()
    return 'cleaned up mid-episode (held); bad parameters refused; configured and activated'


# -- the hold service --------------------------------------------------------------------

def hold_service(problem: str) -> Callable[[Session], str]:
    """Return a step: a stop with the hold service absent or refusing, then one with it."""
    def run_hold_service(s: Session) -> str:
        robot = s.robot
        if problem == 'absent':
            robot.withdraw_hold_service()
        run = s.begin()
        robot.hold_refuses = problem == 'refuses'
        s.stop(run)
        text = 'is not available' if problem == 'absent' else 'refused: brake fault'
        s.expect_status('episode', ERROR, text, run.started, 5 + effective_value(
            s.node.params, 'hold_service_timeout_s'))
        robot.hold_refuses = False
        if problem == 'absent':
            robot.offer_hold_service()
            time.sleep(1.0)  # discovery: the node's client must see the service again
        run = s.begin()
        s.stop(run)
        s.expect_status('episode', OK, 'stopped: stop requested', run.ended)
        return f'hold service {problem}: an ERROR on /diagnostics, cleared by the next hold'
    return run_hold_service


# -- bad calls -------------------------------------------------------------------------------

def idle_abuse(s: Session) -> str:
    robot = s.robot
    since = time.monotonic()
    stop = robot.stop_episode()
    assert not stop.success and 'no episode is running' in stop.message, stop
    for transition in (Transition.TRANSITION_ACTIVATE, Transition.TRANSITION_CONFIGURE,
                       Transition.TRANSITION_CLEANUP):
        assert refused_transition(s, transition), f'transition {transition} taken while active'
    late, empty = robot.set_parameters(max_actions=5, instruction='')
    assert not late.successful and 'read at configure' in late.reason, late
    assert not empty.successful and 'must not be empty' in empty.reason, empty
    time.sleep(0.3)
    assert commands_after(robot, since) == [], 'published while idle'
    return 'stop with none running, activate/configure/cleanup while active, bad sets: refused'


def running_abuse(s: Session) -> str:
    robot = s.robot
    run = s.begin()
    again = robot.start_episode()
    assert not again.success and 'already running' in again.message, again
    for transition in (Transition.TRANSITION_CLEANUP, Transition.TRANSITION_CONFIGURE):
        assert refused_transition(s, transition), f'transition {transition} taken mid-episode'
    results = robot.set_parameters(max_actions='many', jpeg_quality=50, instruction='  ')
    assert not any(r.successful for r in results), results
    assert robot.get_parameter('instruction').string_value == s.node.params['instruction']
    s.still_running(run, time.monotonic(), 1)
    s.stop(run)
    return 'start twice, cleanup/configure mid-episode, bad sets: refused; the episode went on'
