"""
The direct protocol's control plane, on the gateway (API key as Bearer).

POST /v1/act/connect seats a robot's session and answers the worker's coordinates (URL, direct
secret, certificate fingerprint, lease), the deployment's parameters, how to keep the seat alive
and the only timing a deployment states (hz, action_chunk_valid_len, action_chunk_replan_at).
GET /v1/act/ready says whether the deployment can serve this session (and wakes a cold one),
POST /v1/act/keepalive keeps the seat, POST /v1/act/release frees it, and
POST /v1/deployments/{name}/episodes/{episode}/label keeps how an episode went, and
POST /v1/latency takes the client's latency records (counted, by outcome, in the local stats).
"""

from collections.abc import Awaitable, Callable
import datetime
from typing import Any

from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.config import KEEPALIVE_EVERY_S, SEAT_TTL_S
from sequence_ai_ros.gateway.errors import JsonReply, WarmingUp
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .errors import answered, DirectError, REQUEST_ID_HEADER, request_id_of, warming
from .state import DirectState
from .wire import read_object

Handler = Callable[[Request], Awaitable[Response]]
IO_NOTE = ('robot-arm preset: observe() the Observation {images: [{view, data, timestamp_ms}], '
           'proprioception: {joint_positions, gripper: [..]}, instruction}; act() answers its '
           'ActionChunk {steps, robot, action_space, action_dim, control_frequency_hz, '
           'covers_seconds}')


def replan_at(profile: ModelProfile) -> int:
    """Return the step at which a robot asks for the next chunk: half the chunk, rounded up."""
    return (profile.action_horizon + 1) // 2


