"""
Camera frames of the simulated scene drawn from the arm's state (numpy and Pillow, ROS-free).

Colours are drawn pure (no anti-aliasing, no shading) because the gateway's reference policy
finds the table and the target by colour match; a blended edge pixel would shift what it finds.
"""

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw
from sequence_ai_ros.world import arm_model

BACKGROUND_RGB = (40, 40, 40)
TARGET_RADIUS = 0.03
LINK_WIDTH = 0.045
TOOL_RADIUS = 0.025
# Wrist camera focal length as a fraction of the frame width (about 80 degrees across).
WRIST_FOCAL = 0.6
_MIN_WRIST_HEIGHT = 0.02


def table_square(width: int, height: int) -> tuple[int, int, int]:
    """Left, top and side in pixels of the table: the largest centred square in the frame."""
    side = min(width, height)
    return (width - side) // 2, (height - side) // 2, side


def world_to_pixel(x: float, y: float, width: int, height: int) -> tuple[float, float]:
    """
    Exterior-camera pixel coordinates of a world point on the table plane.

    Continuous coordinates: pixel (i, j) spans [i, i + 1) x [j, j + 1), so its centre is at
    (i + 0.5, j + 0.5); a blob's mean pixel index is therefore this minus 0.5.
    """
    left, top, side = table_square(width, height)
    u, v = arm_model.world_to_table_uv(x, y)
    return left + u * side, top + v * side


def _paint_disc(frame: np.ndarray, cx: float, cy: float, radius: float,
                rgb: Sequence[int]) -> None:
    """Fill pixels whose centres lie within `radius` of (cx, cy): symmetric, so exact centroid."""
    height, width = frame.shape[:2]
    x0, x1 = max(int(cx - radius), 0), min(int(cx + radius) + 2, width)
    y0, y1 = max(int(cy - radius), 0), min(int(cy + radius) + 2, height)
    if x0 >= x1 or y0 >= y1:
        return
    xs = np.arange(x0, x1) + 0.5 - cx
    ys = np.arange(y0, y1)[:, None] + 0.5 - cy
    frame[y0:y1, x0:x1][xs * xs + ys * ys <= radius * radius] = rgb


class SceneRenderer:
    """Draws the exterior (overhead) and wrist views for one frame size."""

    def __init__(self, width: int, height: int) -> None:
        if width < 8 or height < 8:
            raise ValueError('frames must be at least 8x8 pixels')
        self.width, self.height = width, height
        left, top, side = table_square(width, height)
        self._side = side
        self._exterior_bg = Image.new('RGB', (width, height), BACKGROUND_RGB)
        ImageDraw.Draw(self._exterior_bg).rectangle(
            (left, top, left + side - 1, top + side - 1), fill=arm_model.TABLE_RGB)

    def exterior(self, q: Sequence[float], target_xy: Sequence[float]) -> np.ndarray:
        """
        Overhead view, (height, width, 3) uint8 RGB: table, arm, tool, then the target.

        The target is drawn last, over the arm: this simplified overhead camera always sees it,
        so a colour-matching policy can always find it.
        """
        image = self._exterior_bg.copy()
        draw = ImageDraw.Draw(image)
        points = arm_model.joint_positions_3d(q)
        pixels = [world_to_pixel(p[0], p[1], self.width, self.height) for p in points]
        link = max(2, round(LINK_WIDTH * self._side))
        # Higher links are nearer an overhead camera, so they are drawn over lower ones.
        order = sorted(range(len(points) - 1), key=lambda i: points[i, 2] + points[i + 1, 2])
        for i in order:
            draw.line((pixels[i], pixels[i + 1]), fill=arm_model.ARM_RGB, width=link)
        tool_x, tool_y = pixels[-1]
        r = max(1.5, TOOL_RADIUS * self._side)
        draw.ellipse((tool_x - r, tool_y - r, tool_x + r, tool_y + r), fill=arm_model.TOOL_RGB)
        frame = np.array(image)
        cx, cy = world_to_pixel(target_xy[0], target_xy[1], self.width, self.height)
        _paint_disc(frame, cx, cy, max(1.5, TARGET_RADIUS * self._side), arm_model.TARGET_RGB)
        return frame

    def wrist(self, q: Sequence[float], target_xy: Sequence[float]) -> np.ndarray:
        """
        Tool camera looking straight down, (height, width, 3) uint8 RGB.

        A pinhole at the tool centre, image up = world +x like the exterior view; the tool's
        own yaw is ignored. Beyond the table edge is background.
        """
        tool = arm_model.tool_position(q)
        focal = WRIST_FOCAL * self.width / max(float(tool[2]), _MIN_WRIST_HEIGHT)
        cx, cy = self.width / 2.0, self.height / 2.0

        def project(x: float, y: float) -> tuple[float, float]:
            return cx - focal * (y - tool[1]), cy - focal * (x - tool[0])

        image = Image.new('RGB', (self.width, self.height), BACKGROUND_RGB)
        left, top = project(arm_model.TABLE_X[1], arm_model.TABLE_Y[1])
        right, bottom = project(arm_model.TABLE_X[0], arm_model.TABLE_Y[0])
        if right > 0 and bottom > 0 and left < self.width and top < self.height:
            box = (max(left, -1.0), max(top, -1.0),
                   min(right, self.width + 1.0), min(bottom, self.height + 1.0))
            ImageDraw.Draw(image).rectangle(box, fill=arm_model.TABLE_RGB)
        frame = np.array(image)
        tx, ty = project(target_xy[0], target_xy[1])
        _paint_disc(frame, tx, ty, focal * TARGET_RADIUS, arm_model.TARGET_RGB)
        return frame
