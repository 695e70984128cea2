"""
RecordWriter: an episode file written by a thread of its own, from a bounded list of messages.

put() never blocks, never raises and wakes nothing: the control loop calls it, and it only
appends to a deque. A message may be queued as its bytes or as an object with the function
that encodes it, which then runs on this thread, not the caller's. The thread writes what has
gathered in one go: when a control tick has just ended (`wake()`, at most every `drain_s`), so
the batch runs while the loop waits for its next tick, else every `idle_s` (a thread woken by
every message takes the GIL from the control loop mid-callback, each time). When the disk cannot
keep up the list fills and what arrives is dropped and counted (`dropped`), never waited for.
The thread flushes the file every `flush_s`, so a killed process loses at most that much.
"""

from collections import deque
from collections.abc import Callable
import threading
import time
from typing import Any

from .cdr import build_encoders
from .mcap_file import EpisodeFile

# Records and bytes waiting at most: a minute of a busy episode's records, and 64 MB of
# frames, whichever comes first.
MAX_QUEUED = 20_000
MAX_QUEUED_BYTES = 64 * 1024 * 1024
FLUSH_S = 1.0
# Often enough that one batch is under a millisecond of work at 50 Hz, seldom enough that the
# thread's wake-ups cost nothing measurable; without ticks (a hold, the plain client) idle_s.
DRAIN_S = 0.1
IDLE_S = 0.25

# topic, type name, payload, log time, encode, size
Item = tuple[str, str, Any, int, 'Callable[[Any], bytes] | None', int]


class RecordWriter:
    """Queue messages for one EpisodeFile and write them on a daemon thread."""

    def __init__(self, file: EpisodeFile, *, flush_s: float = FLUSH_S,
                 drain_s: float = DRAIN_S, idle_s: float = IDLE_S, max_queued: int = MAX_QUEUED,
                 max_queued_bytes: int = MAX_QUEUED_BYTES,
                 on_error: Callable[[BaseException], Any] | None = None) -> None:
        self.file = file
        self.path = file.path
        self.flush_s = flush_s
        self.drain_s = drain_s
        self.idle_s = min(idle_s, flush_s)
        self.max_queued = max_queued
        self.max_queued_bytes = max_queued_bytes
        self.dropped = 0
        self.written = 0
        self.error: BaseException | None = None
        self._on_error = on_error
        self._pending: deque[Item] = deque()
        self._queued_bytes = 0
        self._lock = threading.Lock()
        self._closed = False
        self._wake = threading.Event()
        self._last_drain = time.monotonic()
        # Here, before the episode's loop: built on the thread, they held the GIL for tens of
        # milliseconds during the first ticks.
        build_encoders()
        self._thread = threading.Thread(target=self._run, name='sequence-ai-record',
                                        daemon=True)
        self._thread.start()

    def put(self, topic: str, type_name: str, payload: Any, log_time_ns: int | None = None, *,
            encode: Callable[[Any], bytes] | None = None, size: int = 0) -> bool:
        """
        Queue one message; False (and counted in `dropped`) when it cannot be taken now.

        `payload` is the CDR bytes, or what `encode` turns into them on the writer thread;
        `size` is its bytes then, as far as known (the queue's byte bound counts it).
        """
        stamp = time.time_ns() if log_time_ns is None else log_time_ns
        size = len(payload) if encode is None else size
        with self._lock:
            if self._closed or self.error is not None or \
                    len(self._pending) >= self.max_queued or \
                    self._queued_bytes + size > self.max_queued_bytes:
                self.dropped += 1
                return False
            self._pending.append((topic, type_name, payload, stamp, encode, size))
            self._queued_bytes += size
        return True

    def wake(self) -> None:
        """Have the thread write what has gathered now, if a batch is due (after a tick)."""
        if time.monotonic() - self._last_drain >= self.drain_s and not self._wake.is_set():
            self._wake.set()

    @property
    def queued(self) -> int:
        """Messages waiting to be written."""
        return len(self._pending)

    def close(self, timeout_s: float = 5.0) -> bool:
        """Write what is queued, finish the file; False if the thread did not end in time."""
        with self._lock:
            self._closed = True
        self._wake.set()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        last_flush = time.monotonic()
        try:
            while True:
                self._wake.wait(self.idle_s)
                self._wake.clear()
                # After close() nothing more is put: the batch taken after it is everything.
                stopping = self._closed
                self._last_drain = time.monotonic()
                self._write(self._take())
                if stopping:
                    break
                if time.monotonic() - last_flush >= self.flush_s:
                    self.file.flush()
                    last_flush = time.monotonic()
            self.file.close()
        except BaseException as exc:  # a full disk, a removed directory: stop recording
            self.error = exc
            if self._on_error is not None:
                self._on_error(exc)
            try:
                self.file.close()
            except Exception:  # noqa: BLE001 (the file is broken already; keep the first error)
                pass

    def _take(self) -> deque[Item]:
        """Take everything queued so far, leaving an empty list for put()."""
        with self._lock:
            batch, self._pending = self._pending, deque()
            self._queued_bytes = 0
        return batch

    def _write(self, batch: deque[Item]) -> None:
        for topic, type_name, payload, stamp, encode, _size in batch:
            try:
                data = payload if encode is None else encode(payload)
            except Exception:  # noqa: BLE001 (one bad message is lost, not the file)
                with self._lock:
                    self.dropped += 1
                continue
            self.file.write(topic, type_name, data, stamp)
            self.written += 1
