"""
Start and spin a node so that SIGINT/SIGTERM end it cleanly (Humble to Kilted).

rclpy's own signal handlers shut the context down at once, so a node could no longer publish
its last hold. Here a signal is a stop request (sequence_ai_ros.stop_signals): it only stops the
spinning, also when it came during start-up; the node holds, then the context is shut down,
and the process exits 0.

The executor is a choice, `SEQUENCE_AI_ROS_EXECUTOR=events|single` (default events):
rclpy's EventsExecutor (`rclpy.experimental` in Kilted; a C++ event queue) spends far less
Python per callback than the SingleThreadedExecutor, and that per-callback cost is most of a
policy node's CPU (bench/bench_control_tick.py: half the CPU, lower tick jitter). An rclpy
without it (Humble) falls back to single with one info line; `single` is the way back if a
robot meets a problem with it; an unknown value is a warning and the default, so a typo never
keeps a robot's node down.
"""

from collections.abc import Callable
from contextlib import nullcontext
import os
import threading
import time
from typing import Any

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
import rclpy.logging
from rclpy.node import Node
from sequence_ai_ros import stop_signals

EXECUTOR_ENV = 'SEQUENCE_AI_ROS_EXECUTOR'
EVENTS = 'events'
SINGLE = 'single'
EXECUTORS = (EVENTS, SINGLE)
DEFAULT_EXECUTOR = EVENTS
# How long a spin waits for work before it looks at the stop flag: the latency of a signal
# to an idle node (no callback would otherwise run Python on the main thread to notice it).
POLL_S = 0.1
# A signal within this long of the first is the same request, sent twice (see below).
DUPLICATE_S = 0.5


def init(args: list[str] | None = None) -> None:
    """Call rclpy.init without rclpy's signal handlers; SIGINT and SIGTERM request a stop."""
    # Before rclpy.init: a signal while it runs is a request too, honoured once spinning.
    stop_signals.install()
    try:
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except ImportError:  # an rclpy without signal options installs its own: ours again
        rclpy.init(args=args)
        stop_signals.install()


def executor_choice(node: Node) -> str:
    """Return the executor named by SEQUENCE_AI_ROS_EXECUTOR (warn and default if unknown)."""
    value = os.environ.get(EXECUTOR_ENV, '').strip().lower()
    if not value:
        return DEFAULT_EXECUTOR
    if value not in EXECUTORS:
        node.get_logger().warning(
            f'{EXECUTOR_ENV}={os.environ[EXECUTOR_ENV]!r} is not one of '
            f'{"|".join(EXECUTORS)}: using {DEFAULT_EXECUTOR}')
        return DEFAULT_EXECUTOR
    return value


def _events_executor_factory() -> Any:
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # Humble, and any rclpy before it
        return None
    return EventsExecutor


def make_executor(node: Node, choice: str | None = None) -> Executor:
    """
    Build the executor for `node` (on its context) and add the node to it.

    `choice` is 'events' or 'single'; None reads SEQUENCE_AI_ROS_EXECUTOR. 'events' falls
    back to a SingleThreadedExecutor, with one info line, where rclpy has no EventsExecutor.
    """
    if choice is None:
        choice = executor_choice(node)
    elif choice not in EXECUTORS:
        raise ValueError(f'executor {choice!r} is not one of {"|".join(EXECUTORS)}')
    executor: Executor | None = None
    if choice == EVENTS:
        factory = _events_executor_factory()
        if factory is None:
            node.get_logger().info(
                'this rclpy has no EventsExecutor: spinning on the single-threaded executor')
        else:
            executor = factory(context=node.context)
    if executor is None:
        executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    return executor


class _InterruptOnRepeat:
    """
    The first signal lets the callback in progress finish; a later one interrupts it.

    For a callback that never returns: a signal that comes after the first has had DUPLICATE_S
    to end the spin (launch's SIGTERM 5 s after its SIGINT, a second Ctrl-C). One that comes
    with the first, whatever its number (a terminal's Ctrl-C and launch's forwarded SIGINT, a
    supervisor's SIGINT then SIGTERM), only repeats the request: interrupted, the callback in
    progress could be left half done (an episode ended, its hold not published), and a
    KeyboardInterrupt raised while the EventsExecutor's C++ is on the stack can abort the
    process (SIGABRT, seen under load).
    """

    def __init__(self) -> None:
        self.first_at: float | None = None

    def __call__(self, signum: int) -> None:
        now = time.monotonic()
        if self.first_at is None:
            self.first_at = now
        elif now - self.first_at >= DUPLICATE_S:
            raise KeyboardInterrupt(f'signal {signum}')


def _spin(executor: Any, on_error: Callable[[Exception], None]) -> None:
    """
    Spin until the context shuts down or a stop is requested (see init).

    A KeyboardInterrupt raised inside a callback is logged by the EventsExecutor as a FATAL
    exception with a traceback, and can leave any callback half done: the first signal only
    ends the spin after the callback in progress (see _InterruptOnRepeat).
    """
    context = executor.context
    # Handlers run on the main thread: only a spin there can be interrupted by one.
    main = threading.current_thread() is threading.main_thread()
    with stop_signals.on_signal(_InterruptOnRepeat()) if main else nullcontext():
        # spin_once with a timeout rather than spin(): the EventsExecutor's spin() in rclpy
        # 9.1 (Kilted) busy-waits a whole core, and neither spin() sees a signal while idle.
        while context.ok() and not stop_signals.requested():
            try:
                executor.spin_once(timeout_sec=POLL_S)
            except (KeyboardInterrupt, ExternalShutdownException):
                raise
            except Exception as exc:
                # A callback rclpy runs for itself (not through the node's guard) raised: the
                # process stays up; a context shut down under us ends the spin as before.
                if not context.ok():
                    raise
                on_error(exc)


def _spin_error_reporter(node: Node | None) -> Callable[[Exception], None]:
    """Report an exception from spin_once through the node's guard, else log each kind once."""
    guard = getattr(node, 'callback_guard', None)
    if guard is not None:
        return lambda exc: guard.fault('executor', exc)
    seen: set[str] = set()
    logger = node.get_logger() if node is not None else rclpy.logging.get_logger('spin')

    def log_once(exc: Exception) -> None:
        if type(exc).__name__ not in seen:
            seen.add(type(exc).__name__)
            logger.error(f'a callback raised {type(exc).__name__}: {exc}; still spinning')
    return log_once


def spin_until_shutdown(node_or_executor: Any) -> None:
    """
    Spin a node (on make_executor's executor) or an executor until a signal or shutdown.

    A signal ends it quietly after the callback in progress, as does a shutdown of the
    context by someone else. An exception out of a callback does not end it: it goes to the
    node's `callback_guard` if it has one (the policy node holds), else it is logged once per
    kind.
    """
    node = node_or_executor if isinstance(node_or_executor, Node) else None
    executor = make_executor(node) if node is not None else node_or_executor
    try:
        _spin(executor, _spin_error_reporter(node))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # With rclpy's handlers a signal can invalidate the context mid-wait (RCLError).
        if executor.context.ok():
            raise
    finally:
        if node is not None:
            # The EventsExecutor holds the handles of the node's entities until it is shut
            # down: destroy_node would leave them alive, past the context's shutdown.
            executor.remove_node(node)
            executor.shutdown()


def shutdown() -> None:
    """Shut the default context down if nothing else has."""
    if hasattr(rclpy, 'try_shutdown'):
        rclpy.try_shutdown()
    elif rclpy.ok():
        rclpy.shutdown()
