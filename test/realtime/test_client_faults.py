"""
The client under faults: TLS trust, gateway restarts, and (through FaultProxy) a bad network.

Each case records a row of docs/RELIABILITY.md with what it measured.
"""

import json
import math
import threading
import time

from fixtures_gateway import gateway_fixture, MAIN_KEY, TEST_DIR
from observations import observation
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.faults import FaultProxy
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.fault_matrix import FaultRow, settled
from sequence_ai_ros.harness.proc_stats import open_sockets

KEY = 'seq_client_fault_tests_key_000001'
OBS = observation()


def accept(action):
    return True


def connect(gateway, model='pi05-droid', **kwargs):
    # /v1/act: the fault proxy stands in front of the gateway, and a direct worker's address
    # comes from the connect answer, past the proxy.
    kwargs.setdefault('api_key', KEY)
    kwargs.setdefault('protocol', 'v1')
    return sai.connect(model, base_url=gateway.base_url, **kwargs)


# -- TLS ---------------------------------------------------------------------------------------

def test_tls_is_verified_by_default_and_a_bad_certificate_is_a_clear_error(
        tls_gateway, tls_files, fault_matrix):
    with connect(tls_gateway, api_key=MAIN_KEY) as policy:  # self-signed: not in the system's CAs
        with pytest.raises(sai.CertificateError, match='failed verification') as caught:
            policy.predict(OBS)
    assert 'verify=' in str(caught.value) and MAIN_KEY not in str(caught.value)
    with connect(tls_gateway, api_key=MAIN_KEY, verify=tls_files[0]) as policy:  # its CA: works
        assert len(policy.predict(OBS).action_chunk) == 15
    with pytest.raises(ValueError, match='verification stays on'):
        connect(tls_gateway, api_key=MAIN_KEY, verify=False)
    fault_matrix.record(FaultRow(
        area='network', case='TLS: self-signed certificate, not trusted',
        outcome='CertificateError naming the reason and verify=; trusted with verify=<CA file>; '
        'verify=False refused'))


def test_a_certificate_error_is_not_retried(tls_gateway):
    with connect(tls_gateway, api_key=MAIN_KEY) as policy:
        started = time.monotonic()
        with pytest.raises(sai.CertificateError):
            policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=5,
                       retry_backoff_s=5.0)
        assert time.monotonic() - started < 5.0, 'a deterministic error must not back off'


# -- gateway restarts and transient failures ---------------------------------------------------

def test_a_gateway_restart_mid_run_is_ridden_through_holding_meanwhile(fault_matrix):
    with GatewayProcess(['--time-scale', '0.2', '--start-warm'], keys={KEY: 1000}) as gw:
        actions, holds, underruns = [], [], []
        restarted = threading.Event()
        restarter = threading.Thread(target=lambda: (gw.restart(), restarted.set()))

        def act(action):
            actions.append(time.monotonic())
            if len(actions) == 20:  # from another thread: the loop must meet the outage
                restarter.start()
        with connect(gw) as policy:
            sockets = open_sockets()
            threads = threading.active_count()
            outcome = policy.run(lambda: OBS, act, validate=accept, max_actions=150,
                                 hold=lambda: holds.append(1), on_underrun=underruns.append,
                                 request_retries=5, retry_backoff_s=0.25)
        restarter.join()
        assert restarted.is_set()
        assert outcome.actions == 150 and not outcome.stopped_early
        assert len(holds) == outcome.underruns, 'held at each underrun start, not at the end'
        assert outcome.failed_requests >= 1, 'the restart must have cost at least one request'
        assert outcome.underruns >= 1, 'the plan ran dry while the gateway was down'
        threads_after = settled(threading.active_count, threads)
        sockets_after = settled(open_sockets, sockets)
        assert threads_after == threads and sockets_after <= sockets
    fault_matrix.record(FaultRow(
        area='gateway', case='gateway killed mid-run and restarted (warm), retries=5',
        outcome=f'run completed all 150 actions; {outcome.failed_requests} failed requests '
        f'retried; {outcome.underruns} underrun(s), longest {outcome.longest_underrun_s:.2f} s, '
        'each held from its start; no hold at the end', sockets=(sockets, sockets_after),
        threads=(threads, threads_after)))


