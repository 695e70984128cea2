"""The client core against the local gateway running as a real process."""

import os
import stat
import threading
import time
import warnings

from fixtures_gateway import gateway_fixture, TEST_DIR
from observations import observation
import pytest
import sequence_ai_ros as sai

# The once-per-process validate warning is the policy module's own state (test_layout allows it).
from sequence_ai_ros.client import _policy as policy_module
from sequence_ai_ros.client import resolve_api_key, resolve_base_url, write_credentials_file
from sequence_ai_ros.gateway.process import free_port, GatewayProcess
from sequence_ai_ros.world import arm_model

KEY = 'seq_client_tests_key_0000000001'
POOR_KEY = 'seq_client_tests_poor_key_00002'
SCALE = 0.2  # a 1.0 s pi05-droid chunk plays in 0.2 s at 75 Hz; ratios hold
OBS = observation()


def accept(action):
    return True


gateway = gateway_fixture(['--time-scale', str(SCALE), '--start-warm'],
                          keys={KEY: 100000, POOR_KEY: 1})
fast_gateway = gateway_fixture(
    ['--time-scale', str(SCALE), '--start-warm', '--latency-median-s', '0.3'],
    name='fast_gateway', keys={KEY: 100000},
    doc='Latency a third of a pi05-droid chunk: prefetch must never underrun here.')


half_speed_gateway = gateway_fixture(
    ['--time-scale', '0.5', '--start-warm', '--latency-median-s', '0.3'],
    name='half_speed_gateway', keys={KEY: 100000},
    doc='Time scale 0.5: scheduling noise on a loaded 2-core box stays small against the margin.')


def connect(gateway, model='pi05-droid', **kwargs):
    kwargs.setdefault('api_key', KEY)
    return sai.connect(model, base_url=gateway.base_url, **kwargs)


# -- connect, configuration, catalogue --------------------------------------------------------

def test_connect_sends_nothing_and_expands_short_ids():
    dead = f'http://127.0.0.1:{free_port()}'
    with sai.connect('pi05-droid', api_key=KEY, base_url=dead) as policy:
        assert policy.model == 'accounts/sequences/models/pi05-droid'
        with pytest.raises(sai.Unavailable) as caught:
            policy.predict(OBS)
    assert not caught.value.warming and caught.value.retry_after_s is None
    assert sai.connect('org/x/y', api_key=KEY, base_url=dead).model == 'org/x/y'


def test_key_precedence_argument_environment_file(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path))
    monkeypatch.delenv('SEQUENCES_API_KEY', raising=False)
    assert resolve_api_key() == (None, 'none')
    path = write_credentials_file('seq_from_file_0000000000')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert resolve_api_key()[0] == 'seq_from_file_0000000000'
    path.write_text('# a comment\n\nseq_second_line_0000000\n')
    assert resolve_api_key()[0] == 'seq_second_line_0000000'
    monkeypatch.setenv('SEQUENCES_API_KEY', 'seq_from_env_00000000000')
    assert resolve_api_key()[0] == 'seq_from_env_00000000000'
    assert resolve_api_key('seq_from_argument_000000')[0] == 'seq_from_argument_000000'
    monkeypatch.setenv('SEQUENCES_BASE_URL', 'http://example.invalid/')
    assert resolve_base_url() == 'http://example.invalid'
    assert resolve_base_url('http://127.0.0.1:1') == 'http://127.0.0.1:1'


def test_no_key_means_no_authorization_header_and_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path))
    monkeypatch.delenv('SEQUENCES_API_KEY', raising=False)
    with pytest.raises(sai.AuthError, match='no API key'):
        sai.connect('pi05-droid', base_url='http://127.0.0.1:1')
    transport = sai.Transport(base_url='http://127.0.0.1:1', require_key=False)
    assert 'authorization' not in {k.lower() for k in transport._client.headers}
    transport.close()


def test_models_is_public(gateway, monkeypatch, tmp_path):
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path))
    monkeypatch.delenv('SEQUENCES_API_KEY', raising=False)
    catalogue = sai.models(base_url=gateway.base_url, endpoint='act')
    names = {m.short_id for m in catalogue}
    assert {'pi05-droid', 'cosmos3-edge-policy-droid', 'lingbot-va-5b',
            'lingbot-vla-v2-6b'} <= names
    pi05 = next(m for m in catalogue if m.short_id == 'pi05-droid')
    assert pi05.camera_views == ('exterior_1', 'wrist') and pi05.action_dim == 8


