"""
The direct protocol's data plane: the worker, a second HTTPS listener of the gateway process.

Only a direct secret from connect opens it, never an API key (the key stays with the robot and
the gateway). GET /ping names the formats it reads; POST /observe keeps numbered observations;
POST /act runs one act through the policy core (the same cold start, FIFO gate, latency and
credit as /v1/act) and answers `{outputs, perf, usage, warnings, request_id}`, `outputs` being
the robot-arm action chunk; POST /act/episode_end ends an episode. Every answer, errors
included, carries X-Seq-Act-Formats.
"""

import asyncio
from collections.abc import Awaitable, Callable
import time
from typing import Any

from sequence_ai_ros.gateway.act import action_chunk
from sequence_ai_ros.gateway.answer_faults import AnswerFaults, CannedAnswers
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.core import Served
from sequence_ai_ros.gateway.errors import ApiError, JsonReply, shown, WarmingUp
from sequence_ai_ros.gateway.stats import MODEL_SCOPE_KEY, Stats, StatsMiddleware
from sequence_ai_ros.gateway.validation import ActRequest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import answered, DirectError, REQUEST_ID_HEADER, request_id_of, warming
from .preset import preset_call
from .seats import Session
from .state import DirectState
from .wire import answer, read_object

FORMATS_HEADER = 'X-Seq-Act-Formats'
# Only what this worker really does: msgpack bodies, numbered observations, acts that carry none.
FORMATS = 'x-seq-msgpack/1, x-seq-observe/1, x-seq-call/1'
ACT_KEYS = ('model', 'episode_id', 'call', 'seq', 'seed', 'params', 'inputs')


class FormatsHeader:
    """ASGI middleware naming the worker's formats on every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, adding the header to its answer."""
        async def send_named(message: Message) -> None:
            if message['type'] == 'http.response.start':
                message['headers'] = [*message.get('headers', []),
                                      (FORMATS_HEADER.lower().encode(), FORMATS.encode())]
            await send(message)
        await self.app(scope, receive, send_named if scope['type'] == 'http' else send)