def test_a_server_error_on_every_call_is_raised_after_the_retries_and_holds(fault_matrix):
    plugin = 'fixtures_gateway:make_plugin_policy'  # instruction 'raise' makes it fail
    with GatewayProcess(['--time-scale', '0.02', '--start-warm', '--policy', plugin],
                        keys={KEY: 100}, import_paths=[TEST_DIR]) as broken:
        holds = []
        with connect(broken) as policy:
            started = time.monotonic()
            with pytest.raises(sai.SequencesError) as caught:
                policy.run(lambda: observation(instruction='raise'), lambda a: None,
                           validate=accept, max_actions=5, hold=lambda: holds.append(1),
                           request_retries=2, retry_backoff_s=0.05)
            took = time.monotonic() - started
        acts = broken.stats()['acts']['accounts/sequences/models/pi05-droid']
    assert caught.value.status == 500 and holds == [1]
    assert acts.get('500') == 3, 'one call and two retries, no more'
    assert took >= 0.05 + 0.1, 'the retries back off'
    fault_matrix.record(FaultRow(
        area='gateway', case='500 on every call (policy raises), retries=2',
        outcome=f'SequencesError(500) raised after 3 calls in {took:.2f} s; hold called once'))


# -- the network, through FaultProxy -----------------------------------------------------------

warm_gateway = gateway_fixture(
    ['--time-scale', '0.2', '--start-warm'], name='warm_gateway', keys={KEY: 100000},
    doc='pi05-droid at 0.2 time scale: a 1.0 s chunk plays in 0.2 s, latency ~0.16 s.')


@pytest.fixture
def proxy(warm_gateway):
    with FaultProxy('127.0.0.1', warm_gateway.port) as link:
        yield link


def via(link, **kwargs):
    kwargs.setdefault('api_key', KEY)
    return sai.connect('pi05-droid', base_url=link.url(), protocol='v1', **kwargs)


class Recorder:
    """Plays the robot for run(): records actions, chunks joined and holds."""

    def __init__(self, at=None, fault=None):
        self.actions, self.chunks, self.holds, self.starts = [], [], [], []
        self.at, self.fault = at, fault
        self.fault_time = None

    def act(self, action):
        self.actions.append(list(action))
        if len(self.actions) == self.at:
            self.fault_time = time.monotonic()
            self.fault()

    def hold(self):
        self.holds.append(time.monotonic())

    def stop_holds(self):
        """Count the holds beyond the one at each underrun's start: the loop's stop holds."""
        return len(self.holds) - len(self.starts)

    def run(self, policy, max_actions=150, **kwargs):
        return policy.run(lambda: OBS, self.act, validate=accept, hold=self.hold,
                          on_underrun_start=lambda: self.starts.append(time.monotonic()),
                          on_chunk=self.chunks.append, max_actions=max_actions, **kwargs)

    def assert_only_model_actions(self):
        """Every action played is a step of a chunk that was joined (pi05: no blending)."""
        produced = {tuple(step) for p in self.chunks for step in p.action_chunk.steps}
        stray = [a for a in self.actions if tuple(a) not in produced]
        assert not stray, f'{len(stray)} actions played that no joined chunk holds'
        assert all(math.isfinite(v) for a in self.actions for v in a)


def leak_counts():
    return open_sockets(), threading.active_count()


def test_latency_and_jitter_cost_nothing_but_time(proxy, fault_matrix):
    proxy.latency_s, proxy.jitter_s = 0.02, 0.01  # 40 ms RTT + up to 20 ms
    robot = Recorder()
    with via(proxy) as policy:
        outcome = robot.run(policy)
    robot.assert_only_model_actions()
    assert outcome.actions == 150 and outcome.failed_requests == 0 and robot.stop_holds() == 0
    assert proxy.stats().accepted <= 2, 'kept-alive: one connection per request in flight'
    fault_matrix.record(FaultRow(
        area='network', case='40 ms RTT + 0-20 ms jitter per packet, whole run',
        outcome=f'150/150 actions, {outcome.underruns} underruns, {proxy.stats().accepted} '
        f'connection(s), latency p95 {outcome.latency_p95_s:.3f} s'))


def _one_call_fails_then_recovers(link, arm, error, match, **connect_kwargs):
    """Arm a fault, see predict fail with `error`, then succeed; return (took_s, counts)."""
    with via(link, **connect_kwargs) as policy:
        policy.predict(OBS)
        before = leak_counts()
        arm()
        started = time.monotonic()
        with pytest.raises(error, match=match) as caught:
            policy.predict(OBS)
        took = time.monotonic() - started
        link.clear()
        assert len(policy.predict(OBS).action_chunk) == 15, 'the next request recovers'
        after = (settled(open_sockets, before[0]), settled(threading.active_count, before[1]))
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)
    assert after[0] <= before[0] and after[1] == before[1]
    return took, before, after


NETWORK_FAULTS = {
    'reset': ('connection reset (RST) mid-request', lambda link: link.reset_next(),
              sai.Unavailable, 'lost during'),
    'cut': ('answer cut after 100 bytes', lambda link: link.cut_after(100),
            sai.Unavailable, 'lost during'),
    'stall': ('stall: request read, never answered (timeout_s 0.5)',
              lambda link: link.stall_next(), sai.Unavailable, 'timed out'),
    'drip': ('answer dripped 8 bytes per 50 ms (timeout_s 0.5)',
             lambda link: link.drip(8, 0.05), sai.Unavailable, 'still arriving|timed out'),
    'refuse': ('every new connection refused', lambda link: setattr(link, 'refuse', True),
               sai.Unavailable, 'could not reach|lost during'),
}


