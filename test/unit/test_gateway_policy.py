"""The reference policy reads the frame and reaches for the disc; `--policy` plug-ins."""

from fixtures_gateway import act_body, encode, integrate, MODELS, render_scene
import httpx
import numpy as np
from PIL import Image
import pytest
from sequence_ai_ros.gateway.scene import read_scene
from sequence_ai_ros.world import arm_model

HOME = arm_model.HOME


def _goal(target_xy: tuple[float, float]) -> np.ndarray:
    return np.array([*target_xy, arm_model.HOVER_Z])


@pytest.mark.parametrize('name', MODELS)
def test_chunk_moves_the_tool_toward_the_disc(http, name):
    target = (0.55, 0.2)
    chunk = http.post('/v1/act', json=act_body(name, target)).json()['action_chunk']
    joints = integrate(chunk, HOME)
    start, end = arm_model.tool_position(HOME), arm_model.tool_position(joints[-1])
    goal = _goal(target)
    assert np.linalg.norm(goal - end) < np.linalg.norm(goal - start) - 0.1
    moved, wanted = end - start, goal - start
    assert moved @ wanted / (np.linalg.norm(moved) * np.linalg.norm(wanted)) > 0.8
    # Within limits and under the speed cap (0.6 rad/s of model time, plus the noise).
    assert np.all(joints >= arm_model.LOWER_LIMITS - 1e-9)
    assert np.all(joints <= arm_model.UPPER_LIMITS + 1e-9)
    model_period = chunk['covers_seconds'] / len(chunk['steps']) / 0.02
    assert np.abs(np.diff(joints, axis=0)).max() <= 0.6 * model_period + 0.02


def test_mirrored_discs_pull_the_tool_opposite_ways(http):
    ends = {}
    for y in (0.25, -0.25):
        chunk = http.post('/v1/act', json=act_body('pi05-droid', (0.5, y))).json()
        ends[y] = arm_model.tool_position(integrate(chunk['action_chunk'], HOME)[-1])
    start = arm_model.tool_position(HOME)
    assert ends[0.25][1] > start[1] + 0.05 and ends[-0.25][1] < start[1] - 0.05


def test_gripper_closes_only_near_the_hover_point(http):
    # cosmos' 2.13 s chunk is long enough to arrive; the gripper starts open and ends closing.
    chunk = http.post('/v1/act', json=act_body('cosmos3-edge-policy-droid', (0.45, 0.0)))
    steps = chunk.json()['action_chunk']['steps']
    joints = integrate(chunk.json()['action_chunk'], HOME)
    assert np.linalg.norm(arm_model.tool_position(joints[-1]) - _goal((0.45, 0.0))) < 0.03
    assert steps[0]['values'][7] == 0.0 and steps[-1]['values'][7] > 0.5


def test_large_png_letterboxed_frame_is_read(http):
    body = act_body('lingbot-vla-v2-6b')
    image = render_scene((0.6, -0.2), frame=(640, 360), table_box=(100, 10, 540, 350), out=640)
    body['observation']['images'][0]['data'] = encode(image, 'PNG')
    response = http.post('/v1/act', json=body).json()
    end = arm_model.tool_position(integrate(response['action_chunk'], HOME)[-1])
    start, goal = arm_model.tool_position(HOME), _goal((0.6, -0.2))
    assert np.linalg.norm(goal - end) < np.linalg.norm(goal - start) - 0.05
    assert any('640x640' in w and 'resiz' in w for w in response['warnings'])


@pytest.mark.parametrize('name', MODELS)
def test_no_disc_means_hold_and_a_warning(http, name):
    response = http.post('/v1/act', json=act_body(name, target_xy=None)).json()
    joints = integrate(response['action_chunk'], HOME)
    assert np.allclose(joints, HOME, atol=1e-12)
    assert any('no target' in w and 'holding' in w for w in response['warnings'])


def test_no_exterior_frame_means_hold_and_a_warning(http):
    body = act_body('lingbot-va-5b')
    del body['observation']['images'][0]
    response = http.post('/v1/act', json=body).json()
    assert np.allclose(integrate(response['action_chunk'], HOME), HOME)
    assert response['usage']['frames_received'] == 1
    assert any('no exterior_1 frame' in w for w in response['warnings'])


@pytest.mark.parametrize('target', [(0.35, -0.3), (0.5, 0.0), (0.65, 0.3)])
def test_scene_reader_finds_the_disc_through_jpeg_and_letterbox(target):
    image = render_scene(target)
    decoded = Image.open(__import__('io').BytesIO(
        __import__('base64').b64decode(encode(image)))).convert('RGB')
    scene = read_scene(decoded)
    assert scene.target_xy == pytest.approx(target, abs=0.01)
    left, top, right, bottom = scene.table_box
    assert top > 10 and bottom < 214  # the black bars are not table


def test_scene_reader_without_a_table():
    assert read_scene(Image.new('RGB', (224, 224))).target_xy is None


def test_plugin_policy_serves_its_rows(plugin_gateway):
    response = httpx.post(plugin_gateway.base_url + '/v1/act',
                          json=act_body('lingbot-va-5b', action_horizon=4))
    assert response.status_code == 200, response.text
    body = response.json()
    values = [s['values'] for s in body['action_chunk']['steps']]
    assert values == [[i * 0.001] * 7 + [224.0] for i in range(4)]
    assert "plug-in saw ['exterior_1', 'wrist']" in body['warnings']
    assert plugin_gateway.stats()['policy'] == 'fixtures_gateway:make_plugin_policy'


@pytest.mark.parametrize('mode, fragment', [
    ('shape', 'returned shape (15, 7); expected (15, 8)'),
    ('nan', 'non-finite'),
    ('raise', 'raised RuntimeError: plug-in exploded'),
])
def test_misbehaving_plugin_is_a_500_with_a_clear_detail(plugin_gateway, mode, fragment):
    body = act_body('pi05-droid')
    body['observation']['instruction'] = mode
    response = httpx.post(plugin_gateway.base_url + '/v1/act', json=body)
    assert response.status_code == 500
    detail = response.json()['detail']
    assert isinstance(detail, str) and 'fixtures_gateway:make_plugin_policy' in detail
    assert fragment in detail
