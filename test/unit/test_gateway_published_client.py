"""
The published sequence-ai 0.1.0 client works against the local gateway unchanged.

`sequence-ai==0.1.0` is pinned in requirements-dev.txt and used exactly as published.
"""

import time

from fixtures_gateway import act_body, CLIENT_KEY, CLIENT_TWO_CREDIT_KEY, MAIN_KEY, PREFIX
import pytest
import sequence_ai


def _observation(**changes: object):
    wire = act_body()['observation']
    proprioception = dict(wire['proprioception'], **changes)
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(f['view'], f['data']) for f in wire['images']],
        proprioception=sequence_ai.Proprioception(**proprioception),
        instruction=wire['instruction'])


def test_models_lists_the_catalogue(gateway):
    models = sequence_ai.models(endpoint='act', base_url=gateway.base_url)
    assert {m.short_id for m in models} == {
        'pi05-droid', 'cosmos3-edge-policy-droid', 'lingbot-va-5b', 'lingbot-vla-v2-6b'}
    pi05 = next(m for m in models if m.short_id == 'pi05-droid')
    assert (pi05.action_dim, pi05.action_horizon, pi05.camera_views) == (
        8, 15, ('exterior_1', 'wrist'))


def test_predict_returns_a_chunk(gateway):
    with sequence_ai.connect('pi05-droid', api_key=CLIENT_KEY,
                             base_url=gateway.base_url) as policy:
        prediction = policy.predict(_observation(), seed=3)
        again = policy.next_action(_observation())
    chunk = prediction.action_chunk
    assert prediction.model == PREFIX + 'pi05-droid' and prediction.id.startswith('act_')
    assert len(chunk) == 15 and all(len(step) == 8 for step in chunk.steps)
    assert chunk.action_space == 'joint_velocity'
    assert len(chunk) / chunk.control_frequency_hz == pytest.approx(chunk.covers_seconds)
    assert len(again) == 8


def test_errors_map_to_the_clients_types(gateway):
    url = gateway.base_url
    with sequence_ai.connect('pi05-droid', api_key='seq_unknown_key_00', base_url=url) as p:
        with pytest.raises(sequence_ai.AuthError) as auth:
            p.predict(_observation())
    assert auth.value.status == 401
    with sequence_ai.connect('no-such-model', api_key=MAIN_KEY, base_url=url) as p:
        with pytest.raises(sequence_ai.InvalidRequest) as missing:
            p.predict(_observation())
    assert missing.value.status == 404
    with sequence_ai.connect('pi05-droid', api_key=MAIN_KEY, base_url=url) as p:
        with pytest.raises(sequence_ai.InvalidRequest) as invalid:
            p.predict(_observation(joint_positions=[0.0] * 6))
    assert invalid.value.status == 422 and 'expected 7 numbers, got 6' in str(invalid.value)
    with sequence_ai.connect('pi05-droid', api_key=CLIENT_TWO_CREDIT_KEY, base_url=url) as p:
        p.predict(_observation())
        p.predict(_observation())
        with pytest.raises(sequence_ai.OutOfCredit) as out:
            p.predict(_observation())
    assert out.value.status == 402


def test_warming_becomes_unavailable_with_retry_after(cold_gateway):
    with sequence_ai.connect('lingbot-vla-v2-6b', api_key=MAIN_KEY,
                             base_url=cold_gateway.base_url) as policy:
        with pytest.raises(sequence_ai.Unavailable) as caught:
            policy.predict(_observation())
        error = caught.value
        assert error.warming is True and error.status == 503
        assert isinstance(error.retry_after_s, float) and 0 < error.retry_after_s <= 0.5
        assert error.job_id.startswith('warm_') and 'warming up' in str(error)
        time.sleep(error.retry_after_s + 0.05)
        assert len(policy.predict(_observation()).action_chunk) == 15
