"""
The policy node under gateway and network faults, as real processes: rows of the matrix.

One warm gateway behind one FaultProxy serves one node (request_retries 2, retry_backoff_s
0.25, request_timeout_s 1.0). Each case starts an episode, waits for motion, arms its fault on
the proxy (or stops the gateway), and measures: the time from the fault to the hold (the fault
is timed when the proxy applies it to a request, found by polling its counters), the commands
after the hold (0 until the next explicit start), holds while retrying, the retries shown on
/diagnostics, and the node's log (no traceback, never the key). Cases that need no retries
reconfigure the same node; the TLS case runs its own gateway and node.

Malformed answers carry marker values (7.77) that no real chunk holds; the model (pi05-droid)
acts in joint velocity, which the node integrates into positions, so a played marker would be
seen on the command topic as a step of exactly 7.77 x the control period.
"""

from dataclasses import dataclass
import json
import math
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from fixtures_gateway import act_body, node_gateway_fixture
import httpx
import pytest
from ros_harness import (
    commands_after,
    CONTROL_PERIOD_S,
    holds_after,
    is_finite,
    is_hold,
    log_faults,
    MOTION,
    moving_after,
    NODE_ENV,
    NODE_KEY,
    node_parameters,
    NODE_SCALE,
    outcome_after,
    PolicyNodeProcess,
    Robot,
    running_node,
    RunningNode,
    settled_counts,
    status_values,
    statuses_after,
    wait_until,
)
from sequence_ai_ros.client import CertificateError
from sequence_ai_ros.faults import FaultProxy
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.fault_matrix import FaultMatrix, FaultRow
from sequence_ai_ros.node.diagnostics import build_statuses, error_kind, Health

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR
MARGIN_S = 0.5  # DDS both ways and a scheduler on a loaded two-core machine
SETTLE_S = 0.6  # after the hold: long enough for a stray command to show up
MARKER = 7.77
# 2 s: a 0.4 s answer on a loaded 2-core machine must not time out by itself.
RETRIES, BACKOFF_S, REQUEST_TIMEOUT_S = 2, 0.25, 2.0
CAMERA_PERIOD_S = 1 / 10  # the Robot's camera rate
# Motion the node may have when the gateway stops: the chunk playing, and max_inflight (2)
# requests in flight that a stopping gateway still answers; 15 steps at the node's rate each.
PLAN_S = 3 * NODE_SCALE


gateway = node_gateway_fixture(0.4)


@pytest.fixture(scope='module')
def proxy(gateway):
    with FaultProxy('127.0.0.1', gateway.port) as link:
        yield link


@pytest.fixture(scope='module')
def real_answer(gateway):
    """One real /v1/act answer of the gateway, for the malformed variants."""
    answer = httpx.post(gateway.base_url + '/v1/act', json=act_body(), timeout=10.0,
                        headers={'Authorization': f'Bearer {NODE_KEY}'})
    answer.raise_for_status()
    return answer.json()


@pytest.fixture(scope='module')
def node(ros, proxy):
    """Run one node for every proxy case, explicit starts, through the proxy."""
    robot = Robot(ros.node, 'gwfaults', watch_diagnostics=True)
    # v1: the faults are /v1/act answers the proxy rewrites (a direct act goes to the worker).
    params = node_parameters(
        base_url=proxy.url(), protocol='v1', max_actions=10**6, start_on_activate=False,
        request_timeout_s=REQUEST_TIMEOUT_S, request_retries=RETRIES,
        retry_backoff_s=BACKOFF_S,
        # Inputs are not under test here: a test-side publisher stalled by a loaded machine
        # must not end an episode that a gateway fault is meant to be survived in.
        joint_state_timeout_s=2.0, camera_timeout_s=3.0)
    with running_node(robot, 'gwfaults', params) as node:
        yield node


@pytest.fixture
def link(proxy):
    """Yield the proxy, clean before and after each case."""
    proxy.clear()
    yield proxy
    proxy.clear()


