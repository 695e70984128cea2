"""The client on the direct protocol against the local gateway as a real process."""

import contextlib
import dataclasses
import gc
import os
import signal
import threading
import time

from fixtures_gateway import gateway_fixture
import httpx
from observations import observation
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.gateway.process import free_port, GatewayProcess

KEY = 'seq_client_direct_tests_key_0001'
SCALE = 0.2
OBS = observation()

both = gateway_fixture(['--time-scale', str(SCALE), '--start-warm'], name='both',
                       keys={KEY: 100000})
direct_only = gateway_fixture(['--time-scale', str(SCALE), '--start-warm', '--protocol',
                               'direct'], name='direct_only', keys={KEY: 100000})
v1_only = gateway_fixture(['--time-scale', str(SCALE), '--start-warm', '--protocol', 'v1'],
                          name='v1_only', keys={KEY: 100000})
slow = gateway_fixture(['--time-scale', '1', '--start-warm', '--protocol', 'direct',
                        '--latency-median-s', '30'], name='slow', keys={KEY: 100000},
                       doc='An act takes 30 s: long enough to be interrupted.')
cold = gateway_fixture(['--time-scale', '0.05', '--protocol', 'direct'], name='cold',
                       keys={KEY: 100000}, doc='A cold start of about 0.05 x the catalogue.')


def connect(gateway, model='pi05-droid', **kwargs):
    return sai.connect(model, base_url=gateway.base_url, api_key=KEY,
                       **{'protocol': 'auto', **kwargs})


def stats(gateway):
    return httpx.get(gateway.base_url + '/v1/_local/stats', timeout=10).json()


def seats(gateway, model='pi05-droid'):
    return stats(gateway)['direct']['seats'][f'accounts/sequences/models/{model}']


def run(policy, max_actions=45):
    return policy.run(observe=lambda: OBS, act=lambda action: None, validate=lambda a: True,
                      max_actions=max_actions)


@pytest.mark.parametrize('fixture, protocol, expected', [
    ('direct_only', 'auto', 'direct'), ('both', 'auto', 'direct'), ('v1_only', 'auto', 'v1'),
    ('both', 'v1', 'v1'), ('both', 'direct', 'direct')])
def test_run_completes_with_prefetch_on_either_protocol(request, fixture, protocol, expected):
    gateway = request.getfixturevalue(fixture)
    with connect(gateway, protocol=protocol) as policy:
        outcome = run(policy)
        assert policy.protocol == expected
    assert outcome.reason == 'completed' and outcome.actions == 45
    assert outcome.chunks >= 3 and outcome.action_space == 'joint_velocity'
    names = {field.name for field in dataclasses.fields(outcome)}
    assert names == {field.name for field in dataclasses.fields(sai.RunOutcome)}


def test_direct_on_a_gateway_without_it_is_a_clear_error(v1_only):
    with connect(v1_only, protocol='direct') as policy, pytest.raises(sai.InvalidRequest) as info:
        policy.predict(OBS)
    assert info.value.status == 404


def test_the_seat_is_held_while_open_and_released_on_close(direct_only):
    before = seats(direct_only)['released']
    policy = connect(direct_only)
    policy.predict(OBS)
    assert policy.protocol == 'direct' and not policy.seat_lost
    session = policy.session[:8]
    assert session in [s['session'] for s in seats(direct_only)['sessions']]
    keepalive = policy.direct.seat._thread
    assert keepalive is not None and keepalive.is_alive()
    policy.close()
    assert not keepalive.is_alive(), 'close() left the keepalive thread running'
    after = seats(direct_only)
    assert session not in [s['session'] for s in after['sessions']]
    assert after['released'] == before + 1


def test_each_run_is_one_episode_ended_on_the_worker_and_label_reaches_the_gateway(direct_only):
    episodes = stats(direct_only)['direct']['episodes']
    with connect(direct_only) as policy:
        run(policy, 30)
        first = policy.label(True, 'reached the disc')
        run(policy, 30)
        second = policy.label(False, notes='missed')
        assert first != second
        assert policy.label(True, episode_id=first) == first
    after = stats(direct_only)['direct']['episodes']
    assert after['ended'] >= episodes['ended'] + 2
    labels = {(row['episode_id'], row['success'], row['notes']) for row in after['labels']}
    assert {(first, True, 'reached the disc'), (second, False, 'missed'),
            (first, True, '')} <= labels


def test_begin_and_end_episode_name_the_episode_requests_carry(direct_only):
    with connect(direct_only) as policy:
        episode = policy.begin_episode('robot-episode-0001')
        first, second = policy.predict(OBS), policy.predict(OBS)
        assert first.id.startswith('r-') and first.id != second.id  # the act's correlation id
        assert policy.end_episode() == episode == 'robot-episode-0001'
        assert policy.label(True) == episode


