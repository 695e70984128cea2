"""The direct protocol's pure parts in the client: error mapping, lease timing, wire reading."""

import pytest
from sequence_ai_ros.client import (
    ActionSpaceUnknown,
    AuthError,
    busy_backoff,
    chunk_from_outputs,
    Conflict,
    EpisodeBook,
    EpisodeLost,
    error_from_body,
    Gone,
    InternalError,
    Interrupted,
    InterruptSignal,
    InvalidRequest,
    is_transient,
    MalformedResponse,
    NotFound,
    OutOfCredit,
    pack_msgpack,
    PermissionDenied,
    PolicyError,
    Readiness,
    remember_secret,
    renew_after,
    SequencesError,
    Unavailable,
    WorkerRoute,
)
from sequence_ai_ros.contract.error_codes import CODES

SECRET = 'ds_0f3c9a77b1e24d5c8a6e2b9d1c4f7a30'
ROUTE = {'worker_url': 'https://127.0.0.1:9443', 'direct_secret': SECRET,
         'cert_fingerprint': 'ab' * 32, 'tls': 'pinned', 'lease': {'epoch': 3, 'ttl_s': 600},
         'params': {'temperature': 0.1}, 'keepalive': {'every_s': 20, 'seat_ttl_s': 60},
         'hz': 15, 'action_chunk_valid_len': 15, 'action_chunk_replan_at': 8,
         'request_timeout_s': 300}


def coded(code, **fields):
    return {'detail': f'{code} happened', 'code': code, 'request_id': 'r-1234abcd', **fields}


# -- every code of the contract's table maps to its class, with its fields kept ---------------

KINDS = {'InvalidRequest': InvalidRequest, 'AuthError': AuthError,
         'PermissionDenied': PermissionDenied, 'OutOfCredit': OutOfCredit,
         'NotFound': NotFound, 'Conflict': Conflict, 'Gone': Gone, 'Unavailable': Unavailable,
         'PolicyError': PolicyError, 'InternalError': InternalError}


@pytest.mark.parametrize('code', sorted(CODES))
def test_every_code_maps_to_its_typed_error_with_request_id_and_hint(code):
    spec = CODES[code]
    error = error_from_body(spec.status, coded(code, hint='do the thing'), text='{}')
    assert type(error) is KINDS[spec.kind]
    assert error.code == code and error.status == spec.status
    assert error.request_id == 'r-1234abcd' and error.hint == 'do the thing'
    assert error.retryable is spec.retryable
    assert 'request r-1234abcd' in str(error) and 'do the thing' in str(error)


def test_a_body_without_a_code_falls_back_to_its_status():
    assert isinstance(error_from_body(403, {'detail': 'no'}), PermissionDenied)
    assert isinstance(error_from_body(429, None), Unavailable)
    assert type(error_from_body(500, {})) is InternalError


def test_warming_and_queue_answers_are_waited_out_not_retried_as_transient():
    warming = error_from_body(503, coded('warming', retry_after_s=12.5,
                                         details={'job_id': 'job-9'}))
    assert isinstance(warming, Unavailable) and warming.warming
    assert warming.retry_after_s == 12.5 and warming.job_id == 'job-9'
    assert not is_transient(warming)
    queued = error_from_body(503, coded('unavailable', details={'reason': 'queued',
                                                                'queue_position': 2}))
    assert queued.queued and queued.queue_position == 2 and not is_transient(queued)
    busy = error_from_body(429, coded('busy'), headers={'Retry-After': '1'})
    assert busy.retry_after_s == 1.0 and is_transient(busy) and busy.retryable


def test_an_error_restated_keeps_every_field_of_the_body_and_shares_no_details():
    busy = error_from_body(429, coded('busy', retry_after_s=2.0, details={'seats': 1}))
    restated = Unavailable('asked 3 times', **busy.fields())
    assert {k: getattr(restated, k) for k in busy.fields()} == busy.fields()
    restated.details['attempts'] = 3
    assert 'attempts' not in busy.details


def test_episode_lost_is_its_own_conflict_and_frames_missing_keeps_from():
    lost = error_from_body(409, coded('conflict', details={'reason': 'episode_lost'}))
    assert isinstance(lost, EpisodeLost) and isinstance(lost, InvalidRequest)
    assert not is_transient(lost)
    missing = error_from_body(409, coded('conflict', details={'reason': 'frames_missing',
                                                              'from': 4}))
    assert missing.reason == 'frames_missing' and missing.details['from'] == 4


def test_a_policy_error_keeps_the_remote_traceback():
    error = error_from_body(500, coded('policy_error', details={'exception': {
        'type': 'ValueError', 'traceback': 'Traceback...\nValueError: bad'}}))
    assert isinstance(error, PolicyError) and 'ValueError: bad' in error.remote_traceback
    assert not is_transient(error)


def test_keys_and_direct_secrets_never_show_in_an_error():
    remember_secret(SECRET)
    key = 'seq_live_a1b2c3d4e5f6a7b8c9d0'
    error = error_from_body(401, coded('unauthenticated', hint=f'secret {SECRET}'),
                            text=f'{{"detail": "Bearer {SECRET} and {key}"}}')
    error.message  # noqa: B018 (read, as a log line would)
    for text in (str(error), repr(error), error.body or '', error.hint or '', error.message):
        assert SECRET not in text and key not in text
    assert SECRET not in repr(WorkerRoute.from_connect(ROUTE))


# -- the connect answer, the lease, readiness ------------------------------------------------

def test_the_connect_answer_gives_the_route_the_seat_and_the_timing():
    route = WorkerRoute.from_connect(ROUTE)
    assert route.worker_url == 'https://127.0.0.1:9443' and route.lease_epoch == 3
    assert (route.hz, route.valid_len, route.replan_at) == (15.0, 15, 8)
    assert route.keepalive_every_s == 20.0 and route.seat_ttl_s == 60.0
    assert route.params == {'temperature': 0.1}