# -- predict and next_action ----------------------------------------------------------------

def test_predict_returns_a_checked_chunk(gateway):
    with connect(gateway, protocol='v1') as policy:
        prediction = policy.predict(OBS, seed=3)
    chunk = prediction.action_chunk
    assert prediction.id.startswith('act_')
    assert len(chunk) == 15 and chunk.action_dim == 8
    assert chunk.action_space == 'joint_velocity'
    assert abs(len(chunk) / chunk.control_frequency_hz - chunk.covers_seconds) < 1e-9
    assert all(len(step) == 8 and all(isinstance(v, float) for v in step) for step in chunk.steps)
    assert prediction.perf['inference_ms'] > 0


def test_next_action_pops_refills_and_never_returns_none(gateway):
    with connect(gateway, protocol='v1') as policy:
        with pytest.raises(sai.ChunkExhausted):
            policy.next_action()
        first = policy.next_action(OBS)
        assert len(first) == 8
        assert policy.buffered == 14
        for _ in range(14):
            assert policy.next_action() is not None
        with pytest.raises(sai.ChunkExhausted):
            policy.next_action()
        # With an observation every call, the buffer is refilled before it empties.
        actions = [policy.next_action(OBS) for _ in range(60)]
        assert all(len(a) == 8 for a in actions)


# -- errors ----------------------------------------------------------------------------------

def test_unknown_key_is_auth_error_and_never_echoes_the_key(gateway):
    secret = 'seq_this_key_is_not_known_123456'
    with sai.connect('pi05-droid', api_key=secret, base_url=gateway.base_url) as policy:
        with pytest.raises(sai.AuthError) as caught:
            policy.predict(OBS)
        assert secret not in repr(policy) and secret not in repr(policy._transport)
    error = caught.value
    assert error.status == 401 and error.message
    assert secret not in str(error) and secret not in (error.body or '')


def test_out_of_credit_and_failed_calls_are_free(gateway):
    with connect(gateway, api_key=POOR_KEY) as policy:
        with pytest.raises(sai.InvalidRequest):
            policy.predict(observation(views=('exterior_1', 'not_a_view')))
        policy.predict(OBS)  # the one credit is still there after the failed call
        with pytest.raises(sai.OutOfCredit) as caught:
            policy.predict(OBS)
    assert caught.value.status == 402


def test_invalid_requests_carry_the_servers_message(gateway):
    with connect(gateway, protocol='v1') as policy:
        with pytest.raises(sai.InvalidRequest) as caught:
            policy.predict(observation(joints=[0.0] * 6))
        assert caught.value.status == 422 and 'joint_positions' in caught.value.message
    with connect(gateway, protocol='v1', model='no-such-model') as policy:
        with pytest.raises(sai.InvalidRequest) as caught:
            policy.predict(OBS)
        assert caught.value.status == 404


def test_cold_worker_answers_warming_with_retry_after(gateway):
    with GatewayProcess(['--time-scale', '0.02'], keys={KEY: 100}) as cold:
        with connect(cold, protocol='v1') as policy:
            with pytest.raises(sai.Unavailable) as caught:
                policy.predict(OBS)
    error = caught.value
    assert error.warming and error.status == 503
    assert 0 < error.retry_after_s <= 100 * 0.02 + 1
    assert error.job_id


# -- run() -------------------------------------------------------------------------------------

def test_run_uses_one_connection_and_reports(fast_gateway):
    gateway = fast_gateway  # one request in flight is always enough here
    before = gateway.stats()['connections']
    with connect(gateway) as policy:
        outcome = policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=90)
    assert gateway.stats()['connections'] - before == 1
    assert outcome.actions == 90 and outcome.reason == 'completed'
    assert not outcome.stopped_early
    assert outcome.chunks >= 6 and outcome.requests >= outcome.chunks
    assert outcome.action_space == 'joint_velocity' and outcome.underruns == 0
    assert outcome.latency_p50_s > 0 and outcome.server_inference_p50_ms > 0
    text = repr(outcome)
    assert text.startswith(f'RunOutcome(90 actions over {outcome.chunks} chunks in ')
    assert text.endswith(', completed)')


