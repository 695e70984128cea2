"""
Steps of an operator session: episodes ending every way they can, and faults ridden through.

Every step starts in the session's resting state (active, no episode running, a healthy robot,
a clean link) and brings the node back to it; the runner checks that state after each step
(operator_harness.Session.settled). A step returns one line saying what happened.
"""

from collections.abc import Callable
import copy
import json
import time

from operator_harness import (
    BACKOFF_S,
    ERROR,
    MARGIN_S,
    OK,
    REQUEST_TIMEOUT_S,
    RETRIES,
    Session,
    STARTUP_TIMEOUT_S,
    WARN,
)
from operator_robot import GATE_PERIOD_S, OUT_OF_LIMITS
from ros_harness import (
    commands_after,
    CONTROL_PERIOD_S,
    final_hold,
    is_hold,
    NODE_KEY,
    outcome_after,
    wait_until,
)
from sequence_ai_ros.client import full_model_id
from std_msgs.msg import String
from system.test_node_faults import joints_back_in_time, joints_stop
from system.test_node_gateway_faults import chunk_of, fired, MALFORMED

BOUND_S = CONTROL_PERIOD_S + MARGIN_S
MODEL = full_model_id('pi05-droid')


# -- episodes that end by themselves or by the operator -------------------------------------

def completed(s: Session) -> str:
    run = s.begin()
    result = s.finish(run, 'completed', 'completed')
    s.expect_status('episode', OK, 'completed', run.ended)
    return f'{result["actions"]} actions, {result["underruns"]} underruns'


def stop_service(s: Session) -> str:
    run = s.begin()
    result = s.stop(run)
    s.expect_status('episode', OK, 'stopped: stop requested', run.ended)
    return f'stopped after {result["actions"]} actions'


def input_fault(fault) -> Callable[[Session], str]:
    """Return a step for one of test_node_faults' bad inputs: the episode ends holding."""
    def run_input_fault(s: Session) -> str:
        run = s.begin()
        at = time.monotonic()
        fault.inject(s.robot)
        s.check_hold(fault.case, at, at + fault.seen_within_s + BOUND_S)
        result = s.finish(run, 'safety', fault.reason)
        if fault.inject in STALE_JOINTS:
            # The arm went on following the commands after its last joint state: the hold
            # keeps it where the last command put it, not where it was last measured.
            *_, (_, before), (_, hold) = commands_after(s.robot, run.started)
            assert list(hold.points[0].positions) == list(before.points[0].positions), \
                f'held at {list(hold.points[0].positions)}, last told ' \
                f'{list(before.points[0].positions)}'
        s.expect_status('episode', ERROR, 'ended by a safety check', run.ended)
        s.expect_status('inputs', ERROR, 'holding: ', run.ended)
        return result['reason']
    return run_input_fault


STALE_JOINTS = (joints_stop, joints_back_in_time)


def gate(closed: bool) -> Callable[[Session], str]:
    """Return a step whose safety gate closes (or falls silent) mid-episode."""
    def run_gate(s: Session) -> str:
        run = s.begin()
        at = time.monotonic()
        if closed:
            s.robot.gate_open = False
        else:
            s.robot.publish_gate = False
        seen = GATE_PERIOD_S if closed else s.node.params['safety_gate_timeout_s']
        s.check_hold('safety gate ' + ('closed' if closed else 'silent'), at,
                     at + seen + GATE_PERIOD_S + BOUND_S)
        result = s.finish(run, 'safety', 'is closed' if closed else 'silent')
        s.expect_status('episode', ERROR, 'ended by a safety check', run.ended)
        return result['reason']
    return run_gate


def out_of_limits(answer: dict) -> bytes:
    """Return a well-formed answer whose every value is OUT_OF_LIMITS (never to be played)."""
    body = copy.deepcopy(answer)
    for step in chunk_of(body)['steps']:
        step['values'] = [OUT_OF_LIMITS] * len(step['values'])
    return json.dumps(body).encode()


def action_outside_limits(s: Session) -> str:
    seen = s.faults.stats().faults.get('respond', 0)
    run = s.begin()
    armed = time.monotonic()
    s.faults.respond_next(1, 200, out_of_limits(s.answer))
    assert fired(s.faults, 'respond', seen, armed), 'no request after the fault was armed'
    result = s.finish(run, 'safety', 'action: ')
    held = final_hold(s.robot, run.started)
    moving = [t for t, m in commands_after(s.robot, run.started) if not is_hold(m) and t < held]
    # The bad action came due at the tick after the last good one: the hold is that tick's.
    s.check_hold('an action outside the limits', moving[-1], moving[-1] + BOUND_S)
    s.expect_status('episode', ERROR, 'ended by a safety check', run.ended)
    return result['reason']


# -- the gateway -----------------------------------------------------------------------------