class ControlPlane:
    """The gateway's direct-protocol routes."""

    def __init__(self, state: DirectState) -> None:
        self.state = state

    def routes(self) -> list[Route]:
        """Return the control plane's routes, for the gateway app."""
        return [
            Route('/v1/act/connect', self._guarded(self.connect), methods=['POST']),
            Route('/v1/act/ready', self._guarded(self.ready), methods=['GET']),
            Route('/v1/act/keepalive', self._guarded(self.keepalive), methods=['POST']),
            Route('/v1/act/release', self._guarded(self.release), methods=['POST']),
            Route('/v1/deployments/{name}/episodes/{episode}/label', self._guarded(self.label),
                  methods=['POST']),
            Route('/v1/latency', self._guarded(self.latency), methods=['POST']),
        ]

    def _guarded(self, handler: Callable[[Request, str | None], Awaitable[Response]]) -> Handler:
        async def authenticated(request: Request) -> Response:
            key = self.state.ledger.authenticate(request.headers.get('authorization'))
            return await handler(request, key)

        async def guarded(request: Request) -> Response:
            return await answered(request, authenticated(request))
        return guarded

    def _deployment(self, name: Any, key: str | None) -> ModelProfile:
        """Return the deployment named, if the key may use it (a robot key: its own only)."""
        profile = self.state.deployment(name)
        self.state.ledger.check_deployment(key, profile.name)
        return profile

    async def _body(self, request: Request) -> dict[str, Any]:
        return await read_object(request, self.state.max_body_bytes, self.state.body_timeout_s)

    @staticmethod
    def _session(payload: dict[str, Any] | Any) -> str:
        session = payload.get('session') if isinstance(payload, dict) else None
        if not isinstance(session, str) or not 8 <= len(session) <= 128:
            raise DirectError('invalid_request', "session: expected the client's session id "
                                                 '(8-128 characters)')
        return session

    def _keepalive(self) -> dict[str, float]:
        scaled = self.state.scaled
        every_s = KEEPALIVE_EVERY_S * self.state.settings.seat_ttl_s / SEAT_TTL_S
        return {'every_s': round(scaled(every_s), 3),
                'seat_ttl_s': round(scaled(self.state.settings.seat_ttl_s), 3)}

    def _wake(self, profile: ModelProfile) -> None:
        """Admit the deployment's model, starting a cold one (DirectError warming meanwhile)."""
        try:
            self.state.core.warmth.admit(profile.id)
        except WarmingUp as error:
            raise warming(error, profile.cold_start_s) from None

    async def connect(self, request: Request, key: str | None) -> Response:
        """POST /v1/act/connect: seat the session; answer the worker and the timing."""
        state = self.state
        payload = await self._body(request)
        state.refuse_if_draining()
        profile = self._deployment(payload.get('model'), key)
        session = self._session(payload)
        self._wake(profile)
        seating = state.seats.connect(profile.id, session, key)
        ttl_s = state.seats.lease_ttl_s
        expires = (datetime.datetime.now(datetime.timezone.utc)
                   + datetime.timedelta(seconds=ttl_s))
        return JsonReply({
            'worker_url': state.worker_url,
            'direct_secret': seating.secret,
            'cert_fingerprint': state.fingerprint,
            'tls': 'pinned',
            'tls_name': None,
            'lease': {'epoch': seating.epoch, 'ttl_s': max(1, round(ttl_s)),
                      'expires_at': expires.isoformat()},
            'params': {},
            'keepalive': self._keepalive(),
            'request_timeout_s': round(state.scaled(state.settings.request_timeout_s), 3),
            'hz': profile.control_hz,
            'action_chunk_valid_len': profile.action_horizon,
            'action_chunk_replan_at': replan_at(profile),
            'io': IO_NOTE,
        }, headers={REQUEST_ID_HEADER: request_id_of(request)})

    async def ready(self, request: Request, key: str | None) -> Response:
        """GET /v1/act/ready: ready, starting (a cold model is woken) or queued, for a session."""
        state = self.state
        state.refuse_if_draining()
        profile = self._deployment(request.query_params.get('model'), key)
        session = request.query_params.get('session') or None
        try:
            self._wake(profile)
        except DirectError as error:
            eta = error.retry_after_s or 0.0
            return JsonReply({'ready': False, 'status': 'starting', 'stage': 'loading',
                              'eta_s': round(eta, 3), 'retry_after_s': round(eta, 3),
                              'start_deadline_in_s': error.details['start_deadline_in_s']})
        place = state.seats.place(profile.id, session)
        if place.get('seated') or place.get('free') or 'queue_position' not in place:
            return JsonReply({'ready': True, 'status': 'running', 'eta_s': 0.0})
        retry = round(max(0.05, state.seats.seat_ttl_s / 8), 3)
        return JsonReply({'ready': False, 'status': 'queued', 'eta_s': None,
                          'eta_unknown': 'queued', 'queue_position': place['queue_position'],
                          'retry_after_s': retry,
                          'seat_note': 'a seat comes back when a robot releases it or stops '
                                       f'keeping it alive ({state.seats.seat_ttl_s:g} s)'})

    async def keepalive(self, request: Request, key: str | None) -> Response:
        """POST /v1/act/keepalive: keep the session's seat; `held` false when it has none."""
        payload = await self._body(request)
        profile = self._deployment(payload.get('model'), key)
        held = self.state.seats.keepalive(profile.id, self._session(payload))
        body: dict[str, Any] = {'held': held, **self._keepalive(), 'request_timeout_s': round(
            self.state.scaled(self.state.settings.request_timeout_s), 3)}
        if not held:
            body['why'] = 'expired'
        return JsonReply(body)

    async def release(self, request: Request, key: str | None) -> Response:
        """POST /v1/act/release: free the session's seat (and its place in line)."""
        payload = await self._body(request)
        profile = self._deployment(payload.get('model'), key)
        released = self.state.seats.release(profile.id, self._session(payload))
        return JsonReply({'released': released})

    async def label(self, request: Request, key: str | None) -> Response:
        """POST .../episodes/{episode}/label: keep {success, notes} for the episode."""
        profile = self._deployment(request.path_params['name'], key)
        payload = await self._body(request)
        success, notes = payload.get('success'), payload.get('notes', '')
        if not isinstance(success, bool):
            raise DirectError('invalid_request', 'success: expected true or false')
        if not isinstance(notes, str) or len(notes) > 4096:
            raise DirectError('invalid_request', 'notes: expected a string of at most 4096 '
                                                 'characters')
        episode = request.path_params['episode']
        if not 1 <= len(episode) <= 128:
            raise DirectError('invalid_request', 'episode: expected an id of 1-128 characters')
        row = self.state.episodes.label(profile.name, episode, success, notes)
        return JsonReply({'labelled': True, 'episode_id': row['episode_id']})

    async def latency(self, request: Request, key: str | None) -> Response:
        """POST /v1/latency: count the client's act records by outcome."""
        records = (await self._body(request)).get('records')
        if not isinstance(records, list):
            raise DirectError('invalid_request', 'records: expected a list')
        tally = self.state.latency_records
        for record in records[:1000]:
            outcome = record.get('outcome') if isinstance(record, dict) else None
            known = outcome in tally or len(tally) < 16  # a client cannot grow the table
            name = outcome if isinstance(outcome, str) and len(outcome) <= 32 and known \
                else '(other)'
            tally[name] = tally.get(name, 0) + 1
        return JsonReply({'accepted': len(records[:1000])})