@contextlib.contextmanager
def frozen(gateway):
    """Stop the gateway and its worker (SIGSTOP): connections stay open, nothing answers."""
    os.kill(gateway.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(gateway.pid, signal.SIGCONT)


def ended(gateway):
    return stats(gateway)['direct']['episodes']['ended']


def test_an_episode_end_not_waited_for_delays_nobody_and_still_reaches_the_worker():
    # A gateway of its own: a frozen module fixture would stall the tests after a failure.
    with GatewayProcess(['--time-scale', str(SCALE), '--start-warm', '--protocol', 'direct'],
                        keys={KEY: 100000}) as gw, connect(gw) as policy:
        policy.begin_episode('not-waited-for')
        policy.predict(OBS)
        with frozen(gw):
            began = time.monotonic()
            assert policy.end_episode(wait=False) == 'not-waited-for'
            assert time.monotonic() - began < 1.0, 'waited on a worker that cannot answer'
            assert policy.direct.episodes.current is None  # the next episode may begin now
        deadline = time.monotonic() + 10
        while ended(gw) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ended(gw) == 1, 'the end queued while the worker was frozen never reached it'
        assert len(policy.predict(OBS).action_chunk) > 0


def test_a_worker_restarted_between_episodes_is_pinned_again_from_a_new_connect():
    args = ['--time-scale', str(SCALE), '--start-warm', '--protocol', 'direct', '--worker-port',
            str(free_port()), '--seat-ttl-s', '100000']  # no keepalive notices the restart
    with GatewayProcess(args, keys={KEY: 100000}) as gateway:
        with connect(gateway, protocol='direct') as policy:
            policy.predict(OBS)
            policy.end_episode()
            connects = policy.direct.connects
            gateway.restart()  # the same ports; the worker presents a new certificate
            assert len(policy.predict(OBS).action_chunk) > 0
            assert policy.direct.connects == connects + 1


def test_close_sends_the_episode_ends_still_queued_before_it_gives_the_seat_back(direct_only):
    before = ended(direct_only)
    with connect(direct_only) as policy:
        for _ in range(3):
            policy.begin_episode()
            policy.predict(OBS)
            policy.end_episode(wait=False)
    assert ended(direct_only) == before + 3


def test_readiness_and_wait_until_ready_through_a_cold_start(cold):
    seen = []
    with connect(cold) as policy:
        first = policy.ready()
        assert not first.ready and first.status == 'starting' and first.eta_s > 0
        waited = policy.wait_until_ready(120, on_wait=seen.append, poll_s=0.2)
        assert policy.ready().ready and waited > 0
        assert seen and all(not r.ready for r in seen)
        assert run(policy, 20).reason == 'completed'


def test_interrupt_cuts_an_act_in_flight_at_once(slow):
    with connect(slow) as policy:
        policy.wait_until_ready(30)
        threading.Timer(1.0, policy.interrupt).start()
        began = time.monotonic()
        with pytest.raises(sai.Interrupted):
            policy.predict(OBS)
        assert time.monotonic() - began < 10.0  # the act would have taken 30 s


def test_interrupt_ends_a_run_with_a_hold(slow):
    holds = []
    with connect(slow) as policy:
        threading.Timer(1.0, policy.interrupt).start()
        with pytest.raises(sai.Interrupted):
            policy.run(observe=lambda: OBS, act=lambda a: None, validate=lambda a: True,
                       hold=lambda: holds.append(1), max_actions=30)
    assert holds


def test_a_wrong_certificate_fails_closed_and_is_never_retried(direct_only):
    def wrong_pin(route):
        flipped = ('0' if route.fingerprint[0] != '0' else '1') + route.fingerprint[1:]
        return dataclasses.replace(route, fingerprint=flipped)

    requests = stats(direct_only)['direct']['worker']['requests']
    with connect(direct_only, _pin=wrong_pin) as policy:
        with pytest.raises(sai.CertPinError):
            policy.predict(OBS)
        assert policy.direct.connects == 1  # no reconnect, no second try
    assert stats(direct_only)['direct']['worker']['requests'] == requests


def test_a_refused_secret_reconnects_then_fails_without_showing_a_secret(direct_only):
    secrets = []

    def wrong_secret(route):
        secrets.append(route.direct_secret)
        return dataclasses.replace(route, direct_secret='ds_not_the_secret_0123456789abcdef')

    with connect(direct_only, _pin=wrong_secret) as policy:
        with pytest.raises(sai.AuthError) as info:
            policy.predict(OBS)
        assert policy.direct.connects > 1  # 401 at the worker: connected again
        texts = [str(info.value), repr(info.value), info.value.body or '', repr(policy),
                 repr(policy.direct.route)]
    for text in texts:
        assert KEY not in text and 'ds_not_the_secret' not in text
        assert not any(secret in text for secret in secrets)


one_seat_line = gateway_fixture(['--time-scale', str(SCALE), '--start-warm', '--protocol',
                                 'direct', '--seats', '1', '--seat-queue'],
                                name='one_seat_line', keys={KEY: 100000})
one_seat = gateway_fixture(['--time-scale', str(SCALE), '--start-warm', '--protocol', 'direct',
                            '--seats', '1'], name='one_seat', keys={KEY: 100000})


def test_a_robot_in_line_waits_for_the_seat_a_closed_policy_gives_back(one_seat_line):
    first = connect(one_seat_line)
    first.predict(OBS)
    seen = []
    with connect(one_seat_line) as second:
        answer = second.ready()
        assert answer.queued and answer.queue_position == 1 and not answer.ready
        threading.Timer(1.0, first.close).start()
        second.wait_until_ready(30, on_wait=seen.append, poll_s=0.1)
        assert any(r.queued for r in seen)
        assert run(second, 20).reason == 'completed'


def test_a_busy_deployment_is_asked_again_until_the_timeout_then_raised(one_seat):
    first = connect(one_seat)
    first.predict(OBS)
    try:
        with connect(one_seat, timeout_s=2.0) as second:
            began = time.monotonic()
            with pytest.raises(sai.Unavailable) as info:
                second.predict(OBS)
            assert info.value.status == 429 and info.value.code == 'busy'
            # Asked again with backoff while the next wait still ended within timeout_s.
            assert info.value.details['attempts'] >= 2 and 'busy on' in str(info.value)
            assert time.monotonic() - began < 2.0 + 5.0
        first.close()
        with connect(one_seat) as third:  # the seat given back is free for the next
            assert len(third.predict(OBS).action_chunk) > 0
    finally:
        first.close()


def test_a_seat_the_gateway_dropped_is_reported_then_taken_again(direct_only):
    with connect(direct_only, protocol='direct') as policy:
        policy.predict(OBS)
        httpx.post(direct_only.base_url + '/v1/act/release', timeout=10,
                   headers={'Authorization': f'Bearer {KEY}'},
                   json={'model': 'pi05-droid', 'session': policy.session})
        deadline = time.monotonic() + 30
        while not policy.seat_lost and time.monotonic() < deadline:
            time.sleep(0.1)  # the keepalive thread beats every every_s (4 s here)
        assert policy.seat_lost
        with pytest.raises(sai.SeatLost):
            policy.predict(OBS)
        assert len(policy.predict(OBS).action_chunk) > 0  # connected, and seated, again
        assert not policy.seat_lost


def test_a_seat_dropped_between_episodes_is_taken_again_without_an_error(direct_only):
    with connect(direct_only, protocol='direct') as policy:
        policy.predict(OBS)
        policy.end_episode()
        connects = policy.direct.connects
        httpx.post(direct_only.base_url + '/v1/act/release', timeout=10,
                   headers={'Authorization': f'Bearer {KEY}'},
                   json={'model': 'pi05-droid', 'session': policy.session})
        deadline = time.monotonic() + 30
        while not policy.seat_lost and time.monotonic() < deadline:
            time.sleep(0.1)
        assert policy.seat_lost
        assert len(policy.predict(OBS).action_chunk) > 0  # nothing rode on it: no SeatLost
        assert policy.direct.connects == connects + 1 and not policy.seat_lost


def test_connect_speaks_direct_by_default_and_v1_when_asked(both):
    with sai.connect('pi05-droid', base_url=both.base_url, api_key=KEY) as policy:
        assert policy.predict(OBS).id.startswith('r-') and policy.protocol == 'direct'
    with sai.connect('pi05-droid', base_url=both.base_url, api_key=KEY,
                     protocol='v1') as policy:
        assert policy.protocol == 'v1'
        assert policy.predict(OBS).id.startswith('act_')
        with pytest.raises(sai.InvalidRequest, match='direct protocol'):
            policy.ready()
        assert policy.wait_until_ready(5) == 0.0


def test_a_policy_dropped_without_close_still_gives_its_seat_back(direct_only):
    policy = connect(direct_only)
    policy.predict(OBS)
    session = policy.session[:8]
    del policy
    gc.collect()
    assert session not in [s['session'] for s in seats(direct_only)['sessions']]


def test_the_gateway_refusing_a_connect_is_raised_at_once_with_its_code(direct_only):
    with sai.connect('pi05-droid', base_url=direct_only.base_url, protocol='direct',
                     api_key='seq_not_a_key_of_this_gateway_0001') as policy:
        with pytest.raises(sai.AuthError) as info:
            policy.predict(OBS)
        assert info.value.code == 'unauthenticated' and info.value.request_id
        assert 'seq_not_a_key' not in str(info.value) + repr(info.value)
        assert policy.direct.connects == 0
    with connect(direct_only, model='no-such-deployment') as policy:
        with pytest.raises(sai.NotFound) as info:
            policy.predict(OBS)
        assert info.value.code == 'not_found' and policy.protocol == 'direct'
