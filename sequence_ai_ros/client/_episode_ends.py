"""
Episode ends told to the worker in the background, so that a caller never waits on them.

An episode's end is a courtesy to the worker (it ends an idle episode on its own), yet a worker
that has become unreachable would make each end wait out its timeout: on a robot's control
thread that is seconds of no other callback. Ends are sent in order by one thread, which
exits once none is left (a node between episodes keeps no thread for them), and are waited
for, bounded, only when the Policy closes.
"""

from collections import deque
from collections.abc import Callable
import logging
import threading

_log = logging.getLogger('sequence_ai_ros.client')


class EpisodeEnds:
    """A queue of episode ends and the thread, while there are any, that sends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Callable[[], None]] = deque()
        self._thread: threading.Thread | None = None

    def submit(self, send: Callable[[], None]) -> None:
        """Queue `send` (which never raises) behind the ends already queued."""
        with self._lock:
            self._queue.append(send)
            if self._thread is None:
                self._thread = threading.Thread(target=self._send_all, daemon=True,
                                                name='sequence-ai-episode-end')
                self._thread.start()

    def drain(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the queued ends; drop what is left unsent."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
        with self._lock:
            dropped = len(self._queue)
            self._queue.clear()
        if dropped:
            _log.debug('%d episode end(s) not sent before close', dropped)

    def _send_all(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    return
                send = self._queue.popleft()
            send()