def fired(link: FaultProxy, kind: str, seen: int, armed: float,
          timeout: float = 10.0) -> tuple[float, float] | None:
    """
    Bracket when the proxy applied its `seen + 1`th `kind` fault (armed at `armed`).

    Return (the last look that did not see it, the first that did), or None if it never came.
    A time to hold measured from the first is never short; the bracket's width is the test's
    own uncertainty (a poller on a busy machine), not the node's delay.
    """
    deadline = time.monotonic() + timeout
    missed = armed
    while True:
        looked = time.monotonic()
        if link.stats().faults.get(kind, 0) > seen:
            return missed, time.monotonic()
        if looked > deadline:
            return None
        missed = looked
        time.sleep(0.005)


def first_hold(robot: Robot, since: float, timeout: float = 5.0) -> tuple[float | None, ...]:
    """
    Return (the hold, its command, its service call) after `since`; the hold is the earlier.

    The node publishes the hold command, then calls the hold service; on a loaded machine a
    reliable sample can arrive a DDS repair later than the call, so either marks the hold.
    """
    commands = wait_until(lambda: holds_after(robot, since), timeout) or []
    calls = wait_until(lambda: [t for t in robot.hold_times if t > since], 1) or []
    command, call = commands[0] if commands else None, calls[0] if calls else None
    return min((t for t in (command, call) if t is not None), default=None), command, call


def carries_fault(msg, previous=None) -> bool:
    """
    Whether a command carries a marker value or a non-finite number.

    trajectory_stream sends positions only: a played velocity marker shows as a step of
    MARKER * period from the previous command.
    """
    point = msg.points[0]
    if not is_finite(msg) or any(abs(v - MARKER) < 1e-9
                                 for v in (*point.positions, *point.velocities)):
        return True
    if previous is None:
        return False
    step = MARKER * CONTROL_PERIOD_S
    return any(abs(abs(p - q) - step) < 1e-6
               for p, q in zip(point.positions, previous.points[0].positions))


def unsafe_commands(sent) -> int:
    """Count the commands of a (time, message) list that carry a fault."""
    messages = [msg for _, msg in sent]
    return sum(carries_fault(msg, before) for before, msg in zip([None, *messages], messages))


def stop_and_measure(node: RunningNode, index: int) -> tuple[float, int, dict[str, Any]]:
    """Stop the episode explicitly; return (seconds to the hold, commands after it, outcome)."""
    robot = node.robot
    stopped = time.monotonic()
    answer = robot.stop_episode()
    assert answer.success, (answer.message, robot.outcomes[index:])
    result = outcome_after(robot, index, 10)
    assert result is not None and result['reason'] == 'stop requested', result
    held, command, _ = first_hold(robot, stopped)
    assert held is not None and command is not None, 'no hold after the stop'
    time.sleep(SETTLE_S)
    return held - stopped, len(commands_after(robot, holds_after(robot, stopped)[-1])), result


def retries_shown(robot: Robot, since: float) -> tuple[int, str, bool]:
    """Return (largest 'retries' value, last transient error kind, a WARN 'retry' seen)."""
    gateway = statuses_after(robot, since, 'gateway')
    counts = [int(status_values(s)['retries']) for _, s in gateway]
    kinds = [status_values(s)['last transient error kind'] for _, s in gateway]
    warned = any(s.level == WARN and 'retry' in s.message for _, s in gateway)
    return max(counts, default=0), kinds[-1] if kinds else '', warned


def underrun_gaps(robot: Robot, since: float) -> list[tuple[float, float]]:
    """(seconds from the last moving command to the hold, seconds held) of each underrun."""
    commands = commands_after(robot, since)
    gaps, last_move, held_at = [], None, None
    for when, msg in commands:
        if is_hold(msg):
            if held_at is None and last_move is not None:
                held_at = when
                gaps.append([held_at - last_move, None])
        else:
            if held_at is not None:
                gaps[-1][1] = when - held_at
                held_at = None
            last_move = when
    return [(round(a, 3), None if b is None else round(b, 3)) for a, b in gaps]


# -- faults the retries ride through ---------------------------------------------------------

