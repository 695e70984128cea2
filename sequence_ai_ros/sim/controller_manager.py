"""
The simulated controller_manager: its update rate and its enforcement of the joints' limits.

A node named `controller_manager` beside the controllers, so the controllers file's
`/**/controller_manager` block (config/ros2_control/panda_controllers.yaml: `update_rate:
1000`) reaches it through --params-file as it reaches the real one, and its ERROR lines carry
the real one's logger name. It declares upstream's two parameters that change what the arm
does (controller_manager/src/controller_manager_parameters.yaml, read-only both):
`update_rate` (Hz, default 100) and `enforce_command_limits` (Jazzy's default false, Kilted's
true: the sim follows `controller_distro`; Humble has no such enforcement, and refuses true).
"""

from typing import Any

from rcl_interfaces.msg import IntegerRange, ParameterDescriptor
from rclpy.node import Node
from sequence_ai_ros.sim.joint_limits import JointLimiter

NAME = 'controller_manager'
DEFAULT_UPDATE_RATE = 100
THROTTLE_S = 1.0
ENFORCED_BY_DEFAULT = {'humble': False, 'jazzy': False, 'kilted': True}


class ControllerManagerNode(Node):
    """Holds the update rate and the limiter; logs each clamp as the real one does."""

    def __init__(self, distro: str, lower: Any, upper: Any, **kwargs: Any) -> None:
        """Declare the parameters; ValueError if they ask for what `distro` does not have."""
        super().__init__(NAME, **kwargs)
        self.update_rate = int(self.declare_parameter(
            'update_rate', DEFAULT_UPDATE_RATE,
            ParameterDescriptor(description="The frequency of controller manager's update "
                                'loop (Hz)', read_only=True,
                                integer_range=[IntegerRange(from_value=1, to_value=100000,
                                                            step=1)])).value)
        self.enforce_command_limits = bool(self.declare_parameter(
            'enforce_command_limits', ENFORCED_BY_DEFAULT.get(distro, False),
            ParameterDescriptor(description="Clamp every command to the joints' limits "
                                '(position, and speed per update)', read_only=True)).value)
        if self.enforce_command_limits and distro == 'humble':
            self.destroy_node()
            raise ValueError("enforce_command_limits: Humble's controller_manager has none")
        self.limiter = JointLimiter(lower, upper, 1.0 / self.update_rate) \
            if self.enforce_command_limits else None
        self.clamp_lines = 0

    def log_clamp(self, line: str) -> None:
        """Log a clamp at ERROR, at most once a second (the real line is throttled too)."""
        self.clamp_lines += 1
        self.get_logger().error(line, throttle_duration_sec=THROTTLE_S)
