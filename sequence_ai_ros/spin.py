"""
Start and spin a node so that SIGINT/SIGTERM end it cleanly (Humble to Kilted).

rclpy's own signal handlers shut the context down at once, so a node could no longer publish
its last hold. Here a signal only raises KeyboardInterrupt in the spinning thread; the node
holds, then the context is shut down.
"""

import signal
from typing import Any

import rclpy
from rclpy.executors import Executor, ExternalShutdownException


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f'signal {signum}')


def init(args: list[str] | None = None) -> None:
    """rclpy.init without rclpy's signal handlers; SIGTERM behaves like SIGINT."""
    try:
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except ImportError:  # an rclpy without signal options keeps its own handlers
        rclpy.init(args=args)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def spin_until_shutdown(node_or_executor: Any) -> None:
    """Spin a node or an executor; a signal ends it quietly, any other error propagates."""
    try:
        if isinstance(node_or_executor, Executor):
            node_or_executor.spin()
        else:
            rclpy.spin(node_or_executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # With rclpy's handlers a signal can invalidate the context mid-wait (RCLError).
        if rclpy.ok():
            raise


def shutdown() -> None:
    """Shut the default context down if nothing else has."""
    if hasattr(rclpy, 'try_shutdown'):
        rclpy.try_shutdown()
    elif rclpy.ok():
        rclpy.shutdown()