def chunk_of(answer: dict) -> dict:
    """Return the action chunk of a v1 answer (`action_chunk`) or a direct one (`outputs`)."""
    return answer['action_chunk'] if 'action_chunk' in answer else answer['outputs']


def _steps(answer: dict, mutate) -> bytes:
    body = json.loads(json.dumps(answer))
    for i, step in enumerate(chunk_of(body)['steps']):
        mutate(i, step)
    return json.dumps(body, allow_nan=True).encode()


def _nan_among_markers(i: int, step: dict) -> None:
    step['values'][:7] = [math.nan if i == 3 else MARKER] + [MARKER] * 6


def _seven_markers(i: int, step: dict) -> None:
    step['values'] = [MARKER] * 7  # 7 values for an 8-value action space


MALFORMED = {
    'NaN values (among 7.77 markers)':
        lambda a: (_steps(a, _nan_among_markers), 'application/json'),
    'wrong action_dim (7 of 8, all 7.77)':
        lambda a: (_steps(a, _seven_markers), 'application/json'),
    'not JSON (an HTML page)': lambda a: (b'<html>captive portal</html>', 'text/html'),
}


def respond_mid_episode(node: RunningNode, link: FaultProxy, status: int, body: Any,
                        *content_type: str) -> tuple[int, int, Any, float, tuple[float, float]]:
    """
    Start an episode and answer its next request with `body`, once.

    Returns the proxy's answers so far, the outcome index, the counts before, when the answer
    was armed, and the bracket in which the node's request met it.
    """
    seen = link.stats().faults.get('respond', 0)
    index, before = node.run_episode()
    armed = time.monotonic()
    link.respond_next(1, status, body, *content_type)
    bracket = fired(link, 'respond', seen, armed)
    assert bracket is not None, 'the node sent no request after the fault was armed'
    return seen, index, before, armed, bracket


@pytest.mark.parametrize('name', list(MALFORMED))
def test_a_malformed_answer_is_retried_and_never_played(node, link, real_answer, fault_matrix,
                                                        name):
    node.ensure(request_retries=RETRIES)
    robot = node.robot
    body, content_type = MALFORMED[name](real_answer)
    _, index, before, armed, bracket = respond_mid_episode(node, link, 200, body, content_type)
    at = bracket[0]
    moved = wait_until(lambda: moving_after(robot, at) >= 3 * MOTION, 10)
    ended_early = len(robot.outcomes) > index
    shown = wait_until(lambda: retries_shown(robot, at)[0] >= 1 and retries_shown(robot, at), 5)
    sent = commands_after(robot, armed)
    unsafe = unsafe_commands(sent)
    gaps = underrun_gaps(robot, armed)
    assert not ended_early, (robot.outcomes[index:], node.process.log()[-3000:])
    to_hold, after_hold, result = stop_and_measure(node, index)
    after = settled_counts(node.pid, before)
    fault_matrix.record(FaultRow(
        area='malformed answer', case=f'{name}, mid-episode, request_retries {RETRIES}',
        outcome='retried; the episode went on; none of its values reached the command topic; '
                'an explicit stop then holds',
        unsafe_commands=unsafe, commands_after_fault=after_hold,
        threads=(before[0], after[0]), sockets=(before[1], after[1]),
        extra={'moving_commands_after_fault': moving_after(robot, at),
               'underruns_after_fault': gaps,
               'retries_on_diagnostics': shown[0] if shown else None,
               'retries_in_outcome': result['retries'],
               'stop_to_hold_s': round(to_hold, 3)}))
    assert moved and not ended_early, node.process.log()[-3000:]
    assert unsafe == 0, 'a malformed value reached the command topic'
    assert shown and shown[1] == 'malformed', shown
    assert result['retries'] == 1, result
    assert to_hold <= CONTROL_PERIOD_S + MARGIN_S and after_hold == 0
    assert after[0] <= before[0], 'request threads outlived the episode'
    node.healthy()


NETWORK = {
    'connection reset (RST) mid-request': ('reset', lambda link: link.reset_next()),
    f'stall: request never answered (request_timeout_s {REQUEST_TIMEOUT_S:g})':
        ('stall', lambda link: link.stall_next()),
}


