"""
POST /v1/act: auth and credit, body, validation, warm-up, the FIFO queue, inference, reply.

Order of checks: 401, 402, 413 (or 408 for a stalled body), 415, 400, 404, 422, then 503
warming, so deterministic mistakes are reported before a cold model is woken. One unit of
credit is held from the 402 check and given back if the call fails in any way.
"""

import logging
import time
from typing import Any
import uuid

import numpy as np
from sequence_ai_ros.contract.rtc import PREFIX_OPTION, REPORT_KEY
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .body import check_content_type, read_body
from .catalogue import ModelProfile
from .core import PolicyCore
from .errors import ApiError, JsonReply
from .keys import KeyLedger
from .stats import MODEL_SCOPE_KEY
from .validation import ActRequest, lookup_model, parse_json, validate_act

LOG = logging.getLogger(__name__)


def action_chunk(profile: ModelProfile, rows: np.ndarray) -> dict[str, Any]:
    """Write `rows` as the robot-arm action chunk: both fronts answer a reference model so."""
    return {
        'steps': [{'index': i, 'values': row} for i, row in enumerate(rows.tolist())],
        'robot': profile.robot,
        'action_space': profile.action_space,
        'action_dim': profile.action_dim,
        'control_frequency_hz': profile.control_hz,
        'covers_seconds': len(rows) / profile.control_hz,
    }


class ActService:
    """The /v1/act endpoint: the v1 wire front of the policy core."""

    def __init__(self, core: PolicyCore, ledger: KeyLedger, max_body_bytes: int,
                 body_timeout_s: float = 30.0) -> None:
        self.core = core
        self.catalogue = core.catalogue
        self.ledger = ledger
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def handle(self, request: Request) -> Response:
        """Handle one POST /v1/act."""
        started = time.perf_counter()
        try:
            key = self.ledger.authenticate(request.headers.get('authorization'))
            with self.ledger.charging(key):
                response: Response = await self._act(request)
        except ApiError as error:
            response = error.response()
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
        served = await self.core.run(call, self._options(call))
        inference = served.inference
        reply = self._reply(profile, call, inference.rows, call.warnings + inference.warnings,
                            served.inference_ms, served.inference_ms + decode_s * 1000.0)
        if call.prefix is not None:
            # The answer says which prefix it used, so a client can tell it was not ignored.
            if inference.honours_prefix:
                reply[REPORT_KEY] = call.prefix.report()
            else:
                reply['warnings'].append(f'{PREFIX_OPTION}: policy {self.core.backend.name} does '
                                         'not honour real-time-chunking prefixes; it was ignored')
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
            'action_chunk': action_chunk(profile, rows),
            'perf': {'inference_ms': round(inference_ms, 3), 'ttfa_ms': round(ttfa_ms, 3)},
            # The local gateway has no tokenizer: token counts are 0, as the hosted one reports.
            'usage': {'observation_tokens': 0, 'action_tokens': 0, 'total_tokens': 0,
                      'frames_received': frames, 'frames_used': frames},
            'warnings': warnings,
        }
