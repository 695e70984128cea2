"""
The node's rules across parameters: values one parameter gets from others, and the checks.

Each check reads a NodeConfig whose every field has passed its own validators, and returns
None or (parameter, what is wrong); configure fails on the first.
"""

from collections.abc import Callable
from dataclasses import replace
import math
from typing import Any, TYPE_CHECKING

from .arm_output import FORWARD_VELOCITY
from .gripper import WITH_ARM

if TYPE_CHECKING:
    from .params import NodeConfig

CAMERA_TRANSPORTS = ('raw', 'compressed')
# Lines slower than this would put one or two values into a model step: no line at all.
MIN_FORWARD_OUTPUT_RATE_HZ = 100.0
GRIPPER_ON_FAILURE = ('hold', 'continue')


def derive(config: 'NodeConfig', node_name: str) -> 'NodeConfig':
    """Fill the values left to others: all-raw transports, the node's name as hardware_id."""
    return replace(config,
                   camera_transports=config.camera_transports or
                   ('raw',) * len(config.camera_views),
                   hardware_id=config.hardware_id or node_name)


def _dims(config: 'NodeConfig') -> int:
    return len(config.joint_names) + (1 if config.gripper_joint else 0)


def gripper_not_an_arm_joint(config: 'NodeConfig') -> Any:
    """Check that the gripper joint is not among joint_names."""
    if config.gripper_joint in config.joint_names:
        return 'gripper_joint', 'is also listed in joint_names'
    return None


def one_topic_per_view(config: 'NodeConfig') -> Any:
    """Check that camera_topics has one topic per camera view."""
    views, topics = len(config.camera_views), len(config.camera_topics)
    if topics != views:
        return 'camera_topics', f'needs one topic per camera view ({views}), got {topics}'
    return None


def one_transport_per_view(config: 'NodeConfig') -> Any:
    """Check that camera_transports has one entry per camera view."""
    views, transports = len(config.camera_views), len(config.camera_transports)
    if transports != views:
        return ('camera_transports',
                f'needs one entry per camera view ({views}), got {transports}')
    return None


def limits_per_value(config: 'NodeConfig') -> Any:
    """Check that each position limit list has one value per joint, then the gripper's."""
    dims = _dims(config)
    for name, limits in (('position_limits.lower', config.position_lower),
                         ('position_limits.upper', config.position_upper)):
        if len(limits) != dims:
            return name, f'needs {dims} values (joint_names then the gripper), got {len(limits)}'
    return None


def lower_below_upper(config: 'NodeConfig') -> Any:
    """Check that each lower position limit is below its upper one."""
    if not all(lo < hi for lo, hi in zip(config.position_lower, config.position_upper)):
        return 'position_limits', 'each lower limit must be below its upper limit'
    return None


def gripper_positions_differ(config: 'NodeConfig') -> Any:
    """Check that open and closed differ (the gripper scale divides by the difference)."""
    if config.gripper_open_position == config.gripper_closed_position:
        return 'gripper_closed_position', 'must differ from gripper_open_position'
    return None


def gripper_beside_velocities(config: 'NodeConfig') -> Any:
    """Check that a gripper is not a position among velocity commands."""
    if config.gripper_interface == WITH_ARM and config.output_mode == FORWARD_VELOCITY and \
            config.gripper_joint:
        return ('gripper_interface', "'with_arm' cannot put the gripper's position among "
                'velocity commands: give the gripper its own interface')
    return None


def velocity_output_limits(config: 'NodeConfig') -> Any:
    """Check that forward_velocity has speed limits per arm joint and an acceleration limit."""
    if config.output_mode != FORWARD_VELOCITY:
        return None
    joints, limits = len(config.joint_names), config.velocity_limits
    if len(limits) != joints or not all(math.isfinite(v) and v > 0 for v in limits):
        return 'velocity_limits', f'needs {joints} positive values (rad/s) for forward_velocity'
    if not config.max_acceleration > 0:
        return 'max_acceleration', 'is required (> 0, rad/s^2) for forward_velocity'
    return None


def forward_output_rate(config: 'NodeConfig') -> Any:
    """Check that forward_output_rate_hz is 0 (off) or fast enough to draw a line."""
    rate = config.forward_output_rate_hz
    if 0.0 < rate < MIN_FORWARD_OUTPUT_RATE_HZ:
        return ('forward_output_rate_hz',
                f'must be 0 (each step at once) or >= {MIN_FORWARD_OUTPUT_RATE_HZ:g} Hz')
    return None


CROSS_CHECKS: tuple[Callable[['NodeConfig'], Any], ...] = (
    gripper_not_an_arm_joint, one_topic_per_view, one_transport_per_view, limits_per_value,
    lower_below_upper, gripper_positions_differ, gripper_beside_velocities,
    velocity_output_limits, forward_output_rate)
