"""
forward_command_controller as ros2_control runs it: a ROS-free core and the controller's node.

The rules are ros-controls/ros2_controllers'. Each cites `<path> @ <commit> (<branch>),
lines A-B`; unless another file is named, the file is
forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch unverified:
it drops non-finite commands, #1817, and uses the bool result of set_value, the newer
hardware_interface API, so it is probably not humble; package.xml and CHANGELOG.rst are not
stored at that commit). Humble and jazzy differ only where noted:

- `~/commands` takes std_msgs/Float64MultiArray at the system-default QoS (lines 59-75); the
  latest message is kept and written to the command interfaces on every cycle (update,
  lines 132-166).
- A message with a non-finite value is dropped with "Non-finite value received. Dropping
  message" and the previous one stays (lines 63-73; that it came to jazzy in 4.29.0 and not
  to humble, which writes it through, was not re-checked in a stored CHANGELOG.rst).
- A message of the wrong size is kept too, but each cycle then logs (at most once a second)
  "command size (N) does not match number of interfaces (M)", writes nothing and returns
  ERROR (lines 143-150): the interfaces keep what they held. On Jazzy and later the
  controller_manager deactivates a controller whose update returns ERROR
  (ros-controls/ros2_control controller_manager/src/controller_manager.cpp,
  ControllerManager::update, PR #1499; no lines cited: the two stored versions that carry
  its "Deactivating following controllers as their update resulted in an error" line are
  served without a commit); Humble's does not: the controller stays
  active and the error repeats until a right-sized command arrives.
- Until the first command after an activation nothing is written (lines 137-141); activating
  and deactivating both drop the kept command (lines 117-118, 127-128).
- There is NO command timeout: when commands stop, the last one keeps being written (update,
  lines 132-166, reads no clock). A velocity controller keeps the arm moving at the last
  velocity until it is told otherwise or deactivated; whoever publishes must send zeros (or
  hold) to stop.
- velocity_controllers/JointGroupVelocityController
  (velocity_controllers/src/joint_group_velocity_controller.cpp @ 1044e677 (branch
  unverified), lines 54-70) writes 0.0 to every velocity interface when deactivated;
  position interfaces keep their last value. Both JointGroup*Controllers only fix
  `interface_name` (same file, on_init, lines 30-52).
- `joints` and `interface_name` are read-only
  (forward_command_controller/src/forward_command_controller_parameters.yaml @ 47414ab9
  (branch unverified), lines 2-9, 10-17); empty ones are refused with "'joints' parameter
  was empty" and "'interface_name' parameter was empty"
  (forward_command_controller/src/forward_command_controller.cpp @ 81f35b0c (branch
  unverified; CHANGELOG.rst in the same commit tops at 1.1.0), lines 62-66, 74-78).

A command interface is memory: `update` returns what the claimed interfaces hold (None until
something was written, so the hardware holds), which is what a robot's hardware would act on.
"""

from collections.abc import Sequence
import threading
import time
from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import qos_profile_system_default
from sequence_ai_ros.sim.controller_base import (
    COMMAND_INTERFACES,
    SwitchedController,
    VELOCITY,
)
from std_msgs.msg import Float64MultiArray

NON_FINITE = 'Non-finite value received. Dropping message'
SIZE_MISMATCH = 'command size ({}) does not match number of interfaces ({})'
# controller_manager's own line when it takes a failing controller down (Jazzy and later).
DEACTIVATED = 'Deactivating following controllers as their update resulted in an error :\n\t- {}'
THROTTLE_S = 1.0
# A reception further back than this is another clock's, not a wait: the callback's time then.
MAX_RECEPTION_WAIT_S = 1.0
try:  # callbacks given the message's info (rclpy >= Iron, not on the EventsExecutor of 9.1)
    from rclpy.subscription import MessageInfo  # noqa: F401
    HAS_MESSAGE_INFO = True
except ImportError:
    HAS_MESSAGE_INFO = False
DEFAULT_NAMES = {'position': 'forward_position_controller',
                 'velocity': 'forward_velocity_controller'}


def check_interface(interface: str) -> str:
    """Why `interface` cannot be claimed (upstream's words where it has some), or ''."""
    if not interface:
        return "'interface_name' parameter was empty"
    if interface not in COMMAND_INTERFACES:
        return f"interface_name '{interface}': the simulated arm offers {COMMAND_INTERFACES}"
    return ''


def check_config(joints: Sequence[str], interface: str) -> str:
    """Why `joints`/`interface` cannot make a controller (upstream's words), or '' if they can."""
    if not joints:
        return "'joints' parameter was empty"
    if len(set(joints)) != len(joints) or not all(joints):
        return f'joints must be distinct, non-empty names, got {list(joints)}'
    return check_interface(interface)


