"""The smallest observation a catalogue row accepts: what doctor's one test call sends."""

import base64
import time
from typing import Any

INSTRUCTION = 'hold still (sequence-ai-ros doctor)'

# A 224x224 plain grey JPEG (quality 90): a uniform frame entropy-codes to zero bytes, so only
# the headers need spelling out. Built here rather than with Pillow, which the client lacks.
_JPEG_HEAD = (
    '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQEBQoHBwYIDAoMDAsKCwsN'
    'DhIQDQ4RDgsLEBYQERMUFRUVDA8XGBYUGBIUFRT/2wBDAQMEBAUEBQkFBQkUDQsNFBQUFBQUFBQUFBQU'
    'FBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBT/wAARCADgAOADASIAAhEBAxEB/8QA'
    'FAABAAAAAAAAAAAAAAAAAAAAAP/EABQQAQAAAAAAAAAAAAAAAAAAAAD/xAAUAQEAAAAAAAAAAAAAAAAA'
    'AAAA/8QAFBEBAAAAAAAAAAAAAAAAAAAAAP/aAAwDAQACEQMRAD8A'
)
PLAIN_JPEG = base64.b64decode(_JPEG_HEAD) + bytes(294) + b'\xff\xd9'


def probe_observation(row: dict[str, Any]) -> dict[str, Any]:
    """Build the smallest valid observation for a catalogue row: plain frames, zero joints."""
    joints = row.get('joint_count')
    if not isinstance(joints, int) or isinstance(joints, bool):
        dim = row.get('action_dim')
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 2:
            raise ValueError('the catalogue row has neither joint_count nor a usable action_dim')
        joints = dim - 1
    frame = base64.b64encode(PLAIN_JPEG).decode('ascii')
    stamp = int(time.time() * 1000)
    return {
        'images': [{'view': str(view), 'data': frame, 'timestamp_ms': stamp}
                   for view in row.get('camera_views') or ()],
        'proprioception': {'joint_positions': [0.0] * joints, 'gripper': 0.0},
        'instruction': INSTRUCTION,
    }
