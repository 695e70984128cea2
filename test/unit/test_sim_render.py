"""The simulated cameras: geometry, and the pure colours a colour-matching policy needs."""

import time

import numpy as np
import pytest
from sequence_ai_ros.sim.render import (
    BACKGROUND_RGB,
    SceneRenderer,
    table_square,
    TARGET_RADIUS,
    world_to_pixel,
)
from sequence_ai_ros.world import arm_model

HOME = arm_model.HOME
# A pose that swings the arm to one side, so links cross the table diagonally.
SWUNG = np.array([0.6, 0.3, 0.0, -1.8, 0.0, 2.0, 0.785])


def mask(frame, rgb):
    return np.all(frame == np.array(rgb, dtype=np.uint8), axis=-1)


def centroid(frame, rgb):
    rows, cols = np.nonzero(mask(frame, rgb))
    assert rows.size, f'no {rgb} pixels'
    return cols.mean() + 0.5, rows.mean() + 0.5


def bbox(frame, rgb):
    rows, cols = np.nonzero(mask(frame, rgb))
    return cols.min(), rows.min(), cols.max(), rows.max()


@pytest.mark.parametrize('width, height', [(320, 240), (240, 320), (224, 224), (97, 61)])
def test_frames_have_the_requested_shape_and_dtype(width, height):
    renderer = SceneRenderer(width, height)
    for frame in (renderer.exterior(HOME, (0.5, 0.2)), renderer.wrist(HOME, (0.5, 0.2))):
        assert frame.shape == (height, width, 3)
        assert frame.dtype == np.uint8


@pytest.mark.parametrize('width, height', [(320, 240), (240, 320)])
def test_table_is_the_largest_centred_square_and_the_rest_is_background(width, height):
    frame = SceneRenderer(width, height).exterior(SWUNG, (0.4, -0.2))
    left, top, side = table_square(width, height)
    assert side == min(width, height)
    assert bbox(frame, arm_model.TABLE_RGB) == (left, top, left + side - 1, top + side - 1)
    outside = np.ones((height, width), dtype=bool)
    outside[top:top + side, left:left + side] = False
    assert np.all(mask(frame, BACKGROUND_RGB)[outside])


@pytest.mark.parametrize('target', [(0.5, 0.2), (0.36, -0.29), (0.64, 0.0)])
@pytest.mark.parametrize('width, height', [(320, 240), (200, 300)])
def test_target_centroid_lands_where_the_table_mapping_says(target, width, height):
    frame = SceneRenderer(width, height).exterior(SWUNG, target)
    cx, cy = centroid(frame, arm_model.TARGET_RGB)
    ex, ey = world_to_pixel(*target, width, height)
    assert abs(cx - ex) < 0.5 and abs(cy - ey) < 0.5
    # What the reference policy does: table bbox, then red centroid, back to world.
    x0, y0, x1, y1 = bbox(frame, arm_model.TABLE_RGB)
    u = (cx - x0) / (x1 + 1 - x0)
    v = (cy - y0) / (y1 + 1 - y0)
    pixel_m = 1.0 / min(width, height)
    np.testing.assert_allclose(arm_model.table_uv_to_world(u, v), target, atol=2 * pixel_m)


def test_target_is_drawn_over_the_arm():
    tool = arm_model.tool_position(HOME)
    renderer = SceneRenderer(320, 240)
    frame = renderer.exterior(HOME, tool[:2])
    radius = TARGET_RADIUS * 240
    assert mask(frame, arm_model.TARGET_RGB).sum() == pytest.approx(np.pi * radius ** 2, rel=0.1)
    assert not mask(frame, arm_model.TOOL_RGB).all()
    assert mask(renderer.exterior(HOME, (0.5, 0.3)), arm_model.TOOL_RGB).sum() > 20


def test_exterior_uses_only_the_scene_colours():
    frame = SceneRenderer(320, 240).exterior(SWUNG, (0.5, 0.25))
    colours = {tuple(c) for c in np.unique(frame.reshape(-1, 3), axis=0)}
    scene = {BACKGROUND_RGB, arm_model.TABLE_RGB, arm_model.ARM_RGB, arm_model.TOOL_RGB,
             arm_model.TARGET_RGB}
    assert colours == scene


def test_exterior_arm_follows_the_joints():
    renderer = SceneRenderer(320, 240)
    home = mask(renderer.exterior(HOME, (0.5, 0.25)), arm_model.TOOL_RGB)
    swung = mask(renderer.exterior(SWUNG, (0.5, 0.25)), arm_model.TOOL_RGB)
    tool = arm_model.tool_position(SWUNG)
    ex, ey = world_to_pixel(tool[0], tool[1], 320, 240)
    rows, cols = np.nonzero(swung)
    assert abs(cols.mean() + 0.5 - ex) < 1.0 and abs(rows.mean() + 0.5 - ey) < 1.0
    assert not np.array_equal(home, swung)


def test_wrist_sees_the_target_centred_below_the_tool_and_offset_with_it():
    renderer = SceneRenderer(320, 240)
    tool = arm_model.tool_position(HOME)
    cx, cy = centroid(renderer.wrist(HOME, tool[:2]), arm_model.TARGET_RGB)
    assert abs(cx - 160) < 0.5 and abs(cy - 120) < 0.5
    # Target further forward (+x) appears higher up; further left (+y) appears further left.
    fx, fy = centroid(renderer.wrist(HOME, (tool[0] + 0.1, tool[1] + 0.05)), arm_model.TARGET_RGB)
    assert fy < cy - 10 and fx < cx - 5
    assert mask(renderer.wrist(HOME, (tool[0] + 0.1, 0.0)), arm_model.TABLE_RGB).any()


def test_wrist_target_grows_as_the_tool_descends():
    renderer = SceneRenderer(320, 240)
    high, low = HOME, np.array([0.0, 0.2, 0.0, -2.0, 0.0, 2.2, 0.785])
    assert arm_model.tool_position(low)[2] < arm_model.tool_position(high)[2]
    sizes = [mask(renderer.wrist(q, arm_model.tool_position(q)[:2]), arm_model.TARGET_RGB).sum()
             for q in (high, low)]
    assert sizes[1] > sizes[0]


def test_render_is_fast_enough_for_the_camera_timer():
    renderer = SceneRenderer(320, 240)
    renderer.exterior(SWUNG, (0.5, 0.2))
    start = time.perf_counter()
    for _ in range(50):
        renderer.exterior(SWUNG, (0.5, 0.2))
        renderer.wrist(SWUNG, (0.5, 0.2))
    per_pair_ms = (time.perf_counter() - start) / 50 * 1e3
    assert per_pair_ms < 10.0  # target is < 5 ms per frame; this leaves CI headroom