@pytest.mark.parametrize('name', list(NETWORK))
def test_a_lost_request_is_retried_holding_if_the_plan_runs_dry(node, link, fault_matrix,
                                                                name):
    node.ensure(request_retries=RETRIES)
    robot = node.robot
    kind, arm = NETWORK[name]
    seen = link.stats().faults.get(kind, 0)
    index, before = node.run_episode()
    armed = time.monotonic()
    arm(link)
    bracket = fired(link, kind, seen, armed)
    assert bracket is not None
    at = bracket[0]
    # The lost request fails (at once, or after the timeout), is retried after the backoff.
    shown = wait_until(lambda: retries_shown(robot, at)[0] >= 1 and retries_shown(robot, at),
                       REQUEST_TIMEOUT_S + 5)
    recovered = wait_until(lambda: moving_after(robot, at + REQUEST_TIMEOUT_S + BACKOFF_S)
                           >= 2 * MOTION, 10)
    # Look while the arm moves, so that no underrun is cut off half way by the look.
    wait_until(lambda: not is_hold(robot.command_list()[-1][1]), 5)
    ended_early = len(robot.outcomes) > index
    sent = commands_after(robot, armed)
    gaps = underrun_gaps(robot, armed)
    holds = holds_after(robot, armed)
    hold_calls = [t for t in robot.hold_times if t > armed]
    to_hold, after_hold, result = stop_and_measure(node, index)
    after = settled_counts(node.pid, before)
    fault_matrix.record(FaultRow(
        area='network', case=f'{name}, mid-episode, request_retries {RETRIES}',
        outcome=f'retried; the episode went on: {len(gaps)} underrun hold(s) while the plan '
                'was dry, each resumed; an explicit stop then holds',
        unsafe_commands=sum(not is_finite(msg) for _, msg in sent),
        commands_after_fault=after_hold, threads=(before[0], after[0]),
        sockets=(before[1], after[1]),
        extra={'commands_after_fault': len(sent), 'holds': len(holds),
               'hold_service_calls': len(hold_calls),
               'underruns (last move to hold s, held s)': gaps,
               'retries_on_diagnostics': shown[0] if shown else None,
               'retries_in_outcome': result['retries'],
               'stop_to_hold_s': round(to_hold, 3)}))
    assert shown and shown[1] == 'unavailable', shown
    assert recovered and not ended_early, node.process.log()[-3000:]
    assert all(is_finite(msg) for _, msg in sent)
    # Every underrun held within a control period of the plan running dry, and resumed.
    assert all(dry <= CONTROL_PERIOD_S + MARGIN_S and held is not None for dry, held in gaps), \
        (gaps, node.process.log()[-3000:])
    assert len(hold_calls) >= len(gaps), (hold_calls, gaps)
    assert to_hold <= CONTROL_PERIOD_S + MARGIN_S and after_hold == 0
    assert after[0] <= before[0], 'request threads outlived the episode'
    node.healthy()


# -- faults that end the episode holding -----------------------------------------------------

def _error_body(status: str, message: str) -> bytes:
    return json.dumps({'detail': {'status': status, 'message': message}}).encode()


@dataclass(frozen=True)
class Refusal:
    case: str
    status: int
    body: bytes
    diagnosis: str  # part of the gateway status's message


REFUSALS = [
    # A gateway that quotes the key back: the node must not pass it on anywhere.
    Refusal('401 key refused mid-episode (the answer quotes the key)', 401,
            _error_body('unauthorized', f'key {NODE_KEY} revoked'), 'refused the API key'),
    Refusal('402 out of credit mid-episode', 402,
            _error_body('payment_required', 'credit exhausted'), 'out of credit'),
]


