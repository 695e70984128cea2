"""
ROS 2 messages as CDR bytes without rclpy: the plain-Python client's encoder.

The ROS node serializes with rclpy (rclpy.serialization.serialize_message); a process without
ROS encodes the same bytes from a dict of the message's fields with mcap-ros2-support's
encoder, built from the definitions in schemas.py.
"""

from collections.abc import Callable, Sequence
import json
from typing import Any

from .dependency import mcap_module
from .schemas import COMPRESSED_IMAGE, DEFINITIONS, FLOAT64_ARRAY, JOINT_STATE, STRING

Encoder = Callable[[dict[str, Any]], bytes]
_encoders: dict[str, Encoder] = {}


def encoder(type_name: str) -> Encoder:
    """Return the CDR encoder of one of schemas.DEFINITIONS' types (built once)."""
    found: Encoder | None = _encoders.get(type_name)
    if found is None:
        # serialize_dynamic is what mcap_ros2.writer.Writer encodes with; it writes into a
        # writer of its own, and the episode file takes bytes from the node (rclpy) as well.
        serialize_dynamic = mcap_module('mcap_ros2._dynamic').serialize_dynamic
        found = serialize_dynamic(type_name, DEFINITIONS[type_name])[type_name]
        _encoders[type_name] = found
    return found


def build_encoders() -> None:
    """Build every type's encoder now: the first build takes tens of milliseconds of GIL."""
    for type_name in DEFINITIONS:
        encoder(type_name)


def encode(type_name: str, fields: dict[str, Any]) -> bytes:
    """Encode one message of `type_name` from its fields."""
    return bytes(encoder(type_name)(fields))


def header(stamp_ns: int, frame_id: str = '') -> dict[str, Any]:
    """Return a std_msgs/Header's fields."""
    return {'stamp': {'sec': stamp_ns // 1_000_000_000, 'nanosec': stamp_ns % 1_000_000_000},
            'frame_id': frame_id}


def string(value: Any) -> bytes:
    """Encode a std_msgs/String: text as is, anything else as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, default=_plain)
    return encode(STRING, {'data': text})


def compressed_image(stamp_ns: int, frame_id: str, image_format: str, data: bytes) -> bytes:
    """Encode a sensor_msgs/CompressedImage holding `data` exactly as given."""
    return encode(COMPRESSED_IMAGE, {'header': header(stamp_ns, frame_id),
                                     'format': image_format, 'data': data})


def float64_array(values: Sequence[float]) -> bytes:
    """Encode a std_msgs/Float64MultiArray with no layout, as a forward controller takes it."""
    return encode(FLOAT64_ARRAY, {'layout': {'dim': [], 'data_offset': 0},
                                  'data': [float(v) for v in values]})


def joint_state(stamp_ns: int, names: Sequence[str], positions: Sequence[float]) -> bytes:
    """Encode a sensor_msgs/JointState with positions only."""
    return encode(JOINT_STATE, {'header': header(stamp_ns), 'name': list(names),
                                'position': [float(p) for p in positions], 'velocity': [],
                                'effort': []})


def _plain(value: Any) -> Any:
    """JSON for what json cannot write itself (tuples are lists already; sets, objects)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return repr(value)
