"""
Reading the exterior camera frame: where the table is, and where on it the red target is.

The camera looks straight down (see arm_model); the table's bounding box in the image is the
table's uv square, whatever the frame size or letterbox padding around it.
"""

from dataclasses import dataclass

import numpy as np
from PIL import Image
from sequence_ai_ros.world import arm_model

# Colour tolerances (max per-channel difference) wide enough for JPEG at quality ~85+.
TABLE_TOLERANCE = 40
TARGET_TOLERANCE = 70
# A row or column belongs to the table when it has this share of the fullest one's pixels;
# it keeps stray table-coloured pixels and the arm's shadow from moving the box.
EDGE_SHARE = 0.25
MIN_TABLE_SHARE = 0.02
MIN_TARGET_PIXELS = 3


@dataclass(frozen=True)
class Scene:
    """What a frame shows: the target's world (x, y), or None and why not."""

    target_xy: tuple[float, float] | None
    table_box: tuple[int, int, int, int] | None = None
    problem: str = ''


def _near(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int) -> np.ndarray:
    mask: np.ndarray = np.abs(pixels - np.array(rgb, dtype=np.int16)).max(axis=2) <= tolerance
    return mask


def _span(counts: np.ndarray) -> tuple[int, int]:
    rows = np.nonzero(counts >= EDGE_SHARE * counts.max())[0]
    return int(rows[0]), int(rows[-1])


def read_scene(image: Image.Image) -> Scene:
    """Locate the table and the target in an RGB top-down frame."""
    pixels = np.asarray(image.convert('RGB'), dtype=np.int16)
    table = _near(pixels, arm_model.TABLE_RGB, TABLE_TOLERANCE)
    if table.sum() < MIN_TABLE_SHARE * table.size:
        return Scene(None, problem='no table in the exterior_1 frame')
    top, bottom = _span(table.sum(axis=1))
    left, right = _span(table.sum(axis=0))
    box = (left, top, right, bottom)
    target = _near(pixels[top:bottom + 1, left:right + 1], arm_model.TARGET_RGB,
                   TARGET_TOLERANCE)
    ys, xs = np.nonzero(target)
    if xs.size < MIN_TARGET_PIXELS:
        return Scene(None, box, 'no target visible on the table')
    # Pixel centres, as fractions of the table's extent.
    u = (xs.mean() + 0.5) / (right - left + 1)
    v = (ys.mean() + 0.5) / (bottom - top + 1)
    x, y = arm_model.table_uv_to_world(float(u), float(v))
    return Scene((x, y), box)