def end_measures(node: RunningNode, index: int, at: float) -> dict[str, Any]:
    """After a fault at `at` that must end the episode: outcome, first hold, what followed."""
    robot = node.robot
    result = outcome_after(robot, index, 15)
    held, command, call = first_hold(robot, at)
    time.sleep(SETTLE_S)
    holds = holds_after(robot, at)
    return {'result': result, 'held': held, 'hold_command': command, 'hold_call': call,
            'moving_after_hold': moving_after(robot, command) if command else None,
            'last_hold': holds[-1] if holds else None,
            'after_last_hold': len(commands_after(robot, holds[-1])) if holds else None,
            'unsafe': sum(not is_finite(msg) for _, msg in commands_after(robot, at))}


def hold_timing(got: dict[str, Any], at: float, bound: float) -> dict[str, Any]:
    """Matrix extras: the bound, and the command and the service call, from the fault."""
    def since(t: float | None) -> float | None:
        return None if t is None else round(t - at, 3)
    return {'bound_s': round(bound, 3), 'hold_command_s': since(got['hold_command']),
            'hold_service_s': since(got['hold_call'])}


def record_held_at_once(fault_matrix: FaultMatrix, got: dict[str, Any],
                        bracket: tuple[float, float], counts: tuple[Any, Any], unsafe: int,
                        **row: str) -> None:
    """Record a fault that ends the episode at once, and check it held within a period."""
    (at, seen_at), (before, after) = bracket, counts
    result, held = got['result'], got['held']
    fault_matrix.record(FaultRow(
        **row, time_to_hold_s=None if held is None else round(held - at, 3),
        commands_after_fault=got['after_last_hold'], unsafe_commands=unsafe,
        threads=(before[0], after[0]), sockets=(before[1], after[1]),
        extra=dict(hold_timing(got, at, CONTROL_PERIOD_S + MARGIN_S),
                   fault_time_uncertainty_s=round(seen_at - at, 3))))
    assert result is not None and result['outcome'] == 'error', result
    # The fault came between `at` and `seen_at`; held - seen_at is the node's delay at most.
    assert held is not None and held - seen_at <= CONTROL_PERIOD_S + MARGIN_S, (held, bracket)
    assert got['hold_command'] is not None, 'no hold command'
    assert got['moving_after_hold'] == 0 and got['after_last_hold'] == 0


@pytest.mark.parametrize('refusal', REFUSALS, ids=lambda r: str(r.status))
def test_a_refused_request_ends_the_episode_holding_at_once(
        node, link, fault_matrix, refusal):
    node.ensure(request_retries=RETRIES)
    robot = node.robot
    seen, index, before, _, bracket = respond_mid_episode(node, link, refusal.status,
                                                          refusal.body)
    at = bracket[0]
    got = end_measures(node, index, at)
    result = got['result']
    gateway = wait_until(lambda: [s for _, s in statuses_after(robot, at, 'gateway')
                                  if s.level == ERROR], 5)
    texts = [s.message + ''.join(kv.value for kv in s.values)
             for _, s in list(robot.diagnostics)]
    after = settled_counts(node.pid, before)
    values = status_values(gateway[-1]) if gateway else {}
    record_held_at_once(
        fault_matrix, got, bracket, (before, after), got['unsafe'], area='gateway',
        case=refusal.case,
        outcome=f'episode ends holding at once, not retried ({result and result["outcome"]}): '
                f'{result and result["reason"]}; /diagnostics: '
                f'{gateway[-1].message if gateway else "no ERROR"}')
    assert got['hold_call'], 'the hold service was not called'
    assert gateway and refusal.diagnosis in gateway[-1].message, gateway
    assert values.get('retries') == '0' and result['retries'] == 0, 'retried: deterministic'
    assert link.stats().faults['respond'] == seen + 1
    assert not any(NODE_KEY in text for text in texts), 'the key reached /diagnostics'
    assert not any(NODE_KEY in text for text in robot.outcomes), 'the key reached the outcome'
    assert after[0] <= before[0], 'request threads outlived the episode'
    node.healthy()


