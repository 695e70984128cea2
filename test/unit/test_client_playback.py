"""PlaybackOptions (one set of playback defaults and checks) and the PolicyObserver hook."""

from fixtures_gateway import gateway_fixture
from observations import observation
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.client import blend_weight, ChunkEngine, PlaybackOptions

KEY = 'seq_playback_tests_key_00000001'
OBS = observation()


def accept(action):
    return True


gateway = gateway_fixture(['--time-scale', '0.2', '--start-warm'], keys={KEY: 100000})


def connect(gateway, model='pi05-droid', **kwargs):
    return sai.connect(model, base_url=gateway.base_url, api_key=KEY, **kwargs)


class Recorder(sai.PolicyObserver):
    """Write down every call of the hook, in order."""

    def __init__(self):
        self.calls = []

    def request_sent(self, observation):
        self.calls.append(('sent', observation))

    def answer_received(self, observation, prediction, round_trip_s):
        self.calls.append(('answered', observation, prediction, round_trip_s))

    def request_failed(self, observation, error):
        self.calls.append(('failed', observation, error))

    def kinds(self):
        return [call[0] for call in self.calls]


# -- the fold of run()'s keywords -------------------------------------------------------------

def test_the_loose_names_build_the_playback_and_the_rest_go_on_the_wire():
    playback, wire = PlaybackOptions.from_keywords(
        None, {'prefetch': False, 'join_mode': 'aligned', 'action_horizon': 8})
    assert playback == PlaybackOptions(prefetch=False, join_mode='aligned')
    assert wire == {'action_horizon': 8}
    assert PlaybackOptions.from_keywords(None, {}) == (PlaybackOptions(), {})
    given = PlaybackOptions(max_inflight=3)
    assert PlaybackOptions.from_keywords(given, {'instruction': 'x'}) == \
        (given, {'instruction': 'x'})


def test_the_former_names_join_and_retries_still_work_with_a_deprecation_warning():
    wanted = PlaybackOptions(join_mode='rtc', request_retries=5)
    with pytest.warns(DeprecationWarning) as caught:
        assert PlaybackOptions(join='rtc', retries=5) == wanted
        assert PlaybackOptions().with_changes(join='rtc', request_retries=5) == wanted
    # Only DeprecationWarnings: a ResourceWarning of an earlier test's garbage may land here.
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert [str(w.message) for w in deprecations] == [
        'join= is deprecated: pass join_mode=', 'retries= is deprecated: pass request_retries=',
        'join= is deprecated: pass join_mode=']
    assert all(w.filename == __file__ for w in deprecations), 'the warning names the caller'
    with pytest.warns(DeprecationWarning, match='request_retries'):
        assert PlaybackOptions.from_keywords(None, {'retries': 5, 'seed': 1}) == \
            (PlaybackOptions(request_retries=5), {'seed': 1})
    with pytest.raises(TypeError, match='join_mode'):
        PlaybackOptions(join='rtc', join_mode='aligned')


def test_a_field_given_twice_or_a_playback_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match='prefetch'):
        PlaybackOptions.from_keywords(PlaybackOptions(), {'prefetch': False})
    with pytest.raises(TypeError, match='PlaybackOptions'):
        PlaybackOptions.from_keywords({'prefetch': False}, {})  # type: ignore[arg-type]


@pytest.mark.parametrize('field, bad', [
    ('join_mode', 'sideways'), ('seam_blend', 'cubic'), ('max_inflight', 0), ('smooth_seam', -1),
    ('request_retries', 1.5), ('retry_backoff_s', -0.1), ('startup_timeout_s', -1),
    ('prefetch', 'no'),
])
def test_a_bad_value_is_a_value_error_naming_the_field(field, bad):
    with pytest.raises(ValueError, match=field):
        PlaybackOptions(**{field: bad})


