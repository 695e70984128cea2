"""The 200 paths of the wire contract: health, catalogue, act response shape, openapi."""

import math

from fixtures_gateway import act_body, MODELS, PREFIX, TIME_SCALE
import httpx
import pytest

SPACES = {'pi05-droid': ('joint_velocity', 15, 15.0),
          'cosmos3-edge-policy-droid': ('joint_absolute', 32, 15.0),
          'lingbot-va-5b': ('joint_delta', 16, 25.0),
          'lingbot-vla-v2-6b': ('joint_position', 15, 30.0)}


def test_health_is_public_and_reports_keys(gateway):
    response = httpx.get(gateway.base_url + '/v1/health')
    assert response.status_code == 200
    assert response.json() == {'status': 'ok', 'backend': 'local', 'auth': 'keys'}


def test_health_says_auth_disabled_without_keys(open_gateway):
    assert httpx.get(open_gateway.base_url + '/v1/health').json()['auth'] == 'disabled'
    assert 'auth is disabled' in open_gateway.log()


def test_models_catalogue_rows(gateway):
    response = httpx.get(gateway.base_url + '/v1/models')
    assert response.status_code == 200
    rows = {row['id']: row for row in response.json()['data']}
    assert sorted(rows) == sorted(PREFIX + name for name in MODELS)
    for name, (space, steps, hz) in SPACES.items():
        row = rows[PREFIX + name]
        assert row['endpoint'] == 'act' and row['architecture'] and row['robot'] == 'droid'
        assert (row['action_dim'], row['action_horizon'], row['action_space']) == (8, steps, space)
        assert row['camera_views'] == ['exterior_1', 'wrist']
        # Scaled: rate divided, every duration multiplied, step count unchanged.
        assert row['control_hz'] == pytest.approx(hz / TIME_SCALE)
        assert row['covers_seconds'] == pytest.approx(steps / hz * TIME_SCALE)
        assert row['covers_seconds'] == pytest.approx(steps / row['control_hz'])
        assert row['cold_start_s'] == pytest.approx(100.0 * TIME_SCALE)
        assert row['latency']['median_s'] == pytest.approx(0.78 * TIME_SCALE)
        assert 0.15 <= row['latency']['sigma'] <= 0.25


def test_models_endpoint_filter(gateway):
    act = httpx.get(gateway.base_url + '/v1/models', params={'endpoint': 'act'}).json()['data']
    chat = httpx.get(gateway.base_url + '/v1/models', params={'endpoint': 'chat'}).json()['data']
    assert len(act) == 4 and chat == []


@pytest.mark.parametrize('name', MODELS)
def test_act_response_shape_for_every_model(http, name):
    response = http.post('/v1/act', json=act_body(name))
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {'id', 'model', 'action_chunk', 'perf', 'usage', 'warnings'}
    assert body['id'].startswith('act_') and len(body['id']) > 8
    assert body['model'] == PREFIX + name
    chunk = body['action_chunk']
    space, steps, hz = SPACES[name]
    assert chunk['action_space'] == space and chunk['robot'] == 'droid'
    assert chunk['action_dim'] == 8
    assert chunk['control_frequency_hz'] == pytest.approx(hz / TIME_SCALE)
    assert [s['index'] for s in chunk['steps']] == list(range(steps))
    assert all(len(s['values']) == 8 and all(math.isfinite(v) for v in s['values'])
               for s in chunk['steps'])
    assert len(chunk['steps']) / chunk['control_frequency_hz'] == pytest.approx(
        chunk['covers_seconds'], rel=1e-12)
    assert body['perf']['ttfa_ms'] >= body['perf']['inference_ms'] > 0
    assert body['usage'] == {'observation_tokens': 0, 'action_tokens': 0, 'total_tokens': 0,
                             'frames_received': 2, 'frames_used': 2}
    assert body['warnings'] == []


@pytest.mark.parametrize('name', MODELS)
def test_shorter_horizon_covers_less(http, name):
    body = http.post('/v1/act', json=act_body(name, action_horizon=5)).json()
    chunk = body['action_chunk']
    assert len(chunk['steps']) == 5
    assert chunk['covers_seconds'] == pytest.approx(5 / chunk['control_frequency_hz'])


def test_bare_model_name_is_accepted(http):
    body = act_body()
    body['model'] = 'pi05-droid'
    response = http.post('/v1/act', json=body)
    assert response.status_code == 200
    assert response.json()['model'] == PREFIX + 'pi05-droid'


def test_seed_makes_a_chunk_repeatable_and_no_seed_varies(http):
    def values(**options):
        chunk = http.post('/v1/act', json=act_body('cosmos3-edge-policy-droid', **options))
        return [s['values'] for s in chunk.json()['action_chunk']['steps']]

    assert values(seed=11) == values(seed=11)
    assert values(seed=11) != values(seed=12)
    assert values() != values()


def test_unknown_options_are_passed_but_warned(http):
    body = http.post('/v1/act', json=act_body(return_world_prediction=True)).json()
    assert any('return_world_prediction' in w for w in body['warnings'])


def test_unknown_route_and_method_answer_json_detail(gateway):
    missing = httpx.get(gateway.base_url + '/v1/nothing')
    assert missing.status_code == 404 and isinstance(missing.json()['detail'], str)
    wrong = httpx.get(gateway.base_url + '/v1/act')
    assert wrong.status_code == 405 and isinstance(wrong.json()['detail'], str)


def test_openapi_describes_the_contract(gateway):
    spec = httpx.get(gateway.base_url + '/openapi.json').json()
    assert spec['openapi'].startswith('3.')
    assert set(spec['paths']) == {'/v1/act', '/v1/models', '/v1/health'}
    responses = spec['paths']['/v1/act']['post']['responses']
    assert {'200', '400', '401', '402', '404', '413', '422', '503'} <= set(responses)
