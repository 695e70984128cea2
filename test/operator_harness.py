"""
One policy node process through an operator's day: its set-up and the checks every step shares.

The node runs on the v1 or the direct protocol against a warm gateway that serves that protocol
only, the reference policy naming the task it was asked for (instruction_policy.py), with a
safety gate and a hold service, explicit starts, and episodes of MAX_ACTIONS actions (3 s: room
for a fault after the motion starts, short enough to complete). The robot is an AuditedRobot
(operator_robot.py). Faults (SessionFaults): on v1 one FaultProxy carries everything; on direct
the node's base_url goes through one FaultProxy in front of the gateway (the control plane) and
its acts through a second in front of the worker, which the gateway names in its connect
answer (--worker-url). Transport faults (reset, stall) go on the proxy the acts take; canned
answers (502s, malformed, refusals, an action outside the limits) come from the gateway itself
(/v1/_local/faults), since a proxy cannot answer inside the worker's pinned TLS.

A step starts in the session's resting state (active, no episode running, a healthy robot)
and ends there; `Session.settled` checks that after each: the node alive with no traceback,
active, no internal error on /diagnostics, no unsafe command, threads and DDS sockets back to
the baseline taken after the warm-up episode and HTTP connections within the pool.

Time to hold: each fault that obliges a hold has a moment `since` from which the node may
need up to one control period plus MARGIN_S (DDS both ways and a scheduler on a loaded
two-core machine), plus how long it may need to see the fault (an input's timeout, one period
of the input that carries it); no moving command may arrive after that deadline.
"""

import base64
import contextlib
from dataclasses import dataclass, field
import json
from pathlib import Path
import time
from types import SimpleNamespace

from diagnostic_msgs.msg import DiagnosticStatus
import httpx
from operator_robot import AuditedRobot
from ros_harness import (
    commands_after,
    CONTROL_PERIOD_S,
    final_hold,
    is_hold,
    MOTION,
    moving_after,
    NODE_ENV,
    NODE_KEY,
    node_parameters,
    NODE_SCALE,
    outcome_after,
    PolicyNodeProcess,
    RunningNode,
    status_values,
    statuses_after,
    wait_until,
)
from sequence_ai_ros.contract.error_codes import code_for_status
from sequence_ai_ros.faults import FaultProxy
from sequence_ai_ros.gateway.direct.errors import DirectError
from sequence_ai_ros.gateway.process import free_port, GatewayProcess
from sequence_ai_ros.harness.direct_session import DirectSession
from sequence_ai_ros.harness.proc_stats import resident_kib
from system.test_node_gateway_faults import first_hold
from system.test_node_lifecycle_abuse import counts, no_growth, settle

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR
NAMESPACE = 'operator'
MAX_ACTIONS = 225  # 3 s at 75 Hz (15 chunks of 15)
RETRIES, BACKOFF_S = 2, 0.25
REQUEST_TIMEOUT_S = 1.5  # the gateway answers in ~0.08 s: 18x that is a stall, not a slow answer
STARTUP_TIMEOUT_S = 15.0
COLD_START_MODEL_S = 5.0  # 1 s of wall time at NODE_SCALE
JOINT_TIMEOUT_S, CAMERA_TIMEOUT_S, GATE_TIMEOUT_S = 0.5, 1.0, 1.0
MARGIN_S = 0.5
SETTLE_S = 0.4  # after the final hold: long enough for a stray command to show up
PLAN_S = 3 * NODE_SCALE  # motion in hand when the gateway goes: a chunk and two in flight
INSTRUCTION = 'reach the red disc'
TEST_DIR = str(Path(__file__).resolve().parent)
REPO = str(Path(__file__).resolve().parents[1])


PROTOCOLS = ('v1', 'direct')


def session_parameters(base_url: str, protocol: str) -> dict:
    """Return the node's parameters for an operator session against `base_url`."""
    return node_parameters(
        base_url=base_url, protocol=protocol, max_actions=MAX_ACTIONS, start_on_activate=False,
        request_timeout_s=REQUEST_TIMEOUT_S, request_retries=RETRIES, retry_backoff_s=BACKOFF_S,
        startup_timeout_s=STARTUP_TIMEOUT_S, safety_gate_topic='safety_gate',
        safety_gate_timeout_s=GATE_TIMEOUT_S, joint_state_timeout_s=JOINT_TIMEOUT_S,
        camera_timeout_s=CAMERA_TIMEOUT_S, instruction=INSTRUCTION)