def refusal(case) -> Callable[[Session], str]:
    """Return the step of a deterministic refusal, 401 or 402: it ends at once, no retry."""
    def run_refusal(s: Session) -> str:
        seen = s.faults.stats().faults.get('respond', 0)
        run = s.begin()
        armed = time.monotonic()
        s.faults.refuse_next(1, case.status, case.body)
        bracket = fired(s.faults, 'respond', seen, armed)
        assert bracket, 'no request after the fault was armed'
        s.check_hold(case.case, bracket[0], bracket[1] + BOUND_S)
        result = s.finish(run, 'error', 'gateway: ')
        assert result['retries'] == 0, result
        s.expect_status('gateway', ERROR, case.diagnosis, run.ended)
        s.expect_status('episode', ERROR, 'ended by an error', run.ended)
        assert NODE_KEY not in json.dumps(result), 'the key reached the outcome'
        return result['reason']
    return run_refusal


BAD_GATEWAY = json.dumps({'detail': {'status': 'bad_gateway',
                                     'message': 'upstream worker lost'}}).encode()


def retries_spent(s: Session) -> str:
    seen = s.faults.stats().faults.get('respond', 0)
    run = s.begin()
    armed = time.monotonic()
    s.faults.refuse_next(RETRIES + 1, 502, BAD_GATEWAY)
    last = fired(s.faults, 'respond', seen + RETRIES, armed)
    assert last, 'fewer requests than the retries after the fault was armed'
    s.check_hold(f'{RETRIES + 1} 502s in a row', last[0], last[1] + BOUND_S)
    result = s.finish(run, 'error', 'gateway: ')
    assert result['retries'] >= RETRIES, result  # and an earlier, ridden-through one
    s.expect_status('gateway', ERROR, f'after {RETRIES} retries in a row', run.ended)
    return result['reason']


def ride_through(kind: str, arm: Callable[[Session], None]) -> Callable[[Session], str]:
    """Return a step for one transient fault: retried, the episode goes on; then a stop."""
    def run_ride_through(s: Session) -> str:
        seen = s.faults.stats().faults.get(kind, 0)
        run = s.begin()
        armed = time.monotonic()
        arm(s)
        bracket = fired(s.faults, kind, seen, armed)
        assert bracket, 'no request after the fault was armed'
        # The lost request fails (at once, or after the timeout) and is retried.
        lost = REQUEST_TIMEOUT_S if kind == 'stall' else 0.0
        s.still_running(run, bracket[1] + lost + BACKOFF_S)
        result = s.stop(run)
        assert result['retries'] >= 1, result
        s.expect_status('episode', OK, 'stopped: stop requested', run.ended)
        return f'{result["retries"]} retries, {result["underruns"]} underruns, then stopped'
    return run_ride_through


def malformed(name: str) -> Callable[[Session], None]:
    def arm(s: Session) -> None:
        s.faults.respond_next(1, 200, *MALFORMED[name](s.answer))
    return arm


def gateway_restarted_cold(s: Session) -> str:
    run = s.begin()
    stopping = time.monotonic()
    s.restart_gateway(cold=True)
    s.check_dry_hold('gateway restarted mid-episode', stopping)
    # Back before the retries ran out, the gateway answers warming: on v1 the node holds,
    # waits the warm-up out and goes on in the same episode; later than that, the episode ends
    # in error. On direct the episode lived in the worker that stopped and never goes on: it
    # ends holding, whether the retries ran out first or the worker, back, said episode_lost.
    ended = outcome_after(s.robot, run.index, STARTUP_TIMEOUT_S + 30)
    if s.protocol == 'v1' and ended is not None and ended['outcome'] == 'completed':
        result = s.finish(run, 'completed', 'completed')
        assert result['holds'] >= 1 and result['failed_requests'] >= 1, result
    else:
        result = s.finish(run, 'error', 'gateway: ')
        s.expect_status('episode', ERROR, 'ended by an error', run.ended)
    # Cold again, and asked by nobody yet: the next start waits the warm-up out, then moves
    # (on direct, seated again on the worker that came back, under its new certificate).
    s.restart_gateway(cold=True)
    waiting = time.monotonic()
    run = s.begin(timeout=STARTUP_TIMEOUT_S + 10)
    s.expect_status('gateway', WARN, 'warming up', waiting)
    if s.protocol == 'direct':
        seats = s.gateway.stats()['direct']['seats'][MODEL]
        assert seats['held'] == 1 and seats['sessions'][0]['acts'] > 0, seats
    s.stop(run)
    return f'{result["reason"]}; the next episode waited out the warm-up'


def told(s: Session, since: float, instruction: str) -> bool:
    """Whether a chunk asked for after `since` was asked for with `instruction`."""
    return any(f'instruction: {instruction}' in event.get('warnings', [])
               for when, event in list(s.robot.chunk_events) if when > since)


def instruction_changed(s: Session) -> str:
    robot = s.robot
    run = s.begin()
    by_parameter = f'{s.node.params["instruction"]}, then lift it'
    changed = time.monotonic()
    assert robot.set_parameters(instruction=by_parameter)[0].successful
    assert wait_until(lambda: told(s, changed, by_parameter), 10), 'the new task never ' \
        'reached the gateway'
    by_topic = f'{s.node.params["instruction"]}, then put it down'
    changed = time.monotonic()
    robot.instruction_pub.publish(String(data=by_topic))
    assert wait_until(lambda: told(s, changed, by_topic), 10), 'the topic task never reached it'
    s.still_running(run, changed, 1)
    s.stop(run)
    assert robot.set_parameters(instruction=s.node.params['instruction'])[0].successful
    return 'the parameter, then the topic, retargeted the episode; it went on'
