"""The gateway's error responses: one exception per wire shape, and the JSON renderer."""

import json
import math
from typing import Any

from sequence_ai_ros.contract.key_masking import redact
from starlette.responses import JSONResponse


class JsonReply(JSONResponse):
    """
    A JSON response that renders any text, even a lone surrogate such as U+D800.

    JSON lets a request carry unpaired surrogates, and UTF-8 cannot encode them; Starlette's
    renderer would then fail with a 500. `backslashreplace` writes such a code point as the
    six-character JSON escape it arrived as (it can only occur inside a JSON string).
    """

    def render(self, content: Any) -> bytes:
        """Serialise `content` as compact UTF-8 JSON; NaN and Infinity are refused."""
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(',', ':'))
        return text.encode('utf-8', 'backslashreplace')


def shown(text: str, limit: int = 64) -> str:
    """Quote a piece of the caller's input for a message: redacted, repr-escaped, cut short."""
    return repr(redact(text[:limit])) + ('...' if len(text) > limit else '')


class ApiError(Exception):
    """An error answered as `{"detail": "<message>"}` with the given status."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        # Details may quote the caller's input or a plug-in's message: keys never go out.
        detail = redact(detail)
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        """Return the HTTP response for this error."""
        return JsonReply({'detail': self.detail}, self.status, headers=self.headers)


class WarmingUp(ApiError):
    """503 while a cold model loads: the only error whose detail is an object (openapi.json)."""

    def __init__(self, model: str, retry_after_s: float, job_id: str) -> None:
        super().__init__(503, f'model {model} is warming up; retry in {retry_after_s:.2f} s')
        self.retry_after_s = retry_after_s
        self.job_id = job_id
        # The header takes whole seconds; never 0, which would invite an immediate retry.
        self.headers = {'Retry-After': str(max(1, math.ceil(retry_after_s)))}

    def response(self) -> JSONResponse:
        """Return the 503 with the structured detail the published client reads."""
        detail = {
            'status': 'warming_up',
            'retry_after_s': round(self.retry_after_s, 3),
            'warming_job_id': self.job_id,
            'message': self.detail,
        }
        return JsonReply({'detail': detail}, 503, headers=self.headers)
