"""
The published sequence-ai 0.51.5 client, unmodified, completes episodes against the local gateway.

Every call here is the client's own public API (connect, ready, wait_until_ready, observe, act,
end_episode, label, interrupt, close); the gateway runs as a separate process
(`sequence-ai-ros gateway --protocol direct`), and what the client cannot say of the gateway is
read from the gateway's local stats.
"""

import threading
import time

import httpx
import pytest
import sequence_ai

from .client_support import (
    KEY,
    MODELS,
    observation,
    ROBOT_KEY,
    seats,
    SPACES,
    start,
    TWO_CREDIT_KEY,
)

# The frames are plain colours, not the reference policy's scene: it holds, and says so.
pytestmark = pytest.mark.filterwarnings('ignore:no table in the exterior_1 frame')


def test_wait_until_ready_waits_out_a_cold_start_then_an_episode_runs(connect):
    gateway = start('--seats', '2')
    try:
        policy = connect('pi05-droid', gateway=gateway)
        ready = policy.ready()
        assert not ready.ready and ready.eta_s > 0
        waited = policy.wait_until_ready(timeout_s=30, poll_s=0.5)
        # The cold start is 100 model s: 2 s here, counted from the first ready().
        assert 0.5 < waited < 30
        assert policy.ready().ready
        policy.observe(observation())
        assert len(policy.act()['steps']) == 15
        assert gateway.stats()['models']['accounts/sequences/models/pi05-droid']['warmups'] == 1
    finally:
        gateway.close()


@pytest.mark.parametrize('model', MODELS)
def test_an_episode_on_each_deployment_ends_and_is_labelled(connect, warm_gateway, model):
    policy = connect(model)
    for step in range(3):
        assert policy.observe(observation()) == step
        chunk = policy.act()
        assert (chunk['robot'], chunk['action_space'], chunk['action_dim']) == \
            ('droid', SPACES[model], 8)
        assert chunk['covers_seconds'] == pytest.approx(
            len(chunk['steps']) / chunk['control_frequency_hz'])
        assert [s['index'] for s in chunk['steps']] == list(range(len(chunk['steps'])))
    episode = policy.end_episode()
    assert episode and policy.label(True, 'reached', episode_id=episode) == episode
    direct = warm_gateway.stats()['direct']
    assert {'model': model, 'episode_id': episode, 'success': True,
            'notes': 'reached'}.items() <= direct['episodes']['labels'][-1].items()
    assert direct['episodes']['ended'] >= 1


def test_interrupt_ends_an_act_in_flight():
    # Each act takes 400 model s (8 s here); the interrupt comes after 0.5 s.
    gateway = start('--start-warm', '--latency-median-s', '400', '--request-timeout-s', '5000')
    try:
        with sequence_ai.connect('lingbot-va-5b', base_url=gateway.base_url,
                                 api_key=KEY) as policy:
            policy.observe(observation())
            threading.Timer(0.5, policy.interrupt).start()
            began = time.monotonic()
            with pytest.raises(sequence_ai.Interrupted):
                policy.act()
            assert time.monotonic() - began < 4
            stats = gateway.stats()['direct']
            assert stats['acts_running'] == 1  # the worker still runs it; the robot moved on
    finally:
        gateway.close()


