"""400, 404, 413 and 422: each refusal names what is wrong, as a string detail."""

import base64
import copy
import io

from fixtures_gateway import act_body, AUTH, encode, raw_json
import httpx
from PIL import Image
import pytest


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {'detail'} and isinstance(body['detail'], str)
    return body['detail']


@pytest.mark.parametrize('content, fragment', [
    (b'', 'empty'),
    (b'{"model": ', 'not valid JSON'),
    (b'{"model": "\xff"}', 'UTF-8'),
    (b'[1, 2]', 'must be a JSON object, got an array'),
    (b'"text"', 'got a string'),
    (b'[' * 100000 + b']' * 100000, 'nested too deeply'),
])
def test_400_for_a_body_that_is_not_a_json_object(http, content, fragment):
    assert fragment in _error(http.post('/v1/act', content=content), 400)


def test_404_for_an_unknown_model_lists_the_known_ones(http):
    body = act_body()
    body['model'] = 'accounts/sequences/models/gpt-arm'
    detail = _error(http.post('/v1/act', json=body), 404)
    assert detail.startswith('model:') and 'gpt-arm' in detail and 'pi05-droid' in detail


def _gif() -> str:
    buffer = io.BytesIO()
    Image.new('RGB', (8, 8)).save(buffer, 'GIF')
    return base64.b64encode(buffer.getvalue()).decode()


def _set(path: str, value: object):
    """Return a mutation of the valid body: set the dotted path (list indices as numbers)."""
    def apply(body: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split('.')]
        node = body
        for part in parents:
            node = node[part]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value
    return apply


_DELETE = object()
_VALID = act_body()
_P = 'observation.proprioception.'
CASES_422 = [
    (_set('model', _DELETE), 'model: expected a model id string'),
    (_set('model', 5), 'model: expected a model id string, got a number'),
    (_set('observation', _DELETE), 'observation: expected an object, got null'),
    (_set('observation', []), 'observation: expected an object, got an array'),
    (_set('observation.images', _DELETE), 'observation.images: required'),
    (_set('observation.images', {}), 'observation.images: expected an array'),
    (_set('observation.images.0', 'frame'), 'observation.images[0]: expected an object'),
    (_set('observation.images.0.view', 'left'),
     "observation.images[0].view: 'left' is not a camera view"),
    (_set('observation.images.1.view', 'exterior_1'),
     "observation.images[1].view: 'exterior_1' appears more than once"),
    (_set('observation.images.0.view', None), 'observation.images[0].view: expected'),
    (_set('observation.images.0.data', 'not base64!'),
     'observation.images[0].data: is not valid base64'),
    (_set('observation.images.0.data', base64.b64encode(b'no image here').decode()),
     'observation.images[0].data: is not a decodable JPEG or PNG'),
    (_set('observation.images.0.data', _gif()), 'observation.images[0].data: is a GIF image'),
    (_set('observation.images.0.data', 'https://example.com/frame.jpg'),
     'URLs are never fetched'),
    (_set('observation.images.0.data', 7), 'observation.images[0].data: expected a base64'),
    (_set('observation.images.0.timestamp_ms', 'now'),
     'observation.images[0].timestamp_ms: expected a finite number'),
    (_set('observation.proprioception', _DELETE), 'observation.proprioception: expected an'),
    (_set(_P + 'joint_positions', _DELETE), _P + 'joint_positions: required'),
    (_set(_P + 'joint_positions', [0.0] * 6), _P + 'joint_positions: expected 7 numbers, got 6'),
    (_set(_P + 'joint_positions', [0.0] * 8), _P + 'joint_positions: expected 7 numbers, got 8'),
    (_set(_P + 'joint_positions', 'home'), _P + 'joint_positions: expected 7 numbers, got a'),
    (_set(_P + 'joint_positions.2', 'x'),
     _P + 'joint_positions[2]: expected a finite number, got a string'),
    (_set(_P + 'joint_positions.3', True),
     _P + 'joint_positions[3]: expected a finite number, got a boolean'),
    (_set(_P + 'joint_positions.0', float('nan')),
     _P + 'joint_positions[0]: expected a finite number, got NaN'),
    (_set(_P + 'joint_positions.6', float('inf')),
     _P + 'joint_positions[6]: expected a finite number, got Infinity'),
    (_set(_P + 'joint_velocities', [0.0] * 3), _P + 'joint_velocities: expected 7 numbers'),
    (_set(_P + 'end_effector_pose', [0.0, float('-inf')]), _P + 'end_effector_pose[1]'),
    (_set(_P + 'gripper', float('nan')), _P + 'gripper: expected a finite number, got NaN'),
    (_set('observation.instruction', ['pick']), 'observation.instruction: expected a string'),
    (_set('action_horizon', 0), 'action_horizon: expected an integer between 1 and 15, got 0'),
    (_set('action_horizon', 16), 'action_horizon: expected an integer between 1 and 15, got 16'),
    (_set('action_horizon', 2.5), 'action_horizon: expected an integer'),
    (_set('action_horizon', True), 'action_horizon: expected an integer'),
    (_set('seed', 'lucky'), 'seed: expected an integer'),
    (_set('seed', 1.5), 'seed: expected an integer'),
    (_set('robot', 'ur5'), "robot: pi05-droid drives 'droid'"),
]


