"""
The service's coded error body -> the project's typed error: the one place a code picks a class.

The body is `{detail, code, retryable, retry_after_s, request_id, hint, details}`. The code
picks the class through the contract's table (contract/error_codes.py, shared with the
local gateway); a body without a code falls back to its status, as an older server or a proxy
answers. Every field rides along on the error.
"""

from collections.abc import Mapping
import math
from typing import Any

from sequence_ai_ros.contract.error_codes import code_for_status, CODES, REASONS, spec_of

from ._errors import (
    AuthError,
    Conflict,
    EpisodeLost,
    Gone,
    InternalError,
    InvalidRequest,
    NotFound,
    OutOfCredit,
    PermissionDenied,
    PolicyError,
    SequencesError,
    Unavailable,
)

_CLASSES: dict[str, type[SequencesError]] = {
    'InvalidRequest': InvalidRequest, 'AuthError': AuthError,
    'PermissionDenied': PermissionDenied, 'OutOfCredit': OutOfCredit, 'NotFound': NotFound,
    'Conflict': Conflict, 'Gone': Gone, 'Unavailable': Unavailable, 'PolicyError': PolicyError,
    'InternalError': InternalError,
}


def number(raw: Any) -> float | None:
    """Return a finite, non-negative number from a body or header value, else None."""
    if isinstance(raw, bool):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def has_code(body: Any) -> bool:
    """Tell whether an error body speaks the coded form (a known `code` at the top level)."""
    return isinstance(body, dict) and body.get('code') in CODES


def error_from_body(status: int, body: Any, *, text: str = '',
                    headers: Mapping[str, str] | None = None) -> SequencesError:
    """Build the typed error for one non-2xx answer of the direct protocol (or a bare status)."""
    fields: dict[str, Any] = body if isinstance(body, dict) else {}
    found = fields.get('details')
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    warming = fields.get('status') == 'warming_up'
    code = fields.get('code') if fields.get('code') in CODES else None
    if code is None:
        reason = details.get('reason')
        code = REASONS.get(reason) if isinstance(reason, str) and reason in REASONS else None
    if code is None:
        code = 'warming' if warming else code_for_status(status)
    retry_after = number(fields.get('retry_after_s'))
    if retry_after is None and headers is not None:
        retry_after = number(headers.get('Retry-After'))
    request_id = fields.get('request_id') or \
        (headers.get('X-Seq-Request-Id') if headers is not None else None)
    detail = fields.get('detail')
    message = str(detail if isinstance(detail, str) and detail else
                  fields.get('message') or f'HTTP {status}')
    retryable = fields.get('retryable')
    common: dict[str, Any] = {
        'status': status, 'body': text[:4000] or None, 'code': code,
        'retryable': retryable if isinstance(retryable, bool) else spec_of(code).retryable,
        'retry_after_s': retry_after, 'request_id': str(request_id) if request_id else None,
        'hint': fields.get('hint') if isinstance(fields.get('hint'), str) else None,
        'details': details}
    if details.get('reason') == 'episode_lost':
        return EpisodeLost(message, **common)
    kind = _CLASSES.get(spec_of(code).kind, SequencesError)
    if kind is Unavailable:
        job = details.get('job_id')
        return Unavailable(message, warming=warming or code == 'warming',
                           job_id=job if isinstance(job, str) else None, **common)
    return kind(message, **common)
