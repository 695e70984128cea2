"""
A /rosout message's severity as an int on every ROS 2 distribution.

rcl_interfaces/msg/Log has a `uint8 level` field everywhere, but Humble (rcl_interfaces 1.2)
declares its constants DEBUG..FATAL as `byte`, which rclpy gives as one-byte `bytes` (ERROR is
b'('), while Jazzy and Kilted (2.0 on) declare them `uint8`. So `msg.level >= Log.ERROR` raises
TypeError on Humble and `msg.level == Log.ERROR` never matches: compare `log_level(msg)` with
the int constants here instead of with Log's.
"""

from typing import Protocol

# rcutils' severities, the values of Log's constants on every distribution.
DEBUG, INFO, WARN, ERROR, FATAL = 10, 20, 30, 40, 50


class _HasLevel(Protocol):
    level: int | bytes


def log_level(msg: _HasLevel | int | bytes) -> int:
    """Return a Log message's level (or a Log level constant or value) as an int."""
    value = msg if isinstance(msg, (int, bytes)) else msg.level
    if isinstance(value, bytes):
        if len(value) != 1:
            raise ValueError(f'a Log level is one byte, got {value!r}')
        return value[0]
    return int(value)