@pytest.mark.parametrize('change', [{'worker_url': 'http://127.0.0.1:9443'},
                                    {'direct_secret': ''}, {'tls': 'public'}])
def test_a_connect_answer_that_cannot_be_trusted_is_refused(change):
    with pytest.raises(MalformedResponse):
        WorkerRoute.from_connect({**ROUTE, **change})


def test_the_lease_is_renewed_a_fifth_early_within_one_and_thirty_seconds():
    assert renew_after(600.0) == 570.0  # 20 % is 120 s: at most 30 s early
    assert renew_after(50.0) == 40.0
    assert renew_after(2.0) == 1.0  # at least 1 s early
    assert renew_after(0.5) == 0.0
    assert renew_after(0.0) is None


def test_busy_backoff_doubles_from_50_ms_and_never_passes_retry_after():
    for attempt in range(1, 12):
        wait = busy_backoff(attempt, 0.3)
        assert 0 < wait <= min(0.3, 0.05 * 2 ** (attempt - 1))
    assert busy_backoff(1, None) <= 0.05


def test_readiness_reads_the_queue_and_the_stage():
    ready = Readiness.from_wire({'ready': False, 'status': 'queued', 'queue_position': 3,
                                 'retry_after_s': 1, 'eta_s': None})
    assert ready.queued and ready.queue_position == 3 and not ready.ready
    starting = Readiness.from_wire({'ready': False, 'status': 'starting', 'stage': 'loading',
                                    'eta_s': 40})
    assert (starting.stage, starting.eta_s, starting.queued) == ('loading', 40.0, False)


# -- the answer: what it no longer says comes from connect, the action space never guessed ----

def test_a_preset_chunk_plays_as_it_says_cut_to_the_valid_length():
    route = WorkerRoute.from_connect({**ROUTE, 'action_chunk_valid_len': 4})
    steps = [{'index': i, 'values': [0.1] * 8} for i in range(10)]
    chunk = chunk_from_outputs({'steps': steps, 'robot': 'droid', 'action_space':
                                'joint_velocity', 'action_dim': 8,
                                'control_frequency_hz': 15}, route, None)
    assert len(chunk.steps) == 4 and chunk.action_space == 'joint_velocity'
    assert chunk.covers_seconds == pytest.approx(4 / 15)


def test_bare_rows_take_the_rate_from_connect_and_the_space_from_the_argument():
    route = WorkerRoute.from_connect(ROUTE)
    chunk = chunk_from_outputs({'actions': [[0.0] * 8] * 20}, route, 'joint_position')
    assert chunk.control_frequency_hz == 15.0 and len(chunk.steps) == 15
    assert chunk.action_space == 'joint_position' and chunk.action_dim == 8


def test_no_stated_action_space_is_a_refusal_naming_the_argument():
    route = WorkerRoute.from_connect(ROUTE)
    with pytest.raises(ActionSpaceUnknown, match='action_space'):
        chunk_from_outputs([[0.0] * 8] * 3, route, None)
    with pytest.raises(ActionSpaceUnknown, match='action_space'):
        chunk_from_outputs({'steps': [[0.0] * 8], 'action_dim': 8}, route, None)
    with pytest.raises(ActionSpaceUnknown, match='joint_velocity'):
        chunk_from_outputs({'steps': [[0.0] * 8], 'action_dim': 8, 'action_space':
                            'joint_velocity'}, route, 'joint_position')
    assert not is_transient(ActionSpaceUnknown('x'))


# -- episodes, interrupts, msgpack --------------------------------------------------------------

def test_episodes_number_observations_and_keep_them_for_a_resend():
    book = EpisodeBook()
    episode = book.current_or_begin()
    assert [book.number(episode, {'n': i}) for i in range(3)] == [0, 1, 2]
    assert [seq for seq, _ in book.frames_from(episode, 1)] == [1, 2]
    assert book.end() == episode and book.current is None and book.last == episode
    other = book.current_or_begin()
    assert other != episode and book.number(other, {}) == 0


def test_an_interrupt_ends_a_wait_at_once_and_spares_what_starts_after():
    signal = InterruptSignal()
    before = signal.generation
    signal.fire()
    with pytest.raises(Interrupted):
        signal.sleep(30.0, before, 'the wait')
    signal.sleep(0.0, signal.generation, 'the next wait')  # no raise
    assert isinstance(Interrupted('x'), SequencesError) and not is_transient(Interrupted('x'))


def test_msgpack_packs_an_observation_as_msgpack_reads_it():
    msgpack = pytest.importorskip('msgpack')
    value = {'episode_id': 'e1', 'frames': [{'seq': 70000, 'inputs': {
        'images': [{'view': 'wrist', 'data': 'x' * 300}], 'instruction': 'é' * 40,
        'proprioception': {'joint_positions': [0.1, -2.5e-9, 3], 'gripper': [1.0]},
        'ok': True, 'none': None, 'raw': b'\x00' * 70000, 'big': -2**40}}]}
    assert msgpack.unpackb(pack_msgpack(value), raw=False) == value
    with pytest.raises(ValueError):
        pack_msgpack({'x': float('nan')})


def test_an_act_is_overtaken_only_by_a_newer_act_of_its_episode():
    book = EpisodeBook()
    episode = book.begin()
    book.act_sent(episode, 1)
    assert not book.overtaken(episode, 1)
    book.act_sent(episode, 2)
    assert book.overtaken(episode, 1) and not book.overtaken(episode, 2)
    other = book.begin()
    assert not book.overtaken(other, 1)