@pytest.mark.parametrize('mutate, fragment', CASES_422,
                         ids=[fragment[:48] for _, fragment in CASES_422])
def test_422_names_the_field(http, mutate, fragment):
    body = copy.deepcopy(_VALID)
    mutate(body)
    assert fragment in _error(http.post('/v1/act', content=raw_json(body)), 422)


def test_overflowing_number_literal_is_not_finite(http):
    text = raw_json(_VALID).replace(b'"joint_positions": [0.0', b'"joint_positions": [1e400')
    assert 'joint_positions[0]: expected a finite number, got Infinity' in _error(
        http.post('/v1/act', content=text), 422)


def test_huge_integer_literal_is_not_finite(http):
    text = raw_json(_VALID).replace(b'"joint_positions": [0.0', b'"joint_positions": [-' +
                                    b'9' * 400)
    assert 'joint_positions[0]: expected a finite number, got -Infinity' in _error(
        http.post('/v1/act', content=text), 422)


def test_nulls_for_optional_fields_mean_not_reported(http):
    body = act_body()
    body['observation']['proprioception'].update(
        joint_velocities=None, end_effector_pose=None, gripper=None)
    body['observation']['images'][0]['timestamp_ms'] = None
    assert http.post('/v1/act', json=body).status_code == 200


def test_png_and_data_uri_frames_are_accepted(http):
    body = act_body()
    frame = body['observation']['images'][0]
    frame['data'] = 'data:image/png;base64,' + encode(Image.new('RGB', (224, 224)), 'PNG')
    assert http.post('/v1/act', json=body).status_code == 200


def test_413_from_content_length_without_reading_the_body(small_body_gateway):
    with httpx.Client(base_url=small_body_gateway.base_url, headers=AUTH) as client:
        response = client.post('/v1/act', content=b' ' * 5_000_000)
    detail = _error(response, 413)
    assert 'limit of 200000 bytes' in detail and '5000000' in detail


def test_413_while_streaming_a_chunked_body(small_body_gateway):
    def chunks():
        for _ in range(100):
            yield b' ' * 10_000

    with httpx.Client(base_url=small_body_gateway.base_url) as client:
        response = client.post('/v1/act', content=chunks())
    assert 'limit of 200000 bytes' in _error(response, 413)


def test_a_body_under_the_limit_passes(small_body_gateway):
    response = httpx.post(small_body_gateway.base_url + '/v1/act', json=act_body())
    assert response.status_code == 200
