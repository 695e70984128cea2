"""
What every simulated ros2_control controller offers the simulated arm's hardware loop.

As in ros2_control, each controller claims the command interface of some joints ('position' or
'velocity') and is updated once per hardware cycle with the state of those joints; it is its
own ROS node, named after the controller, carrying the upstream controller's parameters (so
`ros2 param get /<controller> joints` and `/<controller>/get_parameters` answer as they would
on a robot). Two controllers never claim the same joint.
"""

from collections.abc import Sequence
import threading
from typing import Protocol, runtime_checkable

import numpy as np

POSITION, VELOCITY = 'position', 'velocity'
COMMAND_INTERFACES = (POSITION, VELOCITY)


class SimController(Protocol):
    """A controller of some joints; the hardware loop calls :meth:`update` every cycle."""

    @property
    def claimed_joints(self) -> Sequence[str]:
        """Return the joints whose command interface this controller writes, in its order."""

    @property
    def command_interface(self) -> str:
        """Return 'position' or 'velocity': what :meth:`update` returns per claimed joint."""

    def update(self, now: float, position: np.ndarray, velocity: np.ndarray
               ) -> np.ndarray | None:
        """
        Return the command for each claimed joint at `now` (seconds, the node clock).

        `position` and `velocity` are the claimed joints' measured state, in claimed order.
        None means "no command": the hardware holds those joints where they are.
        """


@runtime_checkable
class Holdable(Protocol):
    """A controller that can be told to hold its joints where they are (the sim's ~/hold)."""

    def hold(self) -> None:
        """Hold the claimed joints at their last measured position until the next command."""


class Switchable(Protocol):
    """A controller's ROS-free core, which controller_manager switches on and off."""

    def activate(self) -> None:
        """Start updating."""

    def deactivate(self) -> None:
        """Stop updating."""


class SwitchedController:
    """
    A controller node's activate() and deactivate(), as controller_manager's switch_controller.

    For a node that keeps its state in a ROS-free core (`_core`) behind the lock (`_lock`)
    that its callbacks and the hardware loop's update share; the core says what each does.
    """

    _core: Switchable
    _lock: threading.Lock

    def activate(self) -> None:
        """Activate, as controller_manager's switch_controller does."""
        with self._lock:
            self._core.activate()

    def deactivate(self) -> None:
        """Deactivate, as controller_manager's switch_controller does."""
        with self._lock:
            self._core.deactivate()


def controller_name(controller: object) -> str:
    """Return a controller's node name (or its type's name), for messages about it."""
    get_name = getattr(controller, 'get_name', None)
    return str(get_name()) if callable(get_name) else type(controller).__name__
