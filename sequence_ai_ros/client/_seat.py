"""
The seat a direct session holds on the gateway, kept alive while its Policy is open.

It is given back when the Policy closes (or the interpreter exits), and reported lost when the
gateway says it is gone.

A seat is capacity someone is billed for and other robots wait on: one left held blocks the
line until its TTL runs out, so release is attempted on every way out, bounded and best effort.
"""

import atexit
from collections.abc import Callable
import logging
import threading
import weakref

from ._transport import Transport

_log = logging.getLogger('sequence_ai_ros.client')
KEEPALIVE_TIMEOUT_S = 5.0
RELEASE_TIMEOUT_S = 3.0
THREAD_JOIN_S = 1.0
_open_seats: 'weakref.WeakSet[Seat]' = weakref.WeakSet()


class Seat:
    """A session's seat on one deployment: keepalive thread, lost flag, release."""

    def __init__(self, gateway: Transport, model: str, session: str,
                 on_lost: Callable[[str | None], object] | None = None) -> None:
        self._gateway = gateway
        self._model = model
        self._session = session
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._every_s = 20.0
        self.lost = False
        self.lost_why: str | None = None
        self.released = False
        self.keepalives = 0

    @property
    def body(self) -> dict[str, str]:
        """Return the body of a keepalive or release: which deployment, which session."""
        return {'model': self._model, 'session': self._session}

    def held(self, every_s: float | None) -> None:
        """Keep the seat a connect gave alive every `every_s` from now on."""
        with self._lock:
            if every_s:
                self._every_s = every_s
            self.lost, self.lost_why = False, None
            self.released = False
            _open_seats.add(self)
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._keep, daemon=True,
                                                name='sequence-ai-seat-keepalive')
                self._thread.start()

    def keep_once(self) -> bool:
        """Send one keepalive; return whether the seat is held (False: lost). Never raises."""
        try:
            answer = self._gateway.post('/v1/act/keepalive', self.body,
                                        timeout_s=KEEPALIVE_TIMEOUT_S)
        except Exception as exc:  # unreached: the seat lasts its TTL; try again next beat
            _log.debug('seat keepalive not answered: %s', exc)
            return not self.lost
        self.keepalives += 1
        every = answer.get('every_s')
        if isinstance(every, (int, float)) and not isinstance(every, bool) and every > 0:
            self._every_s = float(every)
        if answer.get('held') is False:
            why = answer.get('why')
            self._mark_lost(why if isinstance(why, str) else None)
            return False
        return True

    def _mark_lost(self, why: str | None) -> None:
        with self._lock:
            first = not self.lost
            self.lost, self.lost_why = True, why
        if first:
            _log.warning('the gateway no longer holds the seat on %s (%s)', self._model,
                         why or 'no reason given')
            if self._on_lost is not None:
                self._on_lost(why)

    def _keep(self) -> None:
        while not self._stop.wait(self._every_s):
            if not self.keep_once():
                return  # keepalives stop; the next request reconnects, which seats it again

    def release(self) -> None:
        """Give the seat back (bounded, best effort) and stop the keepalives. Idempotent."""
        self._stop.set()
        with self._lock:
            if self.released or self._thread is None:  # given back, or never held
                return
            self.released = True
        try:
            self._gateway.post('/v1/act/release', self.body, timeout_s=RELEASE_TIMEOUT_S)
        except Exception as exc:
            _log.debug('seat release not answered: %s', exc)
        _open_seats.discard(self)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # Woken by the stop at once, unless a keepalive is in flight: close() leaves no
            # thread behind in the usual case, and waits little in the other.
            thread.join(THREAD_JOIN_S)


@atexit.register
def _release_at_exit() -> None:
    for seat in list(_open_seats):
        seat.release()