def session_gateway(protocol: str, worker: list[str]) -> GatewayProcess:
    """
    Return a warm gateway serving `protocol` only, not started (it may restart cold).

    `worker` are its --worker-port and --worker-url flags on direct.
    """
    # No keepalive within a session (the seat is kept 20000 s here): the gateway restarted
    # mid-episode is met by the acts, never by a keepalive racing them (a seat lost instead
    # of the episode: test_node_direct's case).
    seats = ['--seat-ttl-s', '100000'] if protocol == 'direct' else []
    return GatewayProcess(
        ['--protocol', protocol, '--time-scale', str(NODE_SCALE), '--latency-median-s', '0.4',
         '--cold-start-s', str(COLD_START_MODEL_S), '--idle-cold-s', '1000000', '--policy',
         'instruction_policy:make_echo_policy', '--start-warm', *seats, *worker],
        keys={NODE_KEY: 10**6}, import_paths=[TEST_DIR])


class SessionFaults:
    """
    Where a step's faults go, the same steps on either protocol.

    Transport faults (reset, stall) on `link`, the proxy the acts go through; canned answers
    from the gateway (/v1/_local/faults), counted as `respond` in `stats().faults` as the
    proxy counts its own, so that operator_steps' `fired` brackets either.
    """

    def __init__(self, protocol: str, gateway: GatewayProcess, link: FaultProxy,
                 control: FaultProxy) -> None:
        self.protocol, self.gateway = protocol, gateway
        self.link, self.control = link, control
        self._http = httpx.Client(timeout=10.0)

    def _local(self, method: str, path: str, **kwargs) -> dict:
        url = self.gateway.base_url + path
        try:
            answer = self._http.request(method, url, **kwargs)
        except httpx.TransportError:  # a restarted gateway: the kept connection is gone
            answer = self._http.request(method, url, **kwargs)
        answer.raise_for_status()
        return answer.json()

    def stats(self) -> SimpleNamespace:
        """Return the faults that fired so far: the link's, and the gateway's answers."""
        sent = self._local('GET', '/v1/_local/stats')['answer_faults']['sent']['act']
        return SimpleNamespace(faults={**self.link.stats().faults, 'respond': sent})

    def reset_next(self) -> None:
        """Reset the next request on the link the acts take."""
        self.link.reset_next()

    def stall_next(self) -> None:
        """Stall the next request on the link the acts take (until clear())."""
        self.link.stall_next()

    def respond_next(self, n: int, status: int, body: bytes,
                     content_type: str | None = 'application/json', on: str = 'act') -> None:
        """Answer the next n acts (or connects) with this answer, from the gateway."""
        self._local('POST', '/v1/_local/faults', json={
            'next': n, 'status': status, 'body_base64': base64.b64encode(body).decode(),
            'content_type': content_type, 'on': on})

    def refuse_next(self, n: int, status: int, v1_body: bytes) -> None:
        """
        Refuse the next n acts with `status`, in the words of the protocol in use.

        On direct a 401 at the worker refuses the direct secret, which the client mends by
        connecting again: a key refused is that connect refused too.
        """
        if self.protocol == 'v1':
            self.respond_next(n, status, v1_body)
            return
        body = coded_body(status, json.loads(v1_body)['detail']['message'])
        if status == 401:
            self.respond_next(1, status, body, on='connect')
        self.respond_next(n, status, body)

    def clear(self) -> None:
        """Make the links clean both ways and drop every canned answer still armed."""
        self.link.clear()
        self.control.clear()
        if self.gateway.running():  # a gateway that starts again starts with none armed
            self._local('DELETE', '/v1/_local/faults')

    def close(self) -> None:
        """Close the connection to the gateway's local routes."""
        self._http.close()


def coded_body(status: int, message: str) -> bytes:
    """Return the direct protocol's error body for `status` (its code from the table)."""
    return json.dumps(DirectError(code_for_status(status), message).body('r-operator')).encode()


class RobotStalled(Exception):
    """The episode ended holding because this side stopped sending an input: right, not planned."""


@dataclass
class Run:
    """One episode of a step: its outcome's index, when it was asked to start and its end."""

    index: int
    started: float
    ended: float = 0.0
    result: dict = field(default_factory=dict)


