"""
The contract's observation as openpi's observation dict, and openpi's answer as chunk rows.

The table a team changes for its own robot is an `ObservationMap`; `DROID` is the one of
openpi's DROID example (Physical-Intelligence/openpi, main, examples/droid/main.py, the
`request_data` dict, and the policy's `actions` of joint velocities + gripper position):

| contract observation                  | openpi key                           | sent as          |
|---------------------------------------|--------------------------------------|------------------|
| `images['exterior_1']`                | `observation/exterior_image_1_left`  | uint8 224x224x3  |
| `images['wrist']`                     | `observation/wrist_image_left`       | uint8 224x224x3  |
| `proprioception['joint_positions']`   | `observation/joint_position`         | float64 (7,)     |
| `proprioception['gripper']`           | `observation/gripper_position`       | float64 (1,)     |
| `instruction`                         | `prompt`                             | str              |

Frames are resized with black bars to `image_size`, as the example does with openpi-client's
`image_tools.resize_with_pad` (bilinear); a frame already at that size goes as it is. The
answer's `actions` ([horizon, dims]) are in the model's own space and rate, which the served
catalogue entry names (pi05-droid: joint_velocity at 15 Hz, 8 dims), so rows pass unchanged.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageOps
from sequence_ai_ros.gateway.policy_api import PolicyError


@dataclass(frozen=True)
class ObservationMap:
    """Where each part of the contract's observation goes in openpi's dict (None: not sent)."""

    images: tuple[tuple[str, str], ...]
    joint_positions: str | None
    gripper: str | None
    prompt: str | None
    image_size: tuple[int, int] = (224, 224)
    actions: str = 'actions'


DROID = ObservationMap(
    images=(('exterior_1', 'observation/exterior_image_1_left'),
            ('wrist', 'observation/wrist_image_left')),
    joint_positions='observation/joint_position',
    gripper='observation/gripper_position',
    prompt='prompt',
)


def frame_array(image: Image.Image, size: tuple[int, int]) -> np.ndarray:
    """Return an RGB frame as a height x width x 3 uint8 array of `size`, letterboxed."""
    if image.mode != 'RGB':
        image = image.convert('RGB')
    if image.size != size:
        image = ImageOps.pad(image, size, method=Image.Resampling.BILINEAR, color=(0, 0, 0))
    return np.asarray(image, dtype=np.uint8)


def openpi_observation(table: ObservationMap, observation: dict[str, Any]) -> dict[str, Any]:
    """Build openpi's observation dict; a part the table needs and the request lacks is 422."""
    out: dict[str, Any] = {}
    images = observation['images']
    for view, key in table.images:
        if view not in images:
            raise PolicyError(f'observation.images: the openpi policy needs the {view!r} view '
                              f'(sent as {key})', status=422)
        out[key] = frame_array(images[view], table.image_size)
    proprioception = observation['proprioception']
    for name, key in (('joint_positions', table.joint_positions), ('gripper', table.gripper)):
        if key is None:
            continue
        value = proprioception.get(name)
        if value is None:
            raise PolicyError(f'observation.proprioception.{name}: required by the openpi '
                              f'policy (sent as {key})', status=422)
        out[key] = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if table.prompt is not None:
        out[table.prompt] = observation['instruction']
    return out


def action_rows(table: ObservationMap, answer: Any, steps: int, dim: int) -> np.ndarray:
    """Return the first `steps` rows of the answer's actions, or a 502 naming what is wrong."""
    if not isinstance(answer, dict) or table.actions not in answer:
        keys = sorted(map(str, answer)) if isinstance(answer, dict) else type(answer).__name__
        raise PolicyError(f'openpi server answered without {table.actions!r} (got {keys})',
                          status=502)
    actions = answer[table.actions]
    if not isinstance(actions, np.ndarray) or actions.dtype.kind not in 'fiu':
        raise PolicyError(f'openpi server sent {table.actions!r} that is not a numeric array',
                          status=502)
    if actions.ndim != 2 or actions.shape[1] != dim or actions.shape[0] < steps:
        raise PolicyError(f'openpi server sent {table.actions!r} of shape {actions.shape}; '
                          f'this request needs at least ({steps}, {dim})', status=502)
    rows = actions[:steps].astype(np.float64)
    if not np.isfinite(rows).all():
        raise PolicyError('openpi server sent non-finite actions (NaN or infinity)', status=502)
    return rows