@pytest.mark.parametrize('name', sorted(NETWORK_FAULTS))
def test_a_network_fault_is_a_typed_error_and_the_next_request_recovers(
        proxy, fault_matrix, name):
    case, arm, error, match = NETWORK_FAULTS[name]
    if name == 'refuse':
        def arm(link=proxy):  # a kept-alive connection must die too, to meet the refusal
            link.refuse = True
            link.reset_next()
    took, before, after = _one_call_fails_then_recovers(
        proxy, lambda: arm(proxy), error, match, timeout_s=0.5)
    assert took < 0.5 + 1.0, 'no hang beyond timeout_s (plus slack for a loaded machine)'
    fault_matrix.record(FaultRow(
        area='network', case=case,
        outcome=f'{error.__name__} after {took:.2f} s; the next request succeeds on a new '
        'connection', sockets=(before[0], after[0]), threads=(before[1], after[1])))


def test_a_slow_link_slows_the_request_and_loses_nothing(proxy, fault_matrix):
    proxy.bandwidth_bytes_per_s = 20000  # the ~20 kB observation takes about a second
    with via(proxy) as policy:
        started = time.monotonic()
        prediction = policy.predict(OBS)
        took = time.monotonic() - started
    assert len(prediction.action_chunk) == 15 and took > 0.5
    fault_matrix.record(FaultRow(
        area='network', case='bandwidth capped at 20 kB/s', outcome=f'answer complete after '
        f'{took:.2f} s (the body is the cost: ~20 kB up)'))


MID_RUN_NETWORK = {
    'reset': lambda link: link.reset_next(),
    'cut': lambda link: link.cut_after(200),
    'stall': lambda link: link.stall_next(),
}


@pytest.mark.parametrize('name', sorted(MID_RUN_NETWORK))
def test_a_network_fault_mid_run_is_retried_while_the_plan_plays(proxy, fault_matrix, name):
    robot = Recorder(at=20, fault=lambda: MID_RUN_NETWORK[name](proxy))
    with via(proxy, timeout_s=0.5) as policy:
        outcome = robot.run(policy)
    robot.assert_only_model_actions()
    assert outcome.actions == 150 and robot.stop_holds() == 0 and outcome.failed_requests == 1
    fault_matrix.record(FaultRow(
        area='network', case=f'{NETWORK_FAULTS[name][0]}, mid-run',
        outcome=f'retried; run completed 150/150; {outcome.underruns} underrun(s), longest '
        f'{outcome.longest_underrun_s:.2f} s (arm held meanwhile)'))


# -- the gateway misbehaving, through FaultProxy's canned answers -------------------------------

def _error_body(status, message, **detail):
    return json.dumps({'detail': {'status': status, 'message': message, **detail}}).encode()


def test_a_burst_of_5xx_is_ridden_through(proxy, fault_matrix):
    burst = lambda: proxy.respond_next(2, 502, b'<html>bad gateway</html>', 'text/html')  # noqa
    robot = Recorder(at=20, fault=burst)
    with via(proxy) as policy:
        outcome = robot.run(policy, request_retries=2, retry_backoff_s=0.02)
    robot.assert_only_model_actions()
    assert outcome.actions == 150 and outcome.failed_requests == 2 and robot.stop_holds() == 0
    fault_matrix.record(FaultRow(
        area='gateway', case='burst of two 502s mid-run (retries=2)',
        outcome=f'ridden through: 150/150 actions, {outcome.underruns} underrun(s)'))


@pytest.mark.parametrize('status, error, body', [
    (401, sai.AuthError, _error_body('unauthorized', 'key revoked')),
    (402, sai.OutOfCredit, _error_body('payment_required', 'credit exhausted')),
    (503, sai.Unavailable, _error_body('warming_up', 'model warming', retry_after_s=90)),
], ids=['401-revoked', '402-credit', '503-warming'])
def test_a_deterministic_error_mid_run_stops_at_once_and_holds(
        proxy, fault_matrix, status, error, body):
    robot = Recorder(at=20, fault=lambda: proxy.respond_next(1, status, body))
    with via(proxy) as policy:
        with pytest.raises(error):
            robot.run(policy, request_retries=5)
    robot.assert_only_model_actions()
    assert robot.stop_holds() == 1 and len(robot.actions) < 150
    asked = proxy.stats().faults['respond']
    assert asked == 1, 'not retried'
    fault_matrix.record(FaultRow(
        area='gateway', case=f'{status} mid-run ({error.__name__})',
        outcome=f'raised at once (no retry), hold called once, {len(robot.actions)} actions '
        'played, all from chunks before the fault'))