def test_prefetch_removes_the_stall_at_every_boundary(half_speed_gateway):
    with connect(half_speed_gateway) as policy:
        naive = policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=120,
                           prefetch=False)
        smooth = policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=120)
    assert naive.underruns >= naive.chunks - 2 >= 6
    assert 'underruns' in repr(naive)
    assert smooth.underruns == 0, smooth
    assert smooth.moving_fraction > naive.moving_fraction + 0.15  # C/(C+L): 1/1.3 = 77%


def test_pacing_has_no_drift_when_act_takes_most_of_a_period(fast_gateway):
    period = SCALE / 15

    def slow_act(action):
        time.sleep(period * 0.6)
    with connect(fast_gateway) as policy:
        outcome = policy.run(lambda: OBS, slow_act, validate=accept, max_actions=150)
    stall = outcome.underrun_s
    # Sleeping a full period after each act would take 1.6x; absolute deadlines take 1.0x.
    assert outcome.elapsed_s - stall < 150 * period * 1.3


def test_observe_validate_act_run_on_the_callers_thread(gateway):
    caller = threading.get_ident()
    seen = set()

    def observe():
        seen.add(threading.get_ident())
        return OBS

    def act(action):
        seen.add(threading.get_ident())

    def validate(action):
        seen.add(threading.get_ident())
        return True
    with connect(gateway) as policy:
        policy.run(observe, act, validate=validate, max_actions=60)
    assert seen == {caller}


def test_validate_false_stops_and_holds_once(gateway):
    holds = []
    with connect(gateway) as policy:
        outcome = policy.run(lambda: OBS, lambda a: None, max_actions=100,
                             validate=lambda a: len(holds) < 0, hold=lambda: holds.append(1))
    assert outcome.reason == 'validate' and outcome.stopped_early and outcome.actions == 0
    assert holds == [1]


def test_act_raising_holds_and_reports_the_class(gateway):
    holds, starts = [], []
    count = []

    def act(action):
        count.append(1)
        if len(count) == 20:
            raise RuntimeError('motor fault')
    with connect(gateway) as policy:
        with pytest.raises(RuntimeError):
            policy.run(lambda: OBS, act, validate=accept, max_actions=100,
                       hold=lambda: holds.append(1), on_underrun_start=lambda: starts.append(1))
    assert len(holds) == len(starts) + 1  # one at each underrun's start, one at the stop


def test_clean_completion_never_holds_at_the_end(gateway):
    holds = []
    with connect(gateway) as policy:
        outcome = policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=20,
                             hold=lambda: holds.append(1))
    assert len(holds) == outcome.underruns == outcome.holds  # only at underruns' starts


def test_validate_none_warns_once_per_process(gateway, monkeypatch):
    monkeypatch.setattr(policy_module, '_validate_warned', False)
    with connect(gateway) as policy:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            policy.run(lambda: OBS, lambda a: None, max_actions=5)
            policy.run(lambda: OBS, lambda a: None, max_actions=5)
    messages = [w for w in caught if 'validate=None' in str(w.message)]
    assert len(messages) == 1


def test_max_actions_is_required_and_positive(gateway):
    with connect(gateway) as policy:
        for bad in (0, -1, 2.5, True):
            with pytest.raises(ValueError):
                policy.run(lambda: OBS, lambda a: None, max_actions=bad)
        with pytest.raises(TypeError):
            policy.run(lambda: OBS, lambda a: None)  # type: ignore[call-arg]


def test_a_second_thread_on_one_policy_raises(gateway):
    errors = []
    started = threading.Event()

    def observe():
        started.set()
        return OBS
    with connect(gateway) as policy:
        runner = threading.Thread(target=policy.run, args=(observe, lambda a: None),
                                  kwargs={'validate': accept, 'max_actions': 60})
        runner.start()
        started.wait(10)
        for call in (lambda: policy.predict(OBS), lambda: policy.next_action(OBS),
                     lambda: policy.run(lambda: OBS, lambda a: None, max_actions=5)):
            try:
                call()
            except sai.PolicyBusy as exc:
                errors.append(str(exc))
        runner.join(30)
    assert len(errors) == 3
    assert all('one Policy per control loop' in e for e in errors)