def test_the_gateway_stopping_holds_when_the_plan_runs_dry_and_ends_after_the_retries(
        node, link, gateway, fault_matrix):
    node.ensure(request_retries=RETRIES)
    robot = node.robot
    index, before = node.run_episode()
    stopping = time.monotonic()
    try:
        gateway.stop()  # SIGTERM: requests in flight may still be answered
        gone = time.monotonic()
        got = end_measures(node, index, stopping)
        result, held = got['result'], got['held']
        warned = wait_until(lambda: retries_shown(robot, stopping)[2], 1)
        ended = wait_until(lambda: [s for _, s in statuses_after(robot, gone, 'gateway')
                                    if s.level == ERROR], 5)
        holds = holds_after(robot, stopping)
        gaps = underrun_gaps(robot, stopping)
        ended_at = max((when for when, _ in robot.command_list()), default=gone)
        silent = len(commands_after(robot, got['last_hold'])) if got['last_hold'] else None
    finally:
        gateway.start()  # same port, warm: the proxy finds it again
    # The node recovers without a restart: a new explicit start moves again.
    index2 = len(robot.outcomes)
    started = time.monotonic()
    answer = robot.start_episode()
    resumed = answer.success and wait_until(lambda: moving_after(robot, started) >= MOTION, 20)
    to_hold, after_hold, _ = stop_and_measure(node, index2) if answer.success \
        else (None, None, {})
    after = settled_counts(node.pid, before)
    fault_matrix.record(FaultRow(
        area='gateway', case=f'gateway stopped mid-episode, not restarted (request_retries '
        f'{RETRIES}, backoff {BACKOFF_S:g} s)',
        outcome=f'underrun hold when the plan ran dry, episode ended holding after the retries '
                f'({result and result["reason"]}); nothing published after; restarted gateway: '
                'a new start_episode moves',
        time_to_hold_s=None if held is None else round(held - stopping, 3),
        commands_after_fault=got['after_last_hold'], unsafe_commands=got['unsafe'],
        threads=(before[0], after[0]), sockets=(before[1], after[1]),
        extra={**hold_timing(got, stopping, PLAN_S + CONTROL_PERIOD_S + MARGIN_S),
               'stop_call_s': round(gone - stopping, 3), 'holds': len(holds),
               'underruns (last move to hold s, held s)': gaps,
               'end_after_stop_s': round(ended_at - stopping, 3),
               'warned_retrying': bool(warned),
               'gateway_status': ended[-1].message if ended else None}))
    assert result is not None and result['outcome'] == 'error', result
    assert held is not None and held - stopping <= PLAN_S + CONTROL_PERIOD_S + MARGIN_S, \
        (held, stopping)
    assert gaps and gaps[0][0] <= CONTROL_PERIOD_S + MARGIN_S, gaps
    assert got['after_last_hold'] == 0 and silent == 0 and got['unsafe'] == 0
    assert got['hold_call'], 'the hold service was not called'
    assert warned, 'no WARN while retrying'
    assert ended and f'after {RETRIES} retries' in ended[-1].message, ended
    assert result['retries'] == RETRIES, result
    assert resumed, node.process.log()[-3000:]
    assert to_hold <= CONTROL_PERIOD_S + MARGIN_S and after_hold == 0
    assert after[0] <= before[0], 'request threads outlived the episode'
    node.healthy()


@pytest.mark.parametrize('name', list(MALFORMED))
def test_without_retries_a_malformed_answer_ends_the_episode_holding(
        node, link, real_answer, fault_matrix, name):
    node.ensure(request_retries=0)
    robot = node.robot
    body, content_type = MALFORMED[name](real_answer)
    _, index, before, _, bracket = respond_mid_episode(node, link, 200, body, content_type)
    at = bracket[0]
    got = end_measures(node, index, at)
    result = got['result']
    unsafe = unsafe_commands(commands_after(robot, at))
    after = settled_counts(node.pid, before)
    record_held_at_once(
        fault_matrix, got, bracket, (before, after), unsafe, area='malformed answer',
        case=f'{name}, mid-episode, request_retries 0',
        outcome=f'episode ends holding ({result and result["outcome"]}): '
                f'{result and result["reason"][:90]}')
    assert unsafe == 0 and got['hold_call']
    assert after[0] <= before[0], 'request threads outlived the episode'
    node.healthy()


# -- TLS -------------------------------------------------------------------------------------

