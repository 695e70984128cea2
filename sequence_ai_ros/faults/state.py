"""
The proxy's shared state: the link's settings, the armed faults and the counters.

Callers change it from their threads while the proxy's loop thread reads it for every chunk,
so every access goes through one lock; nothing here waits while holding it.
"""

from collections import deque
from dataclasses import dataclass, replace
import random
import threading
from typing import Any

from .http_framing import CannedResponse

FAULTS = ('refuse', 'reset', 'stall', 'respond', 'cut')
_COUNTERS = ('accepted', 'open_now', 'requests', 'bytes_up', 'bytes_down', 'deliveries')


@dataclass(frozen=True)
class ProxyStats:
    """
    What the proxy has seen since it started.

    `requests` counts plain-HTTP requests only (TLS is opaque); `bytes_up` and `bytes_down` are
    bytes delivered to the gateway and to the client; `faults` counts each fault that fired;
    `late_s` sums how long after its due time each of the `deliveries` was written (timer
    wake-up, a busy machine): the proxy's own addition to the link it emulates; `errors`
    holds unexpected internal errors (a bug if not empty).
    """

    accepted: int
    open_now: int
    requests: int
    bytes_up: int
    bytes_down: int
    faults: dict[str, int]
    deliveries: int = 0
    late_s: float = 0.0
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class LinkSettings:
    """The link and the two modes, as they stand until changed or cleared."""

    latency_s: float = 0.0
    jitter_s: float = 0.0
    bandwidth_bytes_per_s: float | None = None
    drip: tuple[int, float] | None = None  # (bytes per piece, seconds between pieces)
    stall: bool = False
    refuse: bool = False


# The fault a starting request is given: (name or None, canned answer, response bytes to pass).
Claim = tuple[str | None, CannedResponse | None, int | None]


class ProxyState:
    """Settings, armed faults and counters behind one lock (see the module)."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(seed)  # drawn from on the loop thread only
        self._counts = dict.fromkeys(_COUNTERS, 0)
        self._late_s = 0.0
        self._fired = dict.fromkeys(FAULTS, 0)
        self._errors: list[str] = []
        self._settings = LinkSettings()
        self._armed = {'reset': 0, 'stall': 0}
        self._respond: deque[list[Any]] = deque()  # [remaining, CannedResponse]
        self._cut: deque[list[int]] = deque()  # [remaining, n_bytes]

    # -- written by the caller ------------------------------------------------------------

    @property
    def settings(self) -> LinkSettings:
        """Return the settings in force now."""
        with self._lock:
            return self._settings

    def change(self, **settings: Any) -> None:
        """Replace the named fields of the settings (already validated by the caller)."""
        with self._lock:
            self._settings = replace(self._settings, **settings)

    def arm(self, fault: str, n: int) -> None:
        """Arm the next n requests with 'reset' or 'stall'."""
        with self._lock:
            self._armed[fault] += n

    def arm_respond(self, n: int, canned: CannedResponse) -> None:
        """Answer the next n plain-HTTP requests with `canned`."""
        with self._lock:
            self._respond.append([n, canned])

    def arm_cut(self, times: int, n_bytes: int) -> None:
        """Cut the next `times` responses after n_bytes."""
        with self._lock:
            self._cut.append([times, n_bytes])

    def clear(self) -> None:
        """Return to a clean link: default settings, nothing armed (counters stay)."""
        with self._lock:
            self._settings = LinkSettings()
            self._armed = {'reset': 0, 'stall': 0}
            self._respond.clear()
            self._cut.clear()

    def stats(self) -> ProxyStats:
        """Return a snapshot of the counters."""
        with self._lock:
            return ProxyStats(faults=dict(self._fired), late_s=self._late_s,
                              errors=tuple(self._errors), **self._counts)

    # -- read and counted on the loop thread ----------------------------------------------

    def delay(self) -> float:
        """Return one leg's delay: the latency plus a fresh draw of jitter."""
        with self._lock:
            latency, jitter = self._settings.latency_s, self._settings.jitter_s
        return latency + (self._rng.uniform(0.0, jitter) if jitter else 0.0)

    def shaping(self, down: bool) -> tuple[float | None, tuple[int, float] | None]:
        """Return (bandwidth cap, drip) for one direction; drip shapes responses only."""
        with self._lock:
            settings = self._settings
            return settings.bandwidth_bytes_per_s, settings.drip if down else None

    def count(self, name: str, n: int = 1) -> None:
        """Add n to a counter."""
        with self._lock:
            self._counts[name] += n

    def delivered(self, counter: str, n_bytes: int, late_s: float) -> None:
        """Count one delivery of n_bytes, written late_s after it was due."""
        with self._lock:
            self._counts[counter] += n_bytes
            self._counts['deliveries'] += 1
            self._late_s += max(0.0, late_s)

    def error(self, exc: BaseException) -> None:
        """Record an unexpected internal error."""
        with self._lock:
            self._errors.append(f'{type(exc).__name__}: {exc}')

    def accepted(self) -> bool:
        """Count a new connection; return True if refuse mode says to reset it."""
        with self._lock:
            self._counts['accepted'] += 1
            refuse = self._settings.refuse
            self._fired['refuse'] += refuse
        return refuse

    def claim(self, http: bool) -> Claim:
        """Give a starting request the first armed fault, if any: (fault, canned, cut)."""
        with self._lock:
            self._counts['requests'] += http
            fault: str | None = None
            canned: CannedResponse | None = None
            cut: int | None = None
            if self._armed['reset']:
                self._armed['reset'] -= 1
                fault = 'reset'
            elif self._settings.stall:
                fault = 'stall'
            elif self._armed['stall']:
                self._armed['stall'] -= 1
                fault = 'stall'
            elif http and self._respond:
                fault, canned = 'respond', _take(self._respond)
            elif self._cut:
                fault, cut = 'cut', _take(self._cut)
            if fault:
                self._fired[fault] += 1
            return fault, canned, cut


def _take(queue: deque[list[Any]]) -> Any:
    """Use up one of the first entry's [remaining, value] and return its value."""
    entry = queue[0]
    entry[0] -= 1
    if not entry[0]:
        queue.popleft()
    return entry[1]