class ForwardCommand:
    """The controller's state: the kept command, the interfaces' values, active or not."""

    def __init__(self, joints: Sequence[str], interface: str,
                 deactivate_on_error: bool = True) -> None:
        """
        Claim `joints` on the `interface` command interface; ValueError if that cannot be.

        `deactivate_on_error` plays the Jazzy-and-later controller_manager, which deactivates
        the controller when a wrong-sized command makes its update fail; False is Humble's.
        """
        reason = check_config(joints, interface)
        if reason:
            raise ValueError(reason)
        self.joints = tuple(joints)
        self.interface = interface
        self.deactivate_on_error = deactivate_on_error
        self.active = True
        self.errors = 0
        self._kept: np.ndarray | None = None
        self._written: np.ndarray | None = None

    def receive(self, data: Sequence[float]) -> str:
        """Keep a `~/commands` message; return upstream's warning if it is dropped, else ''."""
        values = np.array(data, dtype=float).ravel()
        if not np.all(np.isfinite(values)):
            return NON_FINITE
        self._kept = values
        return ''

    def update(self) -> tuple[np.ndarray | None, str]:
        """
        Run one control cycle: return (what the interfaces hold, an error line or '').

        The values are None while nothing was ever written. While inactive the controller
        is not updated, so the interfaces keep their values.
        """
        if self.active and self._kept is not None:
            if self._kept.size != len(self.joints):
                self.errors += 1
                error = SIZE_MISMATCH.format(self._kept.size, len(self.joints))
                if self.deactivate_on_error:
                    self.deactivate()
                return self.interface_values(), error
            self._written = self._kept.copy()
        return self.interface_values(), ''

    def interface_values(self) -> np.ndarray | None:
        """Return a copy of what the claimed command interfaces hold (None: never written)."""
        return None if self._written is None else self._written.copy()

    def activate(self) -> None:
        """Start updating; a command kept from before must not play."""
        self.active = True
        self._kept = None

    def deactivate(self) -> None:
        """Stop updating and drop the kept command; a velocity controller writes zeros first."""
        self.active = False
        self._kept = None
        if self.interface == VELOCITY:
            self._written = np.zeros(len(self.joints))


class ForwardCommandController(SwitchedController, Node):
    """
    A forward command controller's node: `~/commands` in, SimController for the hardware loop.

    Named after the controller (default forward_position_controller or
    forward_velocity_controller), with the read-only parameters `joints` and `interface_name`
    as upstream declares them
    (forward_command_controller/src/forward_command_controller_parameters.yaml @ 47414ab9
    (branch unverified), lines 2-17), so
    /<name>/get_parameters answers. A `joints` value in the parameter overrides wins over the
    argument; `interface` is fixed, as the JointGroup*Controllers fix it.
    """

    def __init__(self, joints: Sequence[str], interface: str, name: str | None = None,
                 deactivate_on_error: bool = True, reception_times: bool = False,
                 **kwargs: Any) -> None:
        """
        Create the node and its subscription; ValueError if joints or interface are unusable.

        `reception_times`: time each command by when DDS received it (a SingleThreadedExecutor
        only, where rclpy has it), not by when this process's executor got round to it.
        """
        reason = check_config(joints, interface)
        if reason:
            raise ValueError(reason)
        super().__init__(name or DEFAULT_NAMES[interface], **kwargs)
        joints = self.declare_parameter(
            'joints', list(joints),
            ParameterDescriptor(description='Name of the joints to control', read_only=True)
        ).value
        self.declare_parameter(
            'interface_name', interface,
            ParameterDescriptor(description='Name of the interface of the joint', read_only=True),
            ignore_override=True)
        try:
            self._core = ForwardCommand(list(joints or []), interface, deactivate_on_error)
        except ValueError:
            self.destroy_node()
            raise
        self._lock = threading.Lock()
        self._arrived: list[tuple[float, np.ndarray]] = []
        on_command = self._on_received if reception_times and HAS_MESSAGE_INFO \
            else self._on_command
        self.create_subscription(Float64MultiArray, '~/commands', on_command,
                                 qos_profile_system_default)

    @property
    def claimed_joints(self) -> Sequence[str]:
        """Return the joints whose command interface this controller writes, in its order."""
        return self._core.joints

    @property
    def command_interface(self) -> str:
        """Return 'position' or 'velocity'."""
        return self._core.interface

    @property
    def active(self) -> bool:
        """Return True while the controller is updated (False after an error on Jazzy+)."""
        return self._core.active

    def update(self, now: float, position: np.ndarray, velocity: np.ndarray
               ) -> np.ndarray | None:
        """Return what the claimed command interfaces hold after this cycle (None: nothing)."""
        with self._lock:
            was_active = self._core.active
            values, error = self._core.update()
            taken_down = was_active and not self._core.active
        if error:
            self.get_logger().error(error, throttle_duration_sec=THROTTLE_S)
        if taken_down:
            self.get_logger().error(DEACTIVATED.format(self.get_name()))
        return values

    def arrivals(self) -> list[tuple[float, np.ndarray]]:
        """
        Return and forget the commands kept since the last call, at their node-clock times.

        A controller_manager updating faster than the simulated hardware steps would have
        written each in the update it arrived in (joint_limits.py spreads them so).
        """
        with self._lock:
            arrived, self._arrived = self._arrived, []
        if not self._core.active:
            return []
        return [(t, v) for t, v in arrived if v.size == len(self._core.joints)]

    def _on_received(self, msg: Float64MultiArray, info: Any) -> None:
        # The real controller_manager's subscription does not wait for the physics step or a
        # camera frame of this process: a command is written in the update DDS received it in.
        waited = time.time() - info['received_timestamp'] * 1e-9
        self._on_command(msg, waited if 0.0 <= waited < MAX_RECEPTION_WAIT_S else 0.0)

    def _on_command(self, msg: Float64MultiArray, waited: float = 0.0) -> None:
        now = self.get_clock().now().nanoseconds * 1e-9 - waited
        with self._lock:
            warning = self._core.receive(msg.data)
            if not warning:
                self._arrived.append((now, np.array(msg.data, dtype=float)))
        if warning:
            self.get_logger().warning(warning, throttle_duration_sec=THROTTLE_S)