def configure_failures(process: PolicyNodeProcess, count: int) -> list[str]:
    """Return the node's 'configure failed' log lines, waiting until there are `count`."""
    def lines():
        return [ln for ln in process.log().splitlines() if 'configure failed' in ln]
    wait_until(lambda: len(lines()) >= count, 5)
    return lines()


def test_tls_needs_ca_file_and_configure_says_so(ros, tls_files, fault_matrix):
    cert, key = tls_files
    with GatewayProcess(['--time-scale', str(NODE_SCALE), '--start-warm'],
                        keys={NODE_KEY: 10**6}, certfile=cert, keyfile=key) as tls:
        robot = Robot(ros.node, 'gwtls')
        process = PolicyNodeProcess('gwtls', node_parameters(
            base_url=tls.base_url, max_actions=10**6, start_on_activate=False), NODE_ENV)
        try:
            assert wait_until(robot.change_client.service_is_ready, 20), process.log()
            untrusted = robot.configure()
            refused = configure_failures(process, 1)
            assert robot.set_parameters(ca_file='/nonexistent/ca.pem')[0].successful
            missing = robot.configure()
            unreadable = configure_failures(process, 2)
            assert robot.set_parameters(ca_file=cert)[0].successful
            assert robot.configure(), process.log()
            assert robot.activate(), process.log()
            started = time.monotonic()
            assert robot.start_episode().success
            moved = wait_until(lambda: moving_after(robot, started) >= MOTION, 20)
            stopped = time.monotonic()
            assert robot.stop_episode().success
            held = wait_until(lambda: holds_after(robot, stopped), 3)
            time.sleep(SETTLE_S)
            after_hold = len(commands_after(robot, held[-1])) if held else None
            fault_matrix.record(FaultRow(
                area='network', case='node against an HTTPS gateway with a self-signed '
                'certificate',
                outcome='without ca_file configure fails naming the certificate and ca_file '
                '(node stays unconfigured); a ca_file that cannot be read fails naming it; '
                'with ca_file the episode moves',
                commands_after_fault=after_hold,
                extra={'configure_message': refused[-1].split('configure failed: ')[-1]
                       if refused else None}))
            assert not untrusted and refused, process.log()
            assert 'failed verification' in refused[-1] and 'ca_file' in refused[-1]
            assert 'verify=' not in refused[-1], 'advice for the client API, not the node'
            assert not missing and 'parameter ca_file' in unreadable[-1], unreadable
            assert moved and held and after_hold == 0
            assert process.proc.poll() is None
            assert log_faults(process.log()) == [], process.log()
        finally:
            robot.close()
            process.stop()


# -- what /diagnostics says, without processes ---------------------------------------------------

def test_the_gateway_status_warns_while_retrying_and_errs_once_the_retries_are_spent():
    def gateway(**fields):
        return build_statuses(Health(node_state='active', model='pi05-droid', retry_limit=2,
                                     **fields), 'policy_node', 'arm')[0]

    retrying = gateway(episode_state='underrun', retries=3, retries_in_a_row=1,
                       last_transient_error='200 answer is text/html, not JSON',
                       last_transient_error_kind='malformed', latency_p50_s=0.1)
    assert retrying.level == WARN and 'retry 1 of 2' in retrying.message
    assert status_values(retrying)['retries'] == '3'
    assert status_values(retrying)['last transient error kind'] == 'malformed'
    recovered = gateway(episode_state='running', retries=3, latency_p50_s=0.1,
                        last_transient_error='lost', last_transient_error_kind='unavailable')
    assert recovered.level == OK and status_values(recovered)['last transient error'] == 'lost'
    spent = gateway(episode_state='ended', retries=2, retries_in_a_row=2,
                    last_error='connection lost', last_error_kind='unavailable')
    assert spent.level == ERROR and 'after 2 retries in a row' in spent.message
    assert error_kind(CertificateError('untrusted')) == 'certificate'
    untrusted = gateway(episode_state='ended', last_error='untrusted',
                        last_error_kind='certificate')
    assert untrusted.level == ERROR and 'ca_file' in untrusted.message
