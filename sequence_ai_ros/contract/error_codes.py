"""
The direct protocol's error codes: the status each is answered with, whether a retry may help.

One table for both sides: the local gateway answers every direct-protocol error from it, and
the project's client maps a body's `code` (or, when a body has none, its status) back through
it. Standard library only.

The body every direct route answers an error with is
`{detail, code, retryable, retry_after_s, request_id, hint, details}`; `detail` is a string,
`details` an object of machine-readable facts (for example `from` for `frames_missing`).
"""

from typing import NamedTuple


class CodeSpec(NamedTuple):
    """What a code means on the wire: its status, whether a retry may succeed, its error kind."""

    status: int
    retryable: bool
    # The sequence-ai client's exception class for this code; the project's client names its
    # own classes after these.
    kind: str


CODES: dict[str, CodeSpec] = {
    'invalid_request': CodeSpec(400, False, 'InvalidRequest'),
    'payload_too_large': CodeSpec(413, False, 'InvalidRequest'),
    'unauthenticated': CodeSpec(401, False, 'AuthError'),
    'forbidden': CodeSpec(403, False, 'PermissionDenied'),
    'insufficient_credit': CodeSpec(402, False, 'OutOfCredit'),
    'budget_exhausted': CodeSpec(402, False, 'OutOfCredit'),
    'not_found': CodeSpec(404, False, 'NotFound'),
    'conflict': CodeSpec(409, False, 'Conflict'),
    'gone': CodeSpec(410, False, 'Gone'),
    'busy': CodeSpec(429, True, 'Unavailable'),
    'warming': CodeSpec(503, True, 'Unavailable'),
    'unavailable': CodeSpec(503, True, 'Unavailable'),
    'upstream_error': CodeSpec(502, True, 'Unavailable'),
    'timeout': CodeSpec(504, True, 'Unavailable'),
    'policy_error': CodeSpec(500, False, 'PolicyError'),
    'internal': CodeSpec(500, False, 'InternalError'),
    'dependency_missing': CodeSpec(424, False, 'InternalError'),
}

# Reasons that refine a code: what the client does differs, the code (and status) does not.
# They travel as `details.reason` and, for the worker's 409s and 503s, as the error's code
# family below.
REASONS: dict[str, str] = {
    'episode_lost': 'conflict',
    'frames_missing': 'conflict',
    'frames_over_limit': 'conflict',
    'draining': 'unavailable',
    'queued': 'unavailable',
    'no_place': 'busy',
    'act_still_running': 'timeout',
}

_CODE_OF_STATUS: dict[int, str] = {
    400: 'invalid_request', 401: 'unauthenticated', 402: 'insufficient_credit',
    403: 'forbidden', 404: 'not_found', 405: 'invalid_request', 409: 'conflict', 410: 'gone',
    413: 'payload_too_large', 415: 'invalid_request', 422: 'invalid_request',
    424: 'dependency_missing', 429: 'busy', 500: 'internal', 502: 'upstream_error',
    503: 'unavailable', 504: 'timeout',
}


def spec_of(code: str) -> CodeSpec:
    """Look up `code` (a reason as its code); an unknown code is `internal`."""
    return CODES.get(REASONS.get(code, code), CODES['internal'])


def code_for_status(status: int) -> str:
    """Name the code a bare status stands for: its entry, else invalid_request for a 4xx."""
    if status in _CODE_OF_STATUS:
        return _CODE_OF_STATUS[status]
    return 'invalid_request' if 400 <= status < 500 else 'internal'


def is_retryable(code: str) -> bool:
    """Tell whether a request refused with this code may succeed when sent again unchanged."""
    return spec_of(code).retryable
