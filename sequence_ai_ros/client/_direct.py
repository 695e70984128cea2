"""
DirectConnection: the direct protocol's two planes for one Policy.

Control plane, the gateway (API key): connect, ready, keepalive and release (the seat), label.
Data plane, the worker (direct secret, pinned TLS): observe, act, episode_end. The connection
renews its lease before the TTL runs out, and connects again when the worker refuses the secret
(401), says it is draining, or cannot be reached; a busy worker (429) is asked again after a
jittered backoff capped by its Retry-After, within the request's timeout.
"""

from collections.abc import Callable
import logging
import random
import threading
import time
from typing import Any
import urllib.parse
import uuid
import warnings

from ._direct_answer import prediction_from_act
from ._direct_wire import Readiness, renew_after, WorkerRoute
from ._episode_ends import EpisodeEnds
from ._episodes import EpisodeBook
from ._errors import (
    AuthError,
    CertPinError,
    Conflict,
    EpisodeLost,
    InvalidRequest,
    SeatLost,
    Unavailable,
)
from ._interrupt import InterruptSignal
from ._seat import Seat
from ._transport import Transport
from ._types import Observation, Prediction
from ._worker import WorkerChannel

_log = logging.getLogger('sequence_ai_ros.client')
MAX_RECONNECTS = 5
EPISODE_END_TIMEOUT_S = 5.0
# Worker answers that a new connect may mend: the secret rotated, the worker is going away,
# or it could not be reached at all (never a request that may have run: that is not resent).
_RECONNECT_REASONS = ('draining', 'unreachable')
REQUEST_ID_HEADER = 'X-Seq-Request-Id'


def busy_backoff(attempt: int, retry_after_s: float | None) -> float:
    """Seconds before asking a busy worker again: doubling from 50 ms, jittered, capped."""
    cap = retry_after_s if retry_after_s and retry_after_s > 0 else 1.0
    return float(random.uniform(0.5, 1.0) * min(cap, 0.05 * 2 ** min(attempt - 1, 10)))


def _segment(text: str) -> str:
    return urllib.parse.quote(text, safe='')