def test_eight_policies_in_eight_threads_never_cross(half_speed_gateway):
    fast_gateway = half_speed_gateway  # eight loops share one GIL: keep jitter below the margin
    before = fast_gateway.stats()['connections']
    results = {}

    # cosmos3 (2.13 s chunks, absolute joints), one request in flight: each loop holds exactly
    # one connection (with two allowed, a loop slowed by a busy machine opened a second).
    def drive(k):
        joints = list(arm_model.HOME)
        joints[0] = -0.6 + 0.15 * k  # each robot's plan starts from its own joint 1
        obs = observation(q=joints)
        chunks, played = [], []
        with connect(fast_gateway, model='cosmos3-edge-policy-droid') as policy:
            outcome = policy.run(lambda: obs, played.append, validate=accept, max_actions=150,
                                 on_chunk=chunks.append, max_inflight=1)
        results[k] = (joints[0], chunks, played, outcome)
    threads = [threading.Thread(target=drive, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert fast_gateway.stats()['connections'] - before == 8
    for k, (joint0, chunks, played, outcome) in results.items():
        # Eight loops and their gateway on two cores: a tick may come a hair late (CI saw one
        # underrun of 0.00 s); a loop starved of chunks would show seconds.
        assert outcome.actions == 150 and outcome.underrun_s < 0.2, (k, outcome)
        # Played actions are this loop's own chunks, whole and in order (append mode).
        expected = [step for chunk in chunks for step in chunk.action_chunk.steps]
        assert played == expected[:150], f'loop {k}: sequence break'
        # Step 0 is the action for the capture time, so it sits at this robot's own joint 1.
        firsts = [chunk.action_chunk.steps[0][0] for chunk in chunks]
        assert all(abs(f - joint0) < 0.05 for f in firsts), f'loop {k}: foreign plan {firsts}'
    assert len(results) == 8


def test_smooth_seam_blends_absolute_chunks_only_and_measures_first(gateway):
    with connect(gateway, model='lingbot-vla-v2-6b') as absolute:
        plain = absolute.run(lambda: OBS, lambda a: None, validate=accept, max_actions=75)
        blended = absolute.run(lambda: OBS, lambda a: None, validate=accept, max_actions=75,
                               smooth_seam=4, seam_blend='min_jerk')
    assert plain.blended_steps == 0 and plain.max_seam_jump is not None
    assert blended.blended_steps >= 4 * (blended.chunks - 1) > 0
    assert blended.max_seam_jump is not None and blended.max_seam_jump > 0
    with connect(gateway) as velocity:
        outcome = velocity.run(lambda: OBS, lambda a: None, validate=accept, max_actions=60,
                               smooth_seam=4)
    assert outcome.blended_steps == 0 and outcome.max_seam_jump is not None


def test_startup_waits_out_a_cold_worker_then_runs():
    with GatewayProcess(['--time-scale', '0.02', '--cold-start-s', '100'],
                        keys={KEY: 1000}) as cold:
        holds = []
        started = time.monotonic()
        with connect(cold) as policy:
            outcome = policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=30,
                                 startup_timeout_s=30, hold=lambda: holds.append(1))
        assert outcome.actions == 30 and outcome.reason == 'completed'
        assert len(holds) == outcome.underruns  # only at underruns' starts
        assert time.monotonic() - started >= 1.5  # 100 model-seconds at 0.02
        assert outcome.failed_requests >= 1


def test_warming_without_startup_timeout_raises_and_holds():
    with GatewayProcess(['--time-scale', '0.02'], keys={KEY: 1000}) as cold:
        holds = []
        with connect(cold) as policy:
            with pytest.raises(sai.Unavailable) as caught:
                policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=30,
                           hold=lambda: holds.append(1))
        assert caught.value.warming and holds == [1]


# What a restart surfaces as on each protocol: v1 meets the cold model (503 warming) or the
# dead connection; direct also loses its seat and episode, whichever request meets it first.
RESTART_ERRORS = {'v1': sai.Unavailable,
                  'direct': (sai.Unavailable, sai.SeatLost, sai.EpisodeLost)}


