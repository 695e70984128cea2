"""
Reading a request body: never more than the size limit, never waiting forever, JSON only.

- 413 once the body is known to exceed the limit (from Content-Length, or while streaming).
- 408 when no byte of the body arrives for `idle_timeout_s` (a Content-Length that promises
  more than is sent, a stalled upload): the connection is not held open indefinitely.
- 415 for a Content-Type that says the body is not JSON, or not UTF-8 JSON. A request with no
  Content-Type at all is read as JSON.
"""

import asyncio
from collections.abc import AsyncIterator

from starlette.requests import ClientDisconnect, Request

from .errors import ApiError, shown

_JSON_TYPE = 'application/json'


def _too_large(limit: int, what: str) -> ApiError:
    # The rest of the body is never read, so the connection cannot be reused.
    return ApiError(413, f'request body {what} the limit of {limit} bytes (max_body_bytes); '
                         'send smaller frames (224x224 JPEG at quality 90-95 is what the models '
                         'read)', {'Connection': 'close'})


async def _next_chunk(chunks: AsyncIterator[bytes]) -> bytes:
    return await chunks.__anext__()


async def read_body(request: Request, limit: int, idle_timeout_s: float) -> bytearray:
    """
    Read the whole body, or raise ApiError: 413 over `limit` bytes, 408 when it stalls.

    A client that disconnects mid-body gets ApiError 400, which nobody receives but which
    keeps the stats and the log free of a server-error traceback.
    """
    declared = request.headers.get('content-length')
    size: int | None = None
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, 'Content-Length header is not a number') from None
        if size > limit:
            raise _too_large(limit, f'of {size} bytes exceeds')
    received = bytearray()
    chunks = request.stream()
    try:
        while True:
            try:
                chunk = await asyncio.wait_for(_next_chunk(chunks), idle_timeout_s)
            except StopAsyncIteration:
                break
            received += chunk
            if len(received) > limit:
                raise _too_large(limit, 'exceeds')
    except asyncio.TimeoutError:
        expected = f' of the {size} announced by Content-Length' if size is not None else ''
        raise ApiError(408, f'request body stalled: {len(received)} bytes{expected} arrived, '
                            f'then nothing for {idle_timeout_s:g} s (body_timeout_s)',
                       {'Connection': 'close'}) from None
    except ClientDisconnect:
        raise ApiError(400, f'client disconnected after {len(received)} bytes of the request '
                            'body') from None
    finally:
        await chunks.aclose()
    return received  # not copied to bytes: that would hold the body twice


def check_content_type(value: str | None) -> None:
    """Accept JSON (`application/json`, `application/*+json`, or no type), else ApiError 415."""
    if value is None:
        return
    media_type, *params = (part.strip() for part in value.split(';'))
    media_type = media_type.lower()
    if media_type != _JSON_TYPE and not (media_type.startswith('application/')
                                         and media_type.endswith('+json')):
        raise ApiError(415, f'Content-Type: expected {_JSON_TYPE}, got {shown(value)} (with '
                            "curl, add -H 'Content-Type: application/json')")
    for param in params:
        name, _, charset = param.partition('=')
        if name.strip().lower() == 'charset' and \
                charset.strip().strip('"').lower() not in ('utf-8', 'utf8'):
            raise ApiError(415, f'Content-Type: the body must be UTF-8 JSON, got charset '
                                f'{shown(charset.strip())}')
