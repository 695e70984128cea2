"""
RecordWriter: an episode file written by a thread of its own, behind a bounded queue.

put() never blocks and never raises: the control loop calls it. A message may be queued as its
bytes or as an object with the function that encodes it, which then runs on this thread, not
the caller's. When the disk cannot keep up the queue fills and what arrives is dropped and
counted (`dropped`), never waited for. The thread flushes the file every `flush_s`, so a
killed process loses at most that much.
"""

from collections.abc import Callable
import queue
import threading
import time
from typing import Any

from .mcap_file import EpisodeFile

# Records and bytes waiting at most: a minute of a busy episode's records, and 64 MB of
# frames, whichever comes first.
MAX_QUEUED = 20_000
MAX_QUEUED_BYTES = 64 * 1024 * 1024
FLUSH_S = 1.0


class RecordWriter:
    """Queue messages for one EpisodeFile and write them on a daemon thread."""

    def __init__(self, file: EpisodeFile, *, flush_s: float = FLUSH_S,
                 max_queued: int = MAX_QUEUED, max_queued_bytes: int = MAX_QUEUED_BYTES,
                 on_error: Callable[[BaseException], Any] | None = None) -> None:
        self.file = file
        self.path = file.path
        self.flush_s = flush_s
        self.max_queued_bytes = max_queued_bytes
        self.dropped = 0
        self.written = 0
        self.error: BaseException | None = None
        self._on_error = on_error
        self._queue: queue.Queue[Any] = queue.Queue(max_queued)
        self._queued_bytes = 0
        self._lock = threading.Lock()
        self._closed = False
        self._stop = threading.Event()
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
                    self._queued_bytes + size > self.max_queued_bytes:
                self.dropped += 1
                return False
            try:
                self._queue.put_nowait((topic, type_name, payload, stamp, encode, size))
            except queue.Full:
                self.dropped += 1
                return False
            self._queued_bytes += size
        return True

    @property
    def queued(self) -> int:
        """Messages waiting to be written."""
        return self._queue.qsize()

    def close(self, timeout_s: float = 5.0) -> bool:
        """Write what is queued, finish the file; False if the thread did not end in time."""
        with self._lock:
            self._closed = True
        self._stop.set()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        last_flush = time.monotonic()
        try:
            while True:
                stopping = self._stop.is_set()  # before the get: what was put is in the queue
                try:
                    item = self._queue.get(timeout=0.0 if stopping else max(
                        0.01, min(0.1, last_flush + self.flush_s - time.monotonic())))
                except queue.Empty:
                    if stopping:
                        break
                    item = None
                if item is not None:
                    topic, type_name, payload, stamp, encode, size = item
                    with self._lock:
                        self._queued_bytes -= size
                    try:
                        data = payload if encode is None else encode(payload)
                    except Exception:  # noqa: BLE001 (one bad message is lost, not the file)
                        with self._lock:
                            self.dropped += 1
                        continue
                    self.file.write(topic, type_name, data, stamp)
                    self.written += 1
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
