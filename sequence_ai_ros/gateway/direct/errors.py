"""
The direct protocol's error answers: one body on every route, from the code table.

`{detail, code, retryable, retry_after_s, request_id, hint, details}`, its status and
retryability read from sequence_ai_ros.contract.error_codes, never chosen here. A refusal the
v1 front would make (ApiError: a bad observation, a 402) keeps its message and takes the code
its status stands for; a cold model's WarmingUp becomes `warming` with the start's deadline.
"""

from collections.abc import Awaitable
import math
import secrets
from typing import Any

from sequence_ai_ros.contract.error_codes import code_for_status, CODES, REASONS, spec_of
from sequence_ai_ros.contract.key_masking import redact
from sequence_ai_ros.gateway.errors import ApiError, JsonReply, WarmingUp
from starlette.requests import Request
from starlette.responses import Response

REQUEST_ID_HEADER = 'X-Seq-Request-Id'


class DirectError(Exception):
    """One refusal on a direct route; `code` is a table code or a reason (details.reason)."""

    def __init__(self, code: str, detail: str, *, details: dict[str, Any] | None = None,
                 retry_after_s: float | None = None, hint: str | None = None) -> None:
        detail = redact(detail)
        super().__init__(detail)
        self.details = dict(details or {})
        if code in REASONS:
            self.details.setdefault('reason', code)
            code = REASONS[code]
        if code not in CODES:
            raise ValueError(f'unknown error code {code!r}')
        self.code = code
        self.detail = detail
        self.retry_after_s = retry_after_s
        self.hint = hint

    @property
    def status(self) -> int:
        """Return the HTTP status the code table gives this error's code."""
        return spec_of(self.code).status

    def body(self, request_id: str) -> dict[str, Any]:
        """Return the error body, as every direct route answers it."""
        retry = None if self.retry_after_s is None else round(max(0.0, self.retry_after_s), 3)
        return {'detail': self.detail, 'code': self.code,
                'retryable': spec_of(self.code).retryable, 'retry_after_s': retry,
                'request_id': request_id, 'hint': self.hint, 'details': self.details}

    def response(self, request: Request | None = None,
                 headers: dict[str, str] | None = None) -> Response:
        """Return the JSON answer, with Retry-After (whole seconds, never 0) for a wait."""
        out = dict(headers or {})
        if self.retry_after_s is not None:
            out['Retry-After'] = str(max(1, math.ceil(self.retry_after_s)))
        rid = request_id_of(request)
        out[REQUEST_ID_HEADER] = rid
        return JsonReply(self.body(rid), self.status, headers=out)


def request_id_of(request: Request | None) -> str:
    """Return the caller's correlation id (X-Seq-Request-Id), else a new one."""
    given = request.headers.get(REQUEST_ID_HEADER) if request is not None else None
    if given and len(given) <= 64 and given.isprintable():
        return given
    return f'r-{secrets.token_hex(4)}'


def warming(error: WarmingUp, cold_start_s: float) -> DirectError:
    """Return a cold model's refusal: `warming`, when to ask again and the start's deadline."""
    # The start is given its own length again past its expected end before a client gives up.
    deadline = error.retry_after_s + max(cold_start_s, 1.0)
    return DirectError('warming', error.detail, retry_after_s=error.retry_after_s,
                       details={'job_id': error.job_id, 'stage': 'loading',
                                'start_deadline_in_s': round(deadline, 3)})


def from_api_error(error: ApiError) -> DirectError:
    """Return the v1 front's refusal in the direct protocol's words (its status -> its code)."""
    return DirectError(code_for_status(error.status), error.detail)


async def answered(request: Request, call: Awaitable[Response]) -> Response:
    """Await a direct route's answer; its refusal (DirectError, or the v1 ApiError) as a body."""
    try:
        return await call
    except ApiError as error:
        return from_api_error(error).response(request, error.headers)
    except DirectError as error:
        return error.response(request)