class Worker:
    """The worker's routes over the shared direct state."""

    def __init__(self, state: DirectState, faults: AnswerFaults) -> None:
        self.state = state
        self.stats = Stats()
        self.faults = faults  # the gateway's canned answers (/v1/_local/faults), one for both

    def app(self) -> Starlette:
        """Build the worker's ASGI app."""
        routes = [Route('/ping', self.ping, methods=['GET']),
                  Route('/observe', self._guarded(self.observe), methods=['POST']),
                  Route('/act', self._guarded(self.act), methods=['POST']),
                  Route('/act/episode_end', self._guarded(self.episode_end), methods=['POST'])]

        async def not_found(request: Request, exc: Exception) -> Response:
            return DirectError('not_found', f'no route {request.url.path}').response(request)

        async def server_error(request: Request, exc: Exception) -> Response:
            return DirectError('internal', f'internal error: {type(exc).__name__}'
                               ).response(request)

        return Starlette(routes=routes,
                         middleware=[Middleware(FormatsHeader),
                                     Middleware(StatsMiddleware, stats=self.stats),
                                     Middleware(CannedAnswers, faults=self.faults)],
                         exception_handlers={404: not_found, 405: not_found,
                                             Exception: server_error})

    def _guarded(self, handler: Callable[[Request, Session], Awaitable[Response]]
                 ) -> Callable[[Request], Awaitable[Response]]:
        async def authenticated(request: Request) -> Response:
            session = self._session_of(request)
            with self.state.seats.using(session):
                return await handler(request, session)

        async def guarded(request: Request) -> Response:
            return await answered(request, authenticated(request))
        return guarded

    def _session_of(self, request: Request) -> Session:
        scheme, _, token = (request.headers.get('authorization') or '').strip().partition(' ')
        token = token.strip()
        if scheme.lower() != 'bearer' or not token:
            raise DirectError('unauthenticated', 'the worker takes the direct secret from '
                              "/v1/act/connect: send 'Authorization: Bearer <direct_secret>'")
        if token.startswith('seq_'):
            raise DirectError('unauthenticated', 'an API key is never accepted at the worker: '
                              'it takes the direct secret that /v1/act/connect answered')
        session = self.state.seats.by_secret(token)
        if session is None:
            raise DirectError('unauthenticated', 'direct secret unknown or its lease ended: '
                              'connect again for a new one')
        return session

    async def _payload(self, request: Request) -> dict[str, Any]:
        return await read_object(request, self.state.max_body_bytes, self.state.body_timeout_s)

    async def ping(self, request: Request) -> Response:
        """GET /ping: alive, and (with ?act=<request id>) whether that act still runs."""
        body: dict[str, Any] = {'ok': True}
        rid = request.query_params.get('act')
        if rid:
            started = self.state.running.get(rid)
            body['act'] = {'running': started is not None,
                           'for_s': None if started is None else time.monotonic() - started}
        return JsonReply(body)

    async def observe(self, request: Request, session: Session) -> Response:
        """POST /observe: keep `frames` [{seq, inputs}] of `episode_id`; answer `through`."""
        payload = await self._payload(request)
        episode_id = _episode_id(payload)
        frames, skipped = payload.get('frames', []), payload.get('skipped', [])
        if not isinstance(frames, list) or not isinstance(skipped, list):
            raise DirectError('invalid_request', 'frames and skipped: expected lists')
        numbered: list[tuple[int, Any]] = []
        for i, frame in enumerate(frames):
            number = frame.get('seq') if isinstance(frame, dict) else None
            if not isinstance(number, int) or not _count(number):
                raise DirectError('invalid_request', f'frames[{i}].seq: expected a number >= 0')
            numbered.append((number, frame.get('inputs')))
        if not all(_count(n) for n in skipped):
            raise DirectError('invalid_request', 'skipped: expected numbers >= 0')
        session.episodes.add(episode_id)
        through = self.state.episodes.observe(session.model, _own(session, episode_id),
                                              numbered, skipped)
        return JsonReply({'through': through})

    async def act(self, request: Request, session: Session) -> Response:
        """POST /act: one act of the episode, through the policy core."""
        started = time.perf_counter()
        rid = request_id_of(request)
        payload = await self._payload(request)
        self.state.refuse_if_draining()
        profile = self.state.deployment(payload.get('model'))
        request.scope[MODEL_SCOPE_KEY] = profile.id
        if profile.id != session.model:
            raise DirectError('forbidden', f'this direct secret is for {session.model}, '
                                           f'not {profile.name}')
        seed = payload.get('seed')
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise DirectError('invalid_request', 'seed: expected an integer')
        inputs, numbered = await self._inputs(payload, session, profile)
        call = await run_in_threadpool(preset_call, inputs, profile, seed)
        del inputs
        decoded_ms = (time.perf_counter() - started) * 1000.0
        served = await self._run(call, session, rid)
        session.acts += 1
        if numbered is not None:
            self.state.episodes.served(*numbered)
        else:
            self.state.episodes.counted_act()
        warnings = call.warnings + served.inference.warnings
        unknown = sorted(shown(str(k)) for k in payload if k not in ACT_KEYS)
        if unknown:
            warnings.append(f'fields not read by the local worker: {", ".join(unknown[:8])}')
        frames = len(call.images)
        return answer(request, {
            'outputs': action_chunk(profile, served.inference.rows),
            'perf': {'inference_ms': round(served.inference_ms, 3),
                     'decode_ms': round(decoded_ms, 3),
                     'handler_ms': round((time.perf_counter() - started) * 1000.0, 3)},
            'usage': {'frames_received': frames, 'frames_used': frames},
            'warnings': warnings,
            'request_id': rid,
        }, {REQUEST_ID_HEADER: rid})

    async def _inputs(self, payload: dict[str, Any], session: Session, profile: ModelProfile
                      ) -> tuple[Any, tuple[str, int] | None]:
        """Return what an act reads (its own inputs, or its episode's newest observation)."""
        if 'inputs' in payload:
            if payload.get('call') is not None:
                raise DirectError('invalid_request', 'an act is a call (no inputs) or carries '
                                                     'its inputs, not both')
            return payload['inputs'], None
        if payload.get('call') != 'act':
            raise DirectError('invalid_request', 'call: expected "act" (or the act\'s inputs)')
        seq = payload.get('seq')
        if not isinstance(seq, int) or not _count(seq):
            raise DirectError('invalid_request', 'seq: expected the number of observations '
                                                 'before this act')
        episode_id = _episode_id(payload)
        session.episodes.add(episode_id)
        numbered = (_own(session, episode_id), seq)
        return await self.state.episodes.inputs_for(profile.id, numbered[0], seq), numbered

    async def _run(self, call: ActRequest, session: Session, rid: str) -> Served:
        """Run a checked act through the core, charged to the session's key."""
        state, profile = self.state, call.profile
        state.running[rid] = time.monotonic()
        try:
            with state.ledger.charging(session.key):
                return await asyncio.wait_for(
                    state.core.run(call, {'action_horizon': call.horizon, 'seed': call.seed}),
                    state.scaled(state.settings.request_timeout_s))
        except WarmingUp as error:
            raise warming(error, profile.cold_start_s) from None
        except ApiError as error:
            # The core's 500 is the policy failing; 502-504 a policy server in front of it.
            if error.status == 500:
                raise DirectError('policy_error', error.detail) from None
            raise
        except asyncio.TimeoutError:
            raise DirectError('timeout', "the act outran the deployment's request_timeout_s",
                              details={'request_timeout_s': state.settings.request_timeout_s}
                              ) from None
        finally:
            state.running.pop(rid, None)

    async def episode_end(self, request: Request, session: Session) -> Response:
        """POST /act/episode_end: the episode is over; its observations are dropped."""
        payload = await self._payload(request)
        episode_id = _episode_id(payload)
        ended = self.state.episodes.end(_own(session, episode_id))
        session.episodes.discard(episode_id)
        return JsonReply({'ended': ended})


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _own(session: Session, episode_id: str) -> str:
    """Return the key of a session's episode: one robot never reads another's observations."""
    return f'{session.id}/{episode_id}'


def _episode_id(payload: dict[str, Any]) -> str:
    episode = payload.get('episode_id')
    if not isinstance(episode, str) or not 1 <= len(episode) <= 128:
        raise DirectError('invalid_request', 'episode_id: expected an id of 1-128 characters')
    return episode