def test_the_engine_plays_as_its_playback_options_say_with_their_defaults():
    defaults = PlaybackOptions()
    engine = ChunkEngine(PlaybackOptions(join_mode='rtc', smooth_seam=3))
    assert (engine.join_mode, engine.smooth_seam, engine.seam_blend, engine.max_inflight) == \
        ('rtc', 3, defaults.seam_blend, defaults.max_inflight)
    bare = ChunkEngine()
    assert (bare.join_mode, bare.seam_blend, bare.max_inflight, bare.smooth_seam) == \
        (defaults.join_mode, defaults.seam_blend, defaults.max_inflight, defaults.smooth_seam)


def test_run_refuses_bad_or_doubled_playback_before_sending_anything(gateway):
    recorder = Recorder()
    with connect(gateway, observer=recorder) as policy:
        with pytest.raises(TypeError, match='join_mode'):
            policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=5,
                       playback=PlaybackOptions(), join_mode='aligned')
        with pytest.raises(ValueError, match='max_inflight'):
            policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=5,
                       max_inflight=0)
        with pytest.warns(DeprecationWarning, match='join_mode') as caught, \
                pytest.raises(ValueError, match='max_inflight'):
            policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=5,
                       join='aligned', max_inflight=0)
        assert caught[0].filename == __file__, 'the warning names the caller of run()'
    assert recorder.calls == []


def test_run_blends_with_the_default_playbacks_ramp(gateway):
    # Only smooth_seam is given: the ramp's shape is PlaybackOptions' default, as for the node.
    chunks, acts = [], []
    with connect(gateway, model='lingbot-vla-v2-6b') as policy:
        outcome = policy.run(lambda: OBS, acts.append, validate=accept, max_actions=60,
                             smooth_seam=4, on_chunk=chunks.append)
    assert outcome.reason == 'completed' and outcome.blended_steps > 0
    assert outcome.dropped_steps == 0 and outcome.stale_chunks == 0, 'append plays every step'
    expected = blend_weight(0, 4, PlaybackOptions().seam_blend)
    assert expected != blend_weight(0, 4, 'linear')
    weights, first = [], 0
    for prediction in chunks[:-1]:
        first += len(prediction.action_chunk.steps)
        if first >= len(acts):
            break
        nxt = chunks[chunks.index(prediction) + 1].action_chunk.steps[0]
        last, played = acts[first - 1], acts[first]
        for a, r, v in zip(last, nxt, played):
            if abs(r - a) > 1e-6:
                weights.append((v - a) / (r - a))
    assert weights and all(abs(w - expected) < 1e-6 for w in weights), weights


# -- the observer hook ------------------------------------------------------------------------

def test_the_observer_sees_each_request_once_answered_or_failed(gateway):
    recorder = Recorder()
    bad = observation(views=('exterior_1', 'not_a_view'))
    with connect(gateway, observer=recorder) as policy:
        first = policy.predict(OBS)
        with pytest.raises(sai.InvalidRequest) as caught:
            policy.predict(bad)
        second = policy.predict(OBS)
    assert recorder.kinds() == ['sent', 'answered', 'sent', 'failed', 'sent', 'answered']
    sent = [call[1] for call in recorder.calls if call[0] == 'sent']
    assert sent[0] is OBS and sent[1] is bad and sent[2] is OBS
    answered = [call for call in recorder.calls if call[0] == 'answered']
    assert [call[2] for call in answered] == [first, second]
    assert all(call[1] is OBS and call[3] > 0 for call in answered)
    failed = recorder.calls[3]
    assert failed[1] is bad and failed[2] is caught.value


def test_the_observer_accounts_for_every_request_of_a_run(gateway):
    recorder = Recorder()
    with connect(gateway, observer=recorder) as policy:
        outcome = policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=40)
    kinds = recorder.kinds()
    assert outcome.requests >= 2 and kinds.count('sent') == outcome.requests
    assert kinds.count('answered') + kinds.count('failed') <= outcome.requests
    assert kinds.count('failed') == outcome.failed_requests == 0