@dataclass
class Session:
    """The gateway, the faults in front of it, the node behind them, its robot, the records."""

    protocol: str
    gateway: GatewayProcess
    faults: SessionFaults
    node: RunningNode
    robot: AuditedRobot
    answer: dict  # one real act answer of the protocol, to build bad ones from
    baseline: tuple[int, int, int] = (0, 0, 0)  # threads, sockets, TCP sockets
    rss_kib: list[tuple[float, int]] = field(default_factory=list)
    # (what, seconds from `since` to the hold, seconds allowed) of every hold that was due.
    holds: list[tuple[str, float | None, float]] = field(default_factory=list)
    # Commands the order of arrival proves unsafe: motion after a hold that was due, or any
    # command after an episode's final hold (the robot's audit keeps the rest).
    unsafe: list[str] = field(default_factory=list)
    stalls: list[str] = field(default_factory=list)
    _due: list[tuple[str, float]] = field(default_factory=list)

    @property
    def proxy(self) -> FaultProxy:
        """Return the proxy the acts go through (the soak shapes its link)."""
        return self.faults.link

    def log_tail(self) -> str:
        return self.node.process.log()[-3000:]

    # -- episodes ----------------------------------------------------------------------------

    def begin(self, motion: int = MOTION, timeout: float = 20.0) -> Run:
        """Reset the robot, wait for fresh inputs, start an episode and wait for motion."""
        robot = self.robot
        robot.reset()
        # Fresh inputs, the gate heard open: a gate never heard counts as closed at once.
        self.expect_status('inputs', OK, 'fresh', time.monotonic() + 0.05,
                           values={'safety gate open': 'yes'})
        run = Run(len(robot.outcomes), time.monotonic())
        robot.quiet = False
        answer = robot.start_episode()
        assert answer.success, (answer.message, self.log_tail())
        if not wait_until(lambda: moving_after(robot, run.started) >= motion, timeout):
            if len(robot.outcomes) > run.index:
                self.ended_early(run)
            raise AssertionError(f'no motion within {timeout} s\n{self.log_tail()}')
        return run

    def ended_early(self, run: Run) -> None:
        """Raise RobotStalled if this side's pause explains the end, else say how it ended."""
        self.finish(run, 'running', '')  # no episode ends 'running': finish always raises

    def finish(self, run: Run, outcome: str, reason: str, timeout: float = 30.0) -> dict:
        """
        Wait for the episode's outcome and check it, its final hold and that nothing follows.

        A stale-input end that this side's own pause in sending explains raises RobotStalled.
        """
        robot = self.robot
        result = outcome_after(robot, run.index, timeout)
        assert result is not None, f'no outcome within {timeout} s\n{self.log_tail()}'
        held = None if result['outcome'] == 'completed' else final_hold(robot, run.started)
        time.sleep(SETTLE_S)
        robot.quiet = True
        run.ended, run.result = time.monotonic(), result
        sent = commands_after(robot, run.started)
        assert result['outcome'] == 'completed' or held is not None, 'the last command is no hold'
        if held is not None and robot.hold_offered:
            assert wait_until(lambda: [t for t in robot.hold_times if t > run.started], 3), \
                'the hold service was not called'
        if held is not None and commands_after(robot, held):
            self.unsafe.append(f'{len(commands_after(robot, held))} commands after the final hold')
        for what, deadline in self._due:
            late = [t for t, msg in commands_after(robot, deadline) if not is_hold(msg)]
            if late:
                self.unsafe.append(f'{what}: {len(late)} moving commands after the hold was due')
        self._due.clear()
        assert not self.unsafe, self.unsafe
        # Every command the node sent is one the episode counts: an action or a hold (and a
        # completed episode may come to rest at its last target: one command at rest).
        counted = result['actions'] + result['holds']
        settle = bool(sent) and result['outcome'] == 'completed' and is_hold(sent[-1][1])
        assert len(sent) <= counted + settle, (len(sent), result)
        if result['outcome'] != outcome or reason not in result['reason']:
            stall = self.stall_behind(result, run)
            if stall:
                raise RobotStalled(stall)
            raise AssertionError(f'expected {outcome} ({reason!r}), got {result}')
        if outcome == 'completed':
            assert result['actions'] == MAX_ACTIONS and sent, result
        return result

    def stop(self, run: Run) -> dict:
        """Stop the episode with ~/stop_episode; check the hold is prompt and the outcome."""
        asked = time.monotonic()
        answer = self.robot.stop_episode()
        if not answer.success and len(self.robot.outcomes) > run.index:
            self.ended_early(run)
        assert answer.success, answer.message
        self.check_hold('stop_episode', asked, asked + CONTROL_PERIOD_S + MARGIN_S)
        return self.finish(run, 'stopped', 'stop requested')

    def still_running(self, run: Run, since: float, motion: int = 2 * MOTION) -> None:
        """Assert the episode keeps moving after `since` (`motion` more moving commands)."""
        robot = self.robot
        moved = wait_until(lambda: moving_after(robot, since) >= motion
                           or len(robot.outcomes) > run.index, 15)
        if len(robot.outcomes) > run.index:
            self.ended_early(run)
        assert moved, f'no motion after {since}\n{self.log_tail()}'

    def check_hold(self, what: str, since: float, deadline: float) -> float:
        """
        Assert a hold came after `since` by `deadline`; return its time.

        The hold is its command or its service call, whichever came first; no moving command
        may arrive after the deadline. The delay is recorded in `holds`.
        """
        wait_s = max(0.0, deadline - time.monotonic()) + 3.0
        held, _, _ = first_hold(self.robot, since, timeout=wait_s)
        self.holds.append((what, None if held is None else round(held - since, 3),
                           round(deadline - since, 3)))
        assert held is not None, f'{what}: no hold after it\n{self.log_tail()}'
        assert held <= deadline, f'{what}: hold {held - since:.3f} s after, allowed ' \
                                 f'{deadline - since:.3f} s'
        self._due.append((what, deadline))  # finish() looks for motion after it
        return held

    def check_dry_hold(self, what: str, since: float) -> float:
        """
        Assert the first hold after `since` came as the plan ran dry; return its time.

        Within a control period (+ margin) of the last moving command before it, and within
        PLAN_S of `since` (the motion in hand when the gateway went).
        """
        robot = self.robot
        holds = wait_until(lambda: [t for t, m in commands_after(robot, since) if is_hold(m)],
                           PLAN_S + 10)
        assert holds, f'{what}: no hold\n{self.log_tail()}'
        moving = [t for t, m in commands_after(robot, since) if not is_hold(m) and t < holds[0]]
        dry = moving[-1] if moving else since
        self.holds.append((what, round(holds[0] - dry, 3), CONTROL_PERIOD_S + MARGIN_S))
        assert holds[0] - dry <= CONTROL_PERIOD_S + MARGIN_S, (what, holds[0] - dry)
        assert holds[0] - since <= PLAN_S + CONTROL_PERIOD_S + MARGIN_S, (what, holds[0] - since)
        return holds[0]

    def stall_behind(self, result: dict, run: Run) -> str:
        """Why this side's own pause in sending explains a stale-input end, or ''."""
        reason = result.get('reason', '')
        for text, kind, timeout in (('joint_states is', 'joints', JOINT_TIMEOUT_S),
                                    ('image_raw is', 'frames', CAMERA_TIMEOUT_S),
                                    ('silent (counts as closed)', 'gate', GATE_TIMEOUT_S)):
            gap = self.robot.sent_gap(kind, run.started, run.ended or time.monotonic())
            if text in reason and gap >= 0.9 * timeout:
                return f'{reason} (this side sent no {kind} for {gap:.2f} s)'
        return ''

    # -- /diagnostics ------------------------------------------------------------------------

    def expect_status(self, part: str, level: bytes, text: str, since: float,
                      timeout: float = 5.0, values: dict | None = None) -> DiagnosticStatus:
        """
        Wait for a `part` status at `level` whose message holds `text`, sent after `since`.

        With `values`, its key/values must hold those too.
        """
        def found():
            return [s for _, s in statuses_after(self.robot, since, part)
                    if s.level == level and text in s.message
                    and (values or {}).items() <= status_values(s).items()]
        seen = wait_until(found, timeout)
        recent = [(s.level, s.message) for _, s in statuses_after(self.robot, since, part)][-3:]
        assert seen, f'no {part} status {level!r} with {text!r} after {since}: {recent}'
        return seen[-1]

    # -- between steps -----------------------------------------------------------------------

    def prepare(self) -> None:
        """Before a step: a clean link, a healthy robot, a willing hold service."""
        self._due.clear()
        self.faults.clear()
        self.robot.reset()
        if not self.robot.hold_offered:
            self.robot.offer_hold_service()

    def settled(self) -> None:
        """After a step: alive, no traceback, active, no internal error, safe, no leak."""
        node, robot = self.node, self.robot
        node.healthy()
        assert robot.violations == [], robot.violations[:5]
        assert robot.state() == 'active', robot.state()
        statuses = wait_until(lambda: statuses_after(robot, time.monotonic() - 0.5, 'episode'),
                              3)
        assert statuses, 'no episode status on /diagnostics'
        episode = status_values(statuses[-1][1])
        assert episode['internal errors'] == '0', episode
        after = settle(node.pid, self.baseline)
        assert no_growth(self.baseline, after), (self.baseline, after)
        self.sample()
        robot.forget(time.monotonic() - 1.0)

    def recover(self) -> None:
        """After a failed or stalled step: back to the resting state, whatever it takes."""
        robot = self.robot
        self.prepare()
        if not self.gateway.running():
            self.gateway.start()
        robot.quiet = False  # the stop's hold is expected
        robot.stop_episode()
        if robot.state() == 'unconfigured':
            robot.configure()
        if robot.state() == 'inactive':
            robot.activate()
        robot.set_parameters(instruction=INSTRUCTION)
        time.sleep(1.0)
        robot.quiet = True

    def restart_gateway(self, cold: bool) -> None:
        """Stop the gateway and start it on the same port, warm or cold."""
        self.gateway.stop()
        args = [a for a in self.gateway.args if a != '--start-warm']
        self.gateway.args = args + ([] if cold else ['--start-warm'])
        self.gateway.start()

    def sample(self) -> tuple[float, int]:
        """Record the node's resident memory now; return (time, KiB)."""
        sample = (time.monotonic(), resident_kib(self.node.pid))
        self.rss_kib.append(sample)
        return sample