def test_two_sessions_at_once_each_hold_a_seat_and_close_gives_it_back(connect, warm_gateway):
    policies = [connect('cosmos3-edge-policy-droid') for _ in range(2)]
    answers: list[int] = []
    barrier = threading.Barrier(2)

    def run(policy):
        policy.observe(observation())
        barrier.wait(10)
        for _ in range(3):
            answers.append(len(policy.act()['steps']))
            policy.observe(observation())

    threads = [threading.Thread(target=run, args=(p,)) for p in policies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == [32] * 6
    held = seats(warm_gateway, 'cosmos3-edge-policy-droid')
    assert held['held'] == 2
    released = held['released']
    for policy in policies:
        policy.close()
    after = seats(warm_gateway, 'cosmos3-edge-policy-droid')
    assert (after['held'], after['released']) == (0, released + 2)


def test_auth_permission_not_found_invalid_request_and_credit_reach_the_client(connect):
    with pytest.raises(sequence_ai.AuthError):
        connect(api_key='seq_not_a_key_of_this_gateway').ready()
    with pytest.raises(sequence_ai.NotFound):
        connect('no-such-policy').ready()
    policy = connect('lingbot-vla-v2-6b')
    policy.observe(observation(size=160))
    with pytest.raises(sequence_ai.InvalidRequest) as refused:
        policy.act()
    assert refused.value.details['sizes'] == {'exterior_1': '160x160', 'wrist': '160x160'}
    assert 'resize_image(frame, 224, 224' in refused.value.hint
    robot = connect('pi05-droid', api_key=ROBOT_KEY)
    robot.observe(observation())
    assert len(robot.act()['steps']) == 15  # its own deployment
    with pytest.raises(sequence_ai.PermissionDenied):
        connect('lingbot-va-5b', api_key=ROBOT_KEY).ready()
    with pytest.raises(sequence_ai.OutOfCredit):
        poor = connect('lingbot-vla-v2-6b', api_key=TWO_CREDIT_KEY)
        for _ in range(3):
            poor.observe(observation())
            poor.act()


def test_warming_queued_and_busy_reach_the_client_as_unavailable(connect):
    cold = start('--seats', '1', '--seat-queue')
    full = start('--start-warm', '--seats', '1')
    try:
        with pytest.raises(sequence_ai.Unavailable) as warming:
            connect(gateway=cold, startup_timeout_s=0).act()
        assert warming.value.warming and warming.value.retry_after_s > 0
        first = connect(gateway=cold)
        first.wait_until_ready(timeout_s=30, poll_s=0.5)
        first.observe(observation())
        first.act()
        with pytest.raises(sequence_ai.Unavailable) as queued:
            connect(gateway=cold, startup_timeout_s=0).act()
        assert queued.value.queued and queued.value.queue_position == 1
        holder = connect(gateway=full)
        holder.observe(observation())
        holder.act()
        with pytest.raises(sequence_ai.Unavailable) as busy:
            connect(gateway=full).act()
        assert (busy.value.status, busy.value.code, busy.value.retryable) == (429, 'busy', True)
    finally:
        cold.close()
        full.close()


def test_draining_reaches_the_client_as_unavailable(connect):
    gateway = start('--start-warm')
    try:
        policy = connect(gateway=gateway)
        policy.observe(observation())
        policy.act()
        httpx.post(gateway.base_url + '/v1/_local/drain')
        policy.observe(observation())
        with pytest.raises(sequence_ai.Unavailable) as draining:
            policy.act()
        assert draining.value.details.get('reason') == 'draining'
    finally:
        gateway.close()


def test_a_restarted_gateway_starts_the_episode_anew_and_the_robot_is_told(connect):
    gateway = start('--start-warm')
    try:
        policy = connect('lingbot-va-5b', gateway=gateway)
        policy.observe(observation(), episode_id='before-restart')
        policy.act()
        gateway.restart()
        policy.observe(observation())
        # Reconnected to the new worker, the client goes on in a new episode, which carries
        # none of the old one's observations: the act is refused, nothing is played.
        with pytest.warns(UserWarning, match='episode was reset'):
            with pytest.raises(sequence_ai.InvalidRequest, match='gateway restart'):
                policy.act()
        policy.observe(observation())
        assert len(policy.act()['steps']) == 16
        assert gateway.stats()['direct']['worker']['requests']['/act'] == {'400': 1, '200': 1}
    finally:
        gateway.close()


def test_a_worker_with_another_certificate_at_its_address_is_refused(connect):
    from sequence_ai_ros.gateway.process import free_port
    gateway = start('--start-warm', '--worker-port', str(free_port()))
    try:
        policy = connect(gateway=gateway)
        policy.observe(observation())
        policy.act()
        gateway.restart()  # the same address, a new self-signed certificate
        policy.observe(observation())
        with pytest.raises(sequence_ai.CertPinError):
            policy.act()
    finally:
        gateway.close()
