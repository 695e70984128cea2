"""
POST /v1/act: auth and credit, body, validation, warm-up, the FIFO queue, inference, reply.

Order of checks: 401, 402, 413 (or 408 for a stalled body), 415, 400, 404, 422, then 503
warming, so deterministic mistakes are reported before a cold model is woken. One unit of
credit is held from the 402 check and given back if the call fails in any way.
"""

import asyncio
import logging
import time
from typing import Any
import uuid

import numpy as np
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .body import check_content_type, read_body
from .catalogue import Catalogue, ModelProfile
from .errors import ApiError, JsonReply
from .fifo_gate import FifoGate
from .keys import KeyLedger
from .latency import LatencySampler
from .policy_backend import PolicyBackend
from .prefix import PREFIX_OPTION, REPORT_KEY
from .stats import MODEL_SCOPE_KEY
from .validation import ActRequest, lookup_model, parse_json, validate_act
from .warmth import Warmth

LOG = logging.getLogger(__name__)


class ActService:
    """The /v1/act endpoint and the per-model state it needs."""

    def __init__(self, catalogue: Catalogue, ledger: KeyLedger, warmth: Warmth,
                 latency: LatencySampler, backend: PolicyBackend, concurrency: int,
                 max_body_bytes: int, seed: int, body_timeout_s: float = 30.0) -> None:
        self.catalogue = catalogue
        self.ledger = ledger
        self.warmth = warmth
        self.latency = latency
        self.backend = backend
        self.gates = {p.id: FifoGate(concurrency) for p in catalogue.profiles}
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        # Draws per-call seeds; used only on the event loop thread, so it needs no lock.
        self._seeds = np.random.default_rng(seed)

    async def handle(self, request: Request) -> Response:
        """Handle one POST /v1/act."""
        started = time.perf_counter()
        try:
            key = self.ledger.authenticate(request.headers.get('authorization'))
            reservation = self.ledger.reserve(key)
        except ApiError as error:
            return error.response()
        try:
            response: Response = await self._act(request)
        except ApiError as error:
            self.ledger.refund(reservation)
            response = error.response()
        except BaseException:
            self.ledger.refund(reservation)
            raise
        else:
            self.ledger.commit(reservation)
        LOG.debug('act %s -> %d in %.1f ms', request.scope.get(MODEL_SCOPE_KEY),
                  response.status_code, (time.perf_counter() - started) * 1000)
        return response

    async def _read_call(self, request: Request) -> tuple[ActRequest, float]:
        # Only the validated call outlives this frame: a queued request must not keep its raw
        # body and parsed JSON (base64 frames included) while it waits for a slot.
        body = await read_body(request, self.max_body_bytes, self.body_timeout_s)
        check_content_type(request.headers.get('content-type'))
        payload = await run_in_threadpool(parse_json, body)
        del body  # frees the raw bytes before the frames are decoded
        profile = lookup_model(payload, self.catalogue)
        request.scope[MODEL_SCOPE_KEY] = profile.id
        decode_started = time.perf_counter()
        call = await run_in_threadpool(validate_act, payload, profile)
        return call, time.perf_counter() - decode_started

    async def _act(self, request: Request) -> JSONResponse:
        call, decode_s = await self._read_call(request)
        profile = call.profile
        self.warmth.admit(profile.id)
        seed = call.seed % 2 ** 64 if call.seed is not None else int(self._seeds.integers(2 ** 63))
        rng = np.random.default_rng(seed)
        self.warmth.begin(profile.id)
        try:
            async with self.gates[profile.id]:
                latency_s = self.latency.sample(profile)
                infer_started = time.perf_counter()
                inference = await self.backend.infer(profile, call.observation(),
                                                     self._options(call), rng)
                compute_s = time.perf_counter() - infer_started
                # The simulated latency is a floor: a slower plug-in is reported as it is.
                if latency_s > compute_s:
                    await asyncio.sleep(latency_s - compute_s)
        finally:
            self.warmth.end(profile.id)
        inference_ms = max(latency_s, compute_s) * 1000.0
        reply = self._reply(profile, call, inference.rows, call.warnings + inference.warnings,
                            inference_ms, inference_ms + decode_s * 1000.0)
        if call.prefix is not None:
            # The answer says which prefix it used, so a client can tell it was not ignored.
            if inference.honours_prefix:
                reply[REPORT_KEY] = call.prefix.report()
            else:
                reply['warnings'].append(f'{PREFIX_OPTION}: policy {self.backend.name} does not '
                                         'honour real-time-chunking prefixes; it was ignored')
        return JsonReply(reply)

    @staticmethod
    def _options(call: ActRequest) -> dict[str, Any]:
        options = dict(call.options, action_horizon=call.horizon, seed=call.seed)
        if call.prefix is not None:
            options.update(call.prefix.options())
        return options

    @staticmethod
    def _reply(profile: ModelProfile, call: ActRequest, rows: np.ndarray, warnings: list[str],
               inference_ms: float, ttfa_ms: float) -> dict[str, Any]:
        frames = len(call.images)
        return {
            'id': f'act_{uuid.uuid4().hex}',
            'model': profile.id,
            'action_chunk': {
                'steps': [{'index': i, 'values': row} for i, row in enumerate(rows.tolist())],
                'robot': profile.robot,
                'action_space': profile.action_space,
                'action_dim': profile.action_dim,
                'control_frequency_hz': profile.control_hz,
                'covers_seconds': len(rows) / profile.control_hz,
            },
            'perf': {'inference_ms': round(inference_ms, 3), 'ttfa_ms': round(ttfa_ms, 3)},
            # The local gateway has no tokenizer: token counts are 0, as the hosted one reports.
            'usage': {'observation_tokens': 0, 'action_tokens': 0, 'total_tokens': 0,
                      'frames_received': frames, 'frames_used': frames},
            'warnings': warnings,
        }

    def queue_snapshot(self) -> dict[str, dict[str, int]]:
        """Per model: calls running now, waiting now, and the most ever waiting."""
        return {model: {'in_flight': gate.holders, 'queued': gate.queued,
                        'max_queued': gate.max_queued}
                for model, gate in self.gates.items()}