def test_credit_running_out_mid_run_stops_and_holds(fault_matrix):
    poor = 'seq_client_fault_tests_poor_00003'
    with GatewayProcess(['--time-scale', '0.2', '--start-warm'], keys={poor: 4}) as gw:
        robot = Recorder()
        with sai.connect('pi05-droid', base_url=gw.base_url, api_key=poor,
                         protocol='v1') as policy:
            with pytest.raises(sai.OutOfCredit):
                robot.run(policy)
    robot.assert_only_model_actions()
    # 4 chunks were paid for; the fourth may still be in flight when the fifth's 402 lands,
    # and a deterministic error stops the run at once rather than wait for it.
    assert len(robot.chunks) in (3, 4) and robot.stop_holds() == 1
    assert len(robot.actions) <= 4 * 15
    fault_matrix.record(FaultRow(
        area='gateway', case='credit runs out mid-run (real gateway, 4 credits)',
        outcome=f'OutOfCredit after {len(robot.chunks)} chunks joined; {len(robot.actions)} '
        'actions played, hold once'))


def _real_answer(gateway):
    with via_gateway(gateway) as policy:
        body = policy._transport.post('/v1/act', {
            'model': 'accounts/sequences/models/pi05-droid', 'observation': OBS.to_wire()})
    return body


def via_gateway(gateway):
    return sai.connect('pi05-droid', base_url=gateway.base_url, api_key=KEY, protocol='v1')


def _mutated(answer, mutate):
    body = json.loads(json.dumps(answer))
    mutate(body['action_chunk'])
    return json.dumps(body, allow_nan=True).encode()


def _million_steps(answer):
    head = json.dumps({**answer, 'action_chunk': {**answer['action_chunk'], 'steps': []}})
    step = b'{"index": 0, "values": [7.77, 7.77, 7.77, 7.77, 7.77, 7.77, 7.77, 0.0]},'
    return head.replace('"steps": []', '"steps": [' + (step * 1_000_000)[:-1].decode() + ']')


MALFORMED = {
    'not JSON (HTML)': lambda a: (b'<html>portal</html>', 'text/html'),
    'JSON with text/plain type': lambda a: (json.dumps(a).encode(), 'text/plain'),
    'no content type': lambda a: (json.dumps(a).encode(), None),
    'missing action_chunk': lambda a: (json.dumps({'id': 'x'}).encode(), 'application/json'),
    'NaN values': lambda a: (_mutated(a, lambda c: c['steps'][3]['values'].__setitem__(
        0, float('nan'))), 'application/json'),
    'inf values': lambda a: (_mutated(a, lambda c: c['steps'][0]['values'].__setitem__(
        1, float('inf'))), 'application/json'),
    'wrong action_dim': lambda a: (_mutated(a, lambda c: [s['values'].pop() for s in
                                                          c['steps']]), 'application/json'),
    'empty steps': lambda a: (_mutated(a, lambda c: c.__setitem__('steps', [])),
                              'application/json'),
    'zero rate': lambda a: (_mutated(a, lambda c: c.__setitem__('control_frequency_hz', 0)),
                            'application/json'),
    'negative rate': lambda a: (_mutated(
        a, lambda c: c.__setitem__('control_frequency_hz', -15.0)), 'application/json'),
    'a million steps (~70 MB)': lambda a: (_million_steps(a).encode(), 'application/json'),
}


@pytest.fixture(scope='module')
def real_answer(warm_gateway):
    return _real_answer(warm_gateway)


@pytest.mark.parametrize('name', list(MALFORMED))
def test_a_malformed_answer_is_never_played(proxy, real_answer, fault_matrix, name):
    body, content_type = MALFORMED[name](real_answer)
    robot = Recorder(at=20, fault=lambda: proxy.respond_next(1, 200, body, content_type))
    with via(proxy) as policy:
        outcome = robot.run(policy, request_retries=1, retry_backoff_s=0.02)
    robot.assert_only_model_actions()
    assert not any(7.77 in action for action in robot.actions)
    assert outcome.actions == 150 and outcome.failed_requests == 1 and robot.stop_holds() == 0
    # Without retries the same answer stops the run with the typed error, holding.
    robot = Recorder(at=20, fault=lambda: proxy.respond_next(1, 200, body, content_type))
    with via(proxy) as policy:
        with pytest.raises(sai.MalformedResponse) as caught:
            robot.run(policy, request_retries=0)
    robot.assert_only_model_actions()
    assert robot.stop_holds() == 1
    fault_matrix.record(FaultRow(
        area='malformed answer', case=name,
        outcome=f'MalformedResponse ("{str(caught.value)[:70]}"); retried once and the run '
        'completed; with retries=0 raised and held; 0 of its actions played'))
