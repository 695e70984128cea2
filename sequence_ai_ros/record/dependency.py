"""The one place that says what recording needs installed, and says it when it is missing."""

import importlib
from typing import Any

INSTALL_HINT = ("pip install 'sequence_ai_ros[record]' (the mcap and mcap-ros2-support "
                'packages), or rosdep key mcap-ros2-support')


class RecordingUnavailable(RuntimeError):
    """Recording was asked for but cannot happen here (a missing package, a directory)."""


def require_mcap() -> None:
    """Raise RecordingUnavailable naming what to install when the MCAP packages are missing."""
    try:
        mcap_module('mcap.writer')
        mcap_module('mcap_ros2')
    except ImportError as exc:
        raise RecordingUnavailable(
            f'recording episodes needs the MCAP packages ({exc.name} is missing): '
            f'{INSTALL_HINT}') from None


def mcap_module(name: str) -> Any:
    """Import one of the MCAP packages' modules (typed Any: they are optional here)."""
    return importlib.import_module(name)