@pytest.mark.parametrize('protocol', ['v1', 'direct'])
def test_warming_after_the_first_action_raises_and_holds(protocol):
    # A gateway restart mid-run brings the model back cold: the loop must not wait it out.
    with GatewayProcess(['--time-scale', '0.2', '--start-warm'], keys={KEY: 1000}) as gw:
        holds, starts = [], []
        actions = []

        def act(action):
            actions.append(action)
            if len(actions) == 10:
                gw.stop()
                gw.args.remove('--start-warm')
                gw.start()
        with connect(gw, protocol=protocol) as policy:
            with pytest.raises(RESTART_ERRORS[protocol]) as caught:
                policy.run(lambda: OBS, act, validate=accept, max_actions=600,
                           startup_timeout_s=60, hold=lambda: holds.append(1),
                           on_underrun_start=lambda: starts.append(1))
        assert len(holds) == len(starts) + 1  # one at each underrun's start, one at the stop
        assert 10 <= len(actions) < 600
        if isinstance(caught.value, sai.Unavailable):
            assert caught.value.status in (None, 503)


def test_a_request_abandoned_before_it_left_is_not_counted(gateway):
    # run() ends with requests in flight: one still queued was never sent, so neither its
    # observation nor its count may appear in the outcome (or the recording agrees with it).
    release, taken = threading.Event(), []

    def slow_source():
        taken.append(1)
        release.wait(10)
        return OBS
    with connect(gateway) as policy:
        stream = policy.new_stream(sai.PlaybackOptions(max_inflight=1))
        stream.start(slow_source, time.monotonic())  # its one worker waits in the source
        stream.start(slow_source, time.monotonic())  # queued behind it
        deadline = time.monotonic() + 10
        while not taken and time.monotonic() < deadline:
            time.sleep(0.01)
        stream.abandon()
        release.set()
        stream.close()
    assert len(taken) == 1 and stream.stats.requests == 1


def test_close_is_idempotent_and_a_closed_policy_says_so(gateway):
    policy = connect(gateway)
    policy.predict(OBS)
    policy.close()
    policy.close()
    with pytest.raises(sai.PolicyClosed, match='connect'):
        policy.predict(OBS)
    assert 'closed' in repr(policy)


def test_close_drains_a_request_in_flight_without_leaking_threads(gateway):
    # Which threads, not how many: one an earlier test left ending may end meanwhile.
    before_threads = set(threading.enumerate())
    before_acts = gateway.stats()['acts'].get('accounts/sequences/models/pi05-droid', {})
    policy = connect(gateway, protocol='v1')
    policy.next_action(OBS)
    while policy.buffered > 2:  # play until the background refill has started
        policy.next_action(OBS)
    policy.close()  # must wait for that request, not abandon it mid-flight
    after_acts = gateway.stats()['acts']['accounts/sequences/models/pi05-droid']
    assert after_acts.get('200', 0) - before_acts.get('200', 0) == 2
    assert set(threading.enumerate()) - before_threads == set()


def test_a_server_fault_is_the_base_error_with_status_and_message():
    plugin = 'fixtures_gateway:make_plugin_policy'  # instruction 'raise' makes it fail
    with GatewayProcess(['--time-scale', '0.02', '--start-warm', '--policy', plugin],
                        keys={KEY: 100}, import_paths=[TEST_DIR]) as broken:
        with connect(broken, protocol='v1') as policy:
            with pytest.raises(sai.SequencesError) as caught:
                policy.predict(observation(instruction='raise'))
    error = caught.value
    assert type(error) is sai.SequencesError and error.status == 500 and error.message


def test_reconnects_after_the_gateway_restarts_without_leaking_threads():
    with GatewayProcess(['--time-scale', '0.2', '--start-warm'], keys={KEY: 100}) as gw:
        with connect(gw, protocol='v1') as policy:
            policy.predict(OBS)
            threads = set(threading.enumerate())
            gw.restart()  # same port: the kept-alive connection is now dead
            prediction = policy.predict(OBS)
            assert len(prediction.action_chunk) == 15
            assert gw.stats()['connections'] == 1, 'one new connection after the restart'
            assert set(threading.enumerate()) - threads == set()