def real_answer(gateway: GatewayProcess, protocol: str) -> dict:
    """Return one real act answer of the gateway on `protocol`, to build bad answers from."""
    from fixtures_gateway import act_body, preset_observation
    if protocol == 'v1':
        answer = httpx.post(gateway.base_url + '/v1/act', json=act_body(), timeout=10.0,
                            headers={'Authorization': f'Bearer {NODE_KEY}'})
        answer.raise_for_status()
        return answer.json()
    robot = DirectSession(gateway.base_url, 'pi05-droid', NODE_KEY)
    try:
        robot.connect().raise_for_status()
        robot.observe('bad-answers', preset_observation()).raise_for_status()
        answer = robot.act('bad-answers')
        answer.raise_for_status()
        return answer.json()
    finally:
        robot.release()
        robot.close()


@contextlib.contextmanager
def fault_points(protocol: str):
    """Yield (gateway not started, SessionFaults): the proxies in front of it, started."""
    with contextlib.ExitStack() as stack:
        worker: list[str] = []
        link = None
        if protocol == 'direct':
            worker_port = free_port()
            link = stack.enter_context(FaultProxy('127.0.0.1', worker_port))
            worker = ['--worker-port', str(worker_port), '--worker-url', link.url('https')]
        gateway = session_gateway(protocol, worker)
        stack.callback(gateway.close)
        gateway.start()
        control = stack.enter_context(FaultProxy('127.0.0.1', gateway.port))
        faults = SessionFaults(protocol, gateway, link or control, control)
        stack.callback(faults.close)
        yield gateway, faults


