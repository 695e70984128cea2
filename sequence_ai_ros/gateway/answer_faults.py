"""
Canned answers in place of the gateway's own, for fault rehearsals (local only).

`POST /v1/_local/faults` with `{"next": n, "status": 502, "body": "...", "content_type":
"application/json", "on": "act"}` answers the next n requests of that kind with the canned
answer instead of serving them: `act` is `/v1/act` and the direct worker's `/act`, `connect`
is `/v1/act/connect`. `body_base64` gives raw bytes instead of `body` (a malformed answer);
`content_type: null` sends none. `DELETE /v1/_local/faults` drops what is still armed.
A proxy in front of the gateway can do this to plain HTTP, never to the worker's pinned TLS:
hence here, beside the answers themselves. The request's body is read before the canned
answer is sent, so the connection stays open for the next request.
"""

import base64
import binascii
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
import threading
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import ApiError, JsonReply
from .validation import parse_json

# The requests each kind of fault stands in for, on the gateway's and the worker's listeners.
FRONTS = {'/v1/act': 'act', '/act': 'act', '/v1/act/connect': 'connect'}
KINDS = ('act', 'connect')
MAX_CANNED_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Canned:
    """One answer to send as it is."""

    status: int
    body: bytes
    content_type: str | None


class AnswerFaults:
    """The canned answers armed per kind of request, and how many were sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: dict[str, deque[Canned]] = {kind: deque() for kind in KINDS}
        self._sent = dict.fromkeys(KINDS, 0)

    def arm(self, kind: str, times: int, canned: Canned) -> None:
        """Answer the next `times` requests of `kind` with `canned`, after those armed before."""
        with self._lock:
            self._armed[kind].extend([canned] * times)

    def take(self, kind: str) -> Canned | None:
        """Return the next canned answer for a request of `kind`, or None to serve it."""
        with self._lock:
            if not self._armed[kind]:
                return None
            self._sent[kind] += 1
            return self._armed[kind].popleft()

    def clear(self) -> None:
        """Drop every answer still armed."""
        with self._lock:
            for armed in self._armed.values():
                armed.clear()

    def snapshot(self) -> dict[str, Any]:
        """Return {armed: {kind: n}, sent: {kind: n}} for the local stats."""
        with self._lock:
            return {'armed': {k: len(v) for k, v in self._armed.items()},
                    'sent': dict(self._sent)}


class CannedAnswers:
    """ASGI middleware: a request with a canned answer armed gets it, and is not served."""

    def __init__(self, app: ASGIApp, faults: AnswerFaults) -> None:
        self.app = app
        self.faults = faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the armed answer for this request, else pass it on."""
        kind = FRONTS.get(scope.get('path', '')) if scope['type'] == 'http' else None
        canned = self.faults.take(kind) if kind and scope.get('method') == 'POST' else None
        if canned is None:
            await self.app(scope, receive, send)
            return
        while (await receive()).get('more_body', False):
            pass  # read to its end: the kept-alive connection carries the next request
        headers = [(b'content-length', str(len(canned.body)).encode())]
        if canned.content_type is not None:
            headers.append((b'content-type', canned.content_type.encode('latin-1')))
        await send({'type': 'http.response.start', 'status': canned.status, 'headers': headers})
        await send({'type': 'http.response.body', 'body': canned.body})


def faults_route(faults: AnswerFaults) -> Callable[[Request], Awaitable[JSONResponse]]:
    """Return the handler of POST and DELETE /v1/_local/faults over `faults`."""
    async def local_faults(request: Request) -> JSONResponse:
        if request.method == 'DELETE':
            faults.clear()
            return JsonReply(faults.snapshot())
        try:
            kind, times, canned = _read_fault(parse_json(await request.body()))
        except ApiError as exc:
            return JsonReply({'detail': f'fault: {exc.detail}'}, 400)
        except ValueError as exc:
            return JsonReply({'detail': f'fault: {exc}'}, 400)
        faults.arm(kind, times, canned)
        return JsonReply(faults.snapshot())
    return local_faults


def _read_fault(payload: dict[str, Any]) -> tuple[str, int, Canned]:
    kind = payload.get('on', 'act')
    if kind not in KINDS:
        raise ValueError(f'on: one of {", ".join(KINDS)}')
    times, status = payload.get('next', 1), payload.get('status')
    if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= 1000:
        raise ValueError('next: a number of requests, 1-1000')
    if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status <= 599:
        raise ValueError('status: an HTTP status, 200-599')
    if 'body_base64' in payload:
        try:
            body = base64.b64decode(str(payload['body_base64']), validate=True)
        except binascii.Error as exc:
            raise ValueError(f'body_base64: {exc}') from None
    else:
        text = payload.get('body', '')
        if not isinstance(text, str):
            raise ValueError('body: a string (or body_base64 for raw bytes)')
        body = text.encode()
    if len(body) > MAX_CANNED_BYTES:
        raise ValueError(f'the body is over {MAX_CANNED_BYTES} bytes')
    content_type = payload.get('content_type', 'application/json')
    if content_type is not None and (not isinstance(content_type, str) or not content_type
                                     or not content_type.isascii()
                                     or not content_type.isprintable()):
        raise ValueError('content_type: a media type, or null for none')
    return kind, times, Canned(status, body, content_type)
