"""The simulated arm's ROS parameters: declared once, typed, ranged and described."""

from collections.abc import Sequence
from dataclasses import dataclass
import math

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node
from sequence_ai_ros.sim import controllers, jtc_rules
from sequence_ai_ros.world import arm_model

TRANSPORTS = ('raw', 'compressed')


@dataclass(frozen=True)
class SimSettings:
    """Values read once at start-up (the matching parameters are read-only)."""

    initial_positions: tuple[float, ...]
    joint_state_rate_hz: float
    joint_states_every_update: bool
    camera_rate_hz: float
    image_width: int
    image_height: int
    image_transport: str
    random_target_seed: int
    arm_controller: str
    gripper_controller: str
    controller_distro: str


def _floats(low: float, high: float) -> list[FloatingPointRange]:
    return [FloatingPointRange(from_value=low, to_value=high, step=0.0)]


def _ints(low: int, high: int) -> list[IntegerRange]:
    return [IntegerRange(from_value=low, to_value=high, step=1)]


def declare(node: Node) -> SimSettings:
    """Declare every parameter on `node`; ValueError if a start-up value is unusable."""
    def param(name: str, default: object, text: str, read_only: bool = True,
              **ranges: object) -> object:
        descriptor = ParameterDescriptor(description=text, read_only=read_only, **ranges)
        return node.declare_parameter(name, default, descriptor).value

    settings = SimSettings(
        initial_positions=tuple(param(
            'initial_positions', [float(v) for v in arm_model.HOME],
            '7 arm joint positions (rad), optionally an 8th for panda_finger_joint1 (m, '
            f'{arm_model.FINGER_OPEN_M} open .. {arm_model.FINGER_CLOSED_M} closed)')),
        joint_state_rate_hz=param(
            'joint_state_rate_hz', 100.0, 'joint_states rate; also the physics step rate',
            floating_point_range=_floats(1.0, 1000.0)),
        joint_states_every_update=param(
            'joint_states_every_update', False,
            'true: a joint state for every controller_manager update (its update_rate, as a '
            'joint_state_broadcaster at that rate publishes them; Kilted only), each physics '
            'step publishing the updates it ran, stamped at their times'),
        camera_rate_hz=param(
            'camera_rate_hz', 15.0, 'rate of both camera topics',
            floating_point_range=_floats(0.1, 120.0)),
        image_width=param('image_width', 320, 'camera frame width (px)',
                          integer_range=_ints(8, 4096)),
        image_height=param('image_height', 240, 'camera frame height (px)',
                           integer_range=_ints(8, 4096)),
        image_transport=param(
            'image_transport', 'raw',
            "'raw': sensor_msgs/Image rgb8 on .../image_raw; 'compressed': JPEG "
            'sensor_msgs/CompressedImage on .../image_raw/compressed'),
        random_target_seed=param(
            'random_target_seed', -1,
            '>= 0: place the target uniformly in arm_model.TARGET_X/TARGET_Y with this seed '
            '(overrides target_xy at start-up); -1: off', integer_range=_ints(-1, 2**31 - 1)),
        arm_controller=param(
            'arm_controller', controllers.DEFAULT_ARM_CONTROLLER,
            f'controller of the 7 arm joints, one of {sorted(controllers.ARM_CONTROLLERS)}; '
            'also its node name'),
        gripper_controller=param(
            'gripper_controller', controllers.DEFAULT_GRIPPER_CONTROLLER,
            f'controller of the finger joint, one of {sorted(controllers.GRIPPER_CONTROLLERS)}'),
        controller_distro=param(
            'controller_distro', jtc_rules.DEFAULT_DISTRO,
            f'whose controller rules and defaults to simulate: one of {list(jtc_rules.DISTROS)}'),
    )
    param('target_xy', [0.5, 0.2], 'target position on the table, world x and y (m)',
          read_only=False)
    param('time_scale', 1.0,
          'wall seconds per nominal second of the driving gateway (< 1: faster than real '
          'time); velocity limits are divided by it so the same motion fits',
          read_only=False, floating_point_range=_floats(0.01, 100.0))
    if settings.image_transport not in TRANSPORTS:
        raise ValueError(f'image_transport must be one of {TRANSPORTS}')
    if settings.controller_distro not in jtc_rules.DISTROS:
        raise ValueError(f'controller_distro must be one of {list(jtc_rules.DISTROS)}')
    return settings


def check_target(value: Sequence[float]) -> str:
    """Why `value` is not a usable target_xy, or '' when it is."""
    if len(value) != 2 or not all(math.isfinite(v) for v in value):
        return 'target_xy needs two finite numbers'
    return ''
