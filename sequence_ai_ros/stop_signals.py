"""
SIGINT and SIGTERM as a request to stop, so that every executable exits 0 after shutting down.

Left to Python, SIGTERM ends a process at once and SIGINT raises KeyboardInterrupt wherever the
main thread happens to be; libraries that capture a signal re-raise it once they have shut
down (uvicorn does). Either way the process dies of the signal, status -15 or -2, which
`ros2 launch` reports as a crash. Here a signal is only recorded: each executable looks for
the request where it can stop cleanly (between its start-up steps, in its serving or spinning
loop), shuts down and exits 0, so a signal during start-up stops it as soon as it can. Later
signals are recorded too, so that a second Ctrl-C cannot cut a shutdown short; code that must
give way to a second signal (a callback that never returns) says so with `on_signal`. A
process that has stopped may end at once (`exit_now`) rather than wait for threads it abandoned.

Standard library only: the gateway and the fault proxy, which never load rclpy, use it as the
ROS nodes do. Handlers belong to an executable: they are installed from its main thread, by
its entry point, before its heavy imports, never on import. A signal that comes sooner, while
the interpreter itself starts (about 0.1 s), still has Python's default effect.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
import logging
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import NoReturn

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# How often `wait` looks at the request: a threading.Event cannot be set from a handler (its
# lock may be held by the very frame the handler interrupted).
POLL_S = 0.05

_received: list[int] = []
_callbacks: list[Callable[[int], None]] = []


def _handle(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    for callback in tuple(_callbacks):
        callback(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install() -> bool:
    """From now on SIGINT and SIGTERM request a stop; False (nothing done) off the main thread."""
    if not _main_thread():
        return False
    for signum in STOP_SIGNALS:
        signal.signal(signum, _handle)
    return True


def ignore() -> None:
    """
    Ignore SIGINT and SIGTERM from now on: for a process that has stopped and is exiting.

    Python's finalization puts back the default action (death by the signal) of every handler
    but an ignore, and what runs after it (a library's threads and destructors) can take a
    while.
    """
    if _main_thread():
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """
    Install the handlers for the duration; then, unless a stop was requested, the old ones.

    Nothing is re-raised on the way out: a signal received inside was a request to stop, and
    it has been honoured. After one, the process is on its way out: further signals are
    ignored (see `ignore`), so that its exit cannot be cut short either.
    """
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    if not install():
        yield
        return
    try:
        yield
    finally:
        if _received:
            ignore()
        else:
            for signum, handler in previous.items():
                if handler is not None:  # None: set outside Python, it cannot be put back
                    signal.signal(signum, handler)


def requested() -> bool:
    """Return whether SIGINT or SIGTERM has asked this process to stop."""
    return bool(_received)


def request(signum: int) -> None:
    """Record a stop request that reached the process another way (a library's own handler)."""
    _handle(signum, None)


def wait(timeout_s: float | None = None) -> bool:
    """Sleep until a stop is requested (True) or `timeout_s` has passed (False)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not _received:
        left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
        if left <= 0:
            return False
        time.sleep(left)
    return True


@contextmanager
def on_signal(callback: Callable[[int], None]) -> Iterator[None]:
    """
    Call `callback(signum)` from the handler, on the main thread, for each signal inside.

    It runs between two bytecodes of whatever the main thread was doing: it may set flags,
    or raise to interrupt that code, and must not take locks.
    """
    _callbacks.append(callback)
    try:
        yield
    finally:
        _callbacks.remove(callback)


def exit_now(code: int = 0) -> NoReturn:
    """
    End the process at once (os._exit), its logs and output flushed: it has stopped.

    For a process that has shut down everything it started, whose exit would otherwise wait
    for a library's thread (an abandoned request) or run the interpreter's finalization under
    one (Ray's C++ threads, which can crash there).
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def exit_now_if_threads_linger(code: int = 0) -> None:
    """Call `exit_now` if a thread the interpreter would join at exit is still running."""
    if any(t is not threading.main_thread() and not t.daemon and t.is_alive()
           for t in threading.enumerate()):
        exit_now(code)