class DirectConnection:
    """The session, its worker route and seat, and the episodes its requests belong to."""

    def __init__(self, gateway: Transport, deployment: str, *, interrupt: InterruptSignal,
                 action_space: str | None = None,
                 pin: Callable[[WorkerRoute], WorkerRoute] | None = None) -> None:
        self._gateway = gateway
        self.deployment = deployment
        self.action_space = action_space
        self.session = uuid.uuid4().hex
        self.episodes = EpisodeBook()
        self.seat = Seat(gateway, deployment, self.session)
        self._interrupt = interrupt
        self._pin = pin  # a test seam: rewrite the route before it is trusted
        self._lock = threading.RLock()
        self._observe_lock = threading.Lock()
        self._route: WorkerRoute | None = None
        self._worker: WorkerChannel | None = None
        self._reached: WorkerChannel | None = None  # the last worker its pin let a request to
        self._renew_at: float | None = None
        self._seat_reported = False
        self._ends = EpisodeEnds()
        self.connects = 0
        self.closed = False
        self._unsent_said: set[str] = set()
        interrupt.on_interrupt(self.cut)

    @property
    def route(self) -> WorkerRoute | None:
        """Return the latest connect answer (None before the first)."""
        return self._route

    # -- control plane --------------------------------------------------------------------------

    def connect(self) -> WorkerRoute:
        """POST /v1/act/connect: a worker route and a seat, or the typed error (warming...)."""
        body = self._gateway.post('/v1/act/connect', {
            'model': self.deployment, 'session': self.session, 'keepalive': True})
        route = WorkerRoute.from_connect(body)
        if self._pin is not None:
            route = self._pin(route)
        with self._lock:
            old, self._worker = self._worker, WorkerChannel(route, self.session,
                                                            self._gateway.timeout_s)
            self._route = route
            after = renew_after(route.lease_ttl_s)
            self._renew_at = None if after is None else time.monotonic() + after
            self.connects += 1
            self._seat_reported = False
        if old is not None:
            old.close()
        self.seat.held(route.keepalive_every_s)
        return route

    def ready(self) -> Readiness:
        """GET /v1/act/ready for this session (also what starts a cold worker)."""
        query = f'model={_segment(self.deployment)}&session={self.session}&keepalive=true'
        return Readiness.from_wire(self._gateway.get(f'/v1/act/ready?{query}'))

    def label(self, episode_id: str, success: bool, notes: str) -> None:
        """Label an episode on the gateway (kept with the deployment's captured data)."""
        self._gateway.post(
            f'/v1/deployments/{_segment(self.deployment)}/episodes/{_segment(episode_id)}'
            '/label', {'success': bool(success), 'notes': str(notes)})

    # -- data plane -----------------------------------------------------------------------------

    def predict(self, observation: Observation, options: dict[str, Any]) -> Prediction:
        """One observe + act in the current episode (opened if none is): one Prediction."""
        episode = self.episodes.current_or_begin()
        options = {k: v for k, v in options.items() if v is not None}
        seed = options.pop('seed', None)
        # v1's action_horizon is the answer's first rows: the same cut is made here.
        horizon = options.pop('action_horizon', None)
        if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, int)
                                    or horizon < 1):
            raise InvalidRequest(f'action_horizon must be a positive integer, got {horizon!r}')
        self._say_unsent(options)
        inputs = observation.to_wire()
        proprio = inputs.get('proprioception', {})
        if isinstance(proprio.get('gripper'), (int, float)):  # the preset's gripper is a list
            inputs['proprioception'] = dict(proprio, gripper=[float(proprio['gripper'])])
        # One correlation id for the observe and the act, kept across their replays: what the
        # worker's log and the error's request_id name.
        rid = {REQUEST_ID_HEADER: f'r-{uuid.uuid4().hex[:8]}'}
        with self._observe_lock:  # numbers reach the worker in order, none skipped
            seq = self.episodes.number(episode, inputs)
            self._request(lambda worker: self._post_frames(
                worker, episode, self.episodes.unsent(episode), rid))
        payload: dict[str, Any] = {'model': self.deployment, 'episode_id': episode,
                                   'call': 'act', 'seq': seq + 1}
        if seed is not None:
            payload['seed'] = seed
        self.episodes.act_sent(episode, seq + 1)
        try:
            body = self._request(lambda worker: self._act(worker, payload, rid))
        except InvalidRequest as exc:
            if type(exc) is not InvalidRequest or not self.episodes.overtaken(episode, seq + 1):
                raise
            # With two requests in flight, the newer act reached the worker first and was
            # served the older one's observation too: this answer would be stale anyway.
            raise Unavailable(f'act {seq + 1} was overtaken by a newer act of its episode '
                              f'({exc.message}); nothing of it is played',
                              status=exc.status, request_id=exc.request_id,
                              details={'reason': 'act_overtaken'}) from exc
        route = self._route
        assert route is not None  # a request answered: connected
        return prediction_from_act(body, route, self.deployment, self.action_space, horizon)

    def _say_unsent(self, options: dict[str, Any]) -> None:
        """Warn once per option name that the direct act has no field for (v1's extras)."""
        unsent = sorted(set(options) - self._unsent_said)
        if unsent:
            self._unsent_said.update(unsent)
            # An RTC prefix among them: the engine sees no report and joins 'aligned' instead.
            warnings.warn(f'the direct protocol carries no {", ".join(unsent)}: not sent '
                          '(an act carries only its episode, number and seed)', UserWarning,
                          stacklevel=6)

    def end_episode(self, episode_id: str | None = None, *, wait: bool = True) -> str | None:
        """
        End an episode on the worker (best effort, bounded); return its id.

        The episode is closed here at once; with `wait=False` the worker is told from a
        background thread (in order), so an unreachable worker delays no caller.
        """
        episode = self.episodes.end(episode_id)
        worker = self._worker
        if episode is None or worker is None:
            return episode
        if wait:
            _send_episode_end(worker, episode)
        else:
            self._ends.submit(lambda: _send_episode_end(worker, episode))
        return episode

    def _post_frames(self, worker: WorkerChannel, episode: str, first: int,
                     rid: dict[str, str]) -> dict[str, Any]:
        kept = self.episodes.frames_from(episode, first)
        frames = [{'seq': seq, 'inputs': inputs} for seq, inputs in kept]
        try:
            answer = worker.post_packed('/observe', {'episode_id': episode, 'frames': frames},
                                        headers=rid)
            through = answer.get('through')
            if isinstance(through, int) and not isinstance(through, bool):
                self.episodes.acknowledged(episode, through)
            elif kept:
                self.episodes.acknowledged(episode, kept[-1][0])
            return answer
        except Conflict as exc:
            earlier = exc.details.get('from')
            if exc.reason != 'frames_missing' or not isinstance(earlier, int) or earlier >= first:
                raise
            return self._post_frames(worker, episode, earlier, rid)

    def _act(self, worker: WorkerChannel, payload: dict[str, Any],
             rid: dict[str, str]) -> dict[str, Any]:
        try:
            return worker.post('/act', payload, headers=rid)
        except Conflict as exc:
            earlier = exc.details.get('from')
            if exc.reason != 'frames_missing' or not isinstance(earlier, int):
                raise
            self._post_frames(worker, payload['episode_id'], earlier, rid)
            return worker.post('/act', payload, headers=rid)

    def _request(self, call: Callable[[WorkerChannel], dict[str, Any]]) -> dict[str, Any]:
        """Run `call` on the worker, reconnecting and backing off as the module says."""
        deadline = time.monotonic() + self._gateway.timeout_s
        generation = self._interrupt.generation
        reconnects = busy = 0
        while True:
            worker = None
            try:
                worker = self._current_worker()  # a connect's busy 429 backs off as an act's
                answer = call(worker)
                self._reached = worker
                return answer
            except CertPinError:
                # A worker this route reached before shows another certificate: it restarted,
                # and only a new connect names the certificate to pin now. A route whose pin
                # never let a request through fails closed, never retried.
                if worker is None or worker is not self._reached:
                    raise
                _log.warning('the worker presented another certificate than the one pinned at '
                             'connect: connecting again for its new route')
                self._drop_worker(worker)
                self._reached = None
            except EpisodeLost:
                self.episodes.end()  # the worker lost it; the next request opens another
                raise
            except (AuthError, Unavailable) as exc:
                self._interrupt.check(generation, 'the request')
                now = time.monotonic()
                from_worker = worker is not None  # not the gateway refusing a connect
                if from_worker and (isinstance(exc, AuthError)
                                    or exc.reason in _RECONNECT_REASONS):
                    reconnects += 1
                    if reconnects > MAX_RECONNECTS or now > deadline:
                        raise
                    _log.info('worker %s (%s): connecting again', exc.reason or 'refused the '
                              'direct secret', exc.status)
                    self._drop_worker(worker)
                    self._interrupt.sleep(busy_backoff(reconnects, None), generation,
                                          'the reconnect')
                    continue
                if isinstance(exc, AuthError) or exc.status != 429:
                    raise
                busy += 1
                pause = busy_backoff(busy, exc.retry_after_s)
                if now + pause > deadline:
                    restated = exc.fields()
                    restated['details']['attempts'] = busy
                    raise Unavailable(f'{exc.message} (busy on {busy} attempts in a row)',
                                      **restated) from None
                self._interrupt.sleep(pause, generation, 'the wait for a busy worker')

    def _current_worker(self) -> WorkerChannel:
        if self.seat.lost and not self._seat_reported:
            self._seat_reported = True
            self._drop_worker(self._worker)  # the next request connects, and is seated again
            # Between episodes nothing rode on the seat: this request connects again at once.
            if self.episodes.under_way():
                raise SeatLost(f'the gateway no longer holds the seat on {self.deployment} '
                               f'({self.seat.lost_why or "no keepalive reached it"}); the arm '
                               'holds and the next request connects again')
            _log.info('the seat on %s was lost between episodes: connecting again',
                      self.deployment)
        with self._lock:
            worker = self._worker
            due = self._renew_at is not None and time.monotonic() >= self._renew_at
        if worker is None:
            self.connect()
        elif due:
            self._renew()
        with self._lock:
            assert self._worker is not None
            return self._worker

    def _renew(self) -> None:
        """Renew the lease; a gateway that cannot answer now leaves the worker in use."""
        try:
            self.connect()
        except Unavailable as exc:
            if exc.queued:
                raise
            with self._lock:
                self._renew_at = time.monotonic() + max(1.0, exc.retry_after_s or 0.0)
            _log.warning('the lease renewal was not answered (%s); acting on', exc)

    def _drop_worker(self, worker: WorkerChannel | None) -> None:
        with self._lock:
            if worker is None or self._worker is not worker:
                return
            self._worker = None
        worker.close()

    def cut(self) -> None:
        """Cut the worker connections (interrupt()): a request in flight fails at once."""
        worker = self._worker
        if worker is not None:
            worker.cut()

    def close(self) -> None:
        """End the open episode, give the seat back, close the worker connection. Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.episodes.current is not None:
            self.end_episode(wait=False)
        self._ends.drain(EPISODE_END_TIMEOUT_S)  # before the seat goes: the worker may still ask
        self.seat.release()
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()


def _send_episode_end(worker: WorkerChannel, episode: str) -> None:
    """POST /act/episode_end; never raises (the worker ends an idle episode on its own)."""
    try:
        worker.post('/act/episode_end', {'episode_id': episode}, timeout_s=EPISODE_END_TIMEOUT_S)
    except Exception as exc:  # best effort, maybe on a background thread: say it, go on
        _log.debug('episode_end not answered: %s', exc)
