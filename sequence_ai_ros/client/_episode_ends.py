"""
Episode ends told to the worker in the background, so that a caller never waits on them.

An episode's end is a courtesy to the worker (it ends an idle episode on its own), yet a worker
that has become unreachable would make each end wait out its timeout: on a robot's control
thread that is seconds of no other callback. Ends are sent in order, one at a time, and
waited for (bounded) only when the Policy closes.
"""

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
import logging
import threading

_log = logging.getLogger('sequence_ai_ros.client')


class EpisodeEnds:
    """One background thread, started on first use, that runs the episode ends handed to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: set[Future[None]] = set()

    @property
    def pending(self) -> int:
        """Return how many ends are queued or being sent."""
        with self._lock:
            return len(self._pending)

    def submit(self, send: Callable[[], None]) -> None:
        """Queue `send` (which never raises) behind the ends already queued."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix='sequence-ai-episode-end')
            future = self._pool.submit(send)
            self._pending.add(future)
        future.add_done_callback(self._done)

    def drain(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the queued ends, then stop the thread (idempotent)."""
        with self._lock:
            pool, self._pool = self._pool, None
            pending = set(self._pending)
        if pool is None:
            return
        _, late = wait(pending, timeout=timeout_s)
        for future in late:
            future.cancel()  # queued behind one that did not finish: not sent
        if late:
            _log.debug('%d episode end(s) not sent before close', len(late))
        pool.shutdown(wait=False)

    def _done(self, future: 'Future[None]') -> None:
        with self._lock:
            self._pending.discard(future)