@contextlib.contextmanager
def operator_session(ros, namespace: str = NAMESPACE, record_dir=None, protocol: str = 'v1'):
    """
    Start gateway, proxies and node, run a warm-up episode, yield the Session; stop them all.

    With `record_dir` the node records every episode there.

    Not ros_harness.running_node: its warm-up starts at once after activate, and a gate not
    heard yet ends that episode (rightly). The warm-up fills the connection pool, so the
    baseline of threads and sockets compares like with like.
    """
    with fault_points(protocol) as (gateway, faults):
        params = session_parameters(faults.control.url(), protocol)
        if record_dir is not None:
            params.update(record=True, record_dir=str(record_dir))
        robot = AuditedRobot(ros.node, namespace, params)
        process = PolicyNodeProcess(namespace, params, NODE_ENV)
        try:
            assert wait_until(robot.change_client.service_is_ready, 20), process.log()
            assert robot.configure() and robot.activate(), process.log()
            session = Session(protocol, gateway, faults,
                              RunningNode(robot, process, dict(params)), robot,
                              real_answer(gateway, protocol))
            session.stop(session.begin())
            session.baseline = counts(process.proc.pid)
            session.sample()
            yield session
        finally:
            robot.close()
            process.stop()
            assert NODE_KEY not in process.log(), 'the API key reached the log'
