"""
Policy's methods of the direct protocol beyond a request (a mixin; Policy holds the state).

Which protocol is in use, readiness, the seat, episodes on the wire, labels and interrupts.

On v1 they are harmless: no episode, no seat, a readiness that does not exist is refused.
"""

from collections.abc import Callable
import logging
import threading
import time
from typing import Any

from ._direct import DirectConnection
from ._direct_wire import Readiness
from ._errors import InvalidRequest, NotFound, Unavailable
from ._interrupt import InterruptSignal

PROTOCOLS = ('auto', 'direct', 'v1')
_log = logging.getLogger('sequence_ai_ros.client')


class DirectMethods:
    """Policy's direct-protocol methods; the attributes below are Policy's."""

    _model: str
    _protocol: str
    _direct: DirectConnection | None
    _protocol_lock: threading.Lock
    _interrupt: InterruptSignal

    def _assert_open(self) -> None:
        raise NotImplementedError  # Policy's

    @property
    def protocol(self) -> str:
        """Return `direct` or `v1` once known; `auto` until the first request settles it."""
        return self._protocol

    @property
    def seat_lost(self) -> bool:
        """Return whether the gateway said it no longer holds this Policy's seat (direct)."""
        return self._direct is not None and self._direct.seat.lost

    @property
    def session(self) -> str | None:
        """Return the direct session id (None on v1)."""
        return self._direct.session if self._direct is not None else None

    @property
    def direct(self) -> DirectConnection | None:
        """Return the direct connection (its route, seat and episodes), None on v1."""
        return self._direct if self._protocol != 'v1' else None

    def resolve_protocol(self) -> str:
        """
        Settle `auto`: connect for the direct protocol, and say in the log which is in use.

        A gateway without it (a 404 for the route, not a coded not_found for the deployment)
        means v1.
        """
        self._assert_open()
        return self._settle_protocol()

    def _settle_protocol(self) -> str:
        # No open check: a request started before close() is drained, not refused.
        with self._protocol_lock:
            if self._protocol != 'auto':
                return self._protocol
            assert self._direct is not None
            try:
                self._direct.connect()
                self._protocol = 'direct'
            except NotFound:
                self._protocol = 'direct'  # it answered, coded: the deployment is missing
                raise
            except InvalidRequest as exc:
                if exc.status != 404:
                    raise
                self._protocol = 'v1'
            except Unavailable as exc:
                if not (exc.warming or exc.queued or exc.status == 429):
                    raise
                # It answered as the direct protocol (a cold worker, a line, no free seat):
                # the request that follows waits or backs off as it does on any connect.
                self._protocol = 'direct'
                _log.info('%s: direct protocol, %s', self._model, exc)
            _log.info('%s: using the %s protocol', self._model, self._protocol)
            return self._protocol

    def ready(self) -> Readiness:
        """
        Ask GET /v1/act/ready for this session: ready, eta_s, status, stage, queue position.

        Does not block; a cold worker is started by the asking. On v1 there is no such route:
        InvalidRequest (the first request waits out a cold start instead).
        """
        if self.resolve_protocol() != 'direct':
            raise InvalidRequest('ready() needs the direct protocol; this gateway speaks v1 '
                                 'only (its first request waits out a cold start)')
        assert self._direct is not None
        return self._direct.ready()

    def wait_until_ready(self, timeout_s: float = 600.0, *,
                         on_wait: Callable[[Readiness], Any] | None = None,
                         poll_s: float = 2.0) -> float:
        """
        Poll ready() until the worker serves this session; return the seconds waited.

        on_wait(readiness) is called on every answer that is not ready (the ETA, the stage, the
        place in line). Past `timeout_s` raises Unavailable (warming); interrupt() ends the
        wait at once with Interrupted. On v1 returns 0 at once.
        """
        began = time.monotonic()
        generation = self._interrupt.generation
        if self.resolve_protocol() != 'direct':
            return 0.0
        assert self._direct is not None
        while True:
            answer = self._direct.ready()
            if answer.ready:
                if self._direct.route is None:
                    self._direct.connect()  # open the worker route before the first act
                return time.monotonic() - began
            if on_wait is not None:
                on_wait(answer)
            left = timeout_s - (time.monotonic() - began)
            if left <= 0:
                raise Unavailable(f'{self._model} was still not ready after {timeout_s:g}s '
                                  f'(status {answer.status}, stage {answer.stage})',
                                  warming=True, retry_after_s=answer.retry_after_s,
                                  code='warming')
            pause = answer.retry_after_s or poll_s
            self._interrupt.sleep(min(left, max(0.1, pause)), generation,
                                  'wait_until_ready()')

    def begin_episode(self, episode_id: str | None = None) -> str | None:
        """Open an episode on the wire (direct): its requests carry its id. None on v1."""
        self._assert_open()
        if self._direct is None or self._protocol == 'v1':
            return None
        if self._direct.episodes.current is not None:
            self._direct.end_episode()
        return self._direct.episodes.begin(episode_id)

    def end_episode(self, episode_id: str | None = None, *, wait: bool = True) -> str | None:
        """
        Tell the worker the episode ended (bounded, best effort); return its id.

        `wait=False` tells it from a background thread: for a control loop, which must not
        wait on an unreachable worker. close() waits for those (bounded) before the seat goes.
        """
        if self._direct is None or self._protocol == 'v1':
            return None
        return self._direct.end_episode(episode_id, wait=wait)

    def label(self, success: bool, notes: str = '', *, episode_id: str | None = None) -> str:
        """Label an episode (default: the last one) on the gateway; return its id."""
        self._assert_open()
        if self._direct is None or self.resolve_protocol() != 'direct':
            raise InvalidRequest('label() needs the direct protocol (episodes on the wire)')
        episode = episode_id or self._direct.episodes.last
        if episode is None:
            raise InvalidRequest('label(): no episode has run on this Policy yet')
        self._direct.label(episode, success, notes)
        return episode

    def interrupt(self) -> None:
        """
        Cut short the request in flight and any wait of this Policy, from any thread.

        The caller of what was cut gets Interrupted; nothing of it is played. Requests
        started afterwards run as usual.
        """
        self._interrupt.fire()
