"""
Bodies on the direct routes: JSON or msgpack both ways, numpy arrays as msgpack-numpy maps.

A request says its body's format by Content-Type (`application/x-seq-msgpack`, else JSON) and
the answer it wants by Accept. In msgpack an array travels as the map msgpack-numpy writes,
`{b'nd': True, b'type': dtype.str, b'kind': b'', b'shape': [...], b'data': raw bytes}` (a
scalar with `b'nd': False`), which the sequence-ai client reads back as an array.
"""

from typing import Any

import msgpack  # type: ignore[import-untyped]
import numpy as np
from sequence_ai_ros.gateway.body import read_body
from sequence_ai_ros.gateway.errors import ApiError, JsonReply
from sequence_ai_ros.gateway.validation import parse_json
from starlette.requests import Request
from starlette.responses import Response

from .errors import DirectError, from_api_error

MSGPACK_TYPE = 'application/x-seq-msgpack'
MAX_DEPTH = 64


def pack(value: Any) -> bytes:
    """Return `value` as msgpack, numpy arrays and scalars as msgpack-numpy maps."""
    packed: bytes = msgpack.packb(value, default=_numpy_map, use_bin_type=True)
    return packed


def unpack(data: bytes) -> Any:
    """Read one msgpack value, msgpack-numpy maps back as arrays; DirectError 400 if unreadable."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, object_hook=_array_of,
                               max_bin_len=len(data), max_str_len=len(data))
    except (ValueError, TypeError, msgpack.ExtraData, msgpack.FormatError,
            msgpack.StackError) as exc:
        raise DirectError('invalid_request', f'body is not readable msgpack: {exc}') from None


def _numpy_map(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.dtype.kind == 'V':
            raise TypeError(f'a numpy array of dtype {value.dtype} is not carried')
        return {b'nd': True, b'type': value.dtype.str, b'kind': b'', b'shape': list(value.shape),
                b'data': np.ascontiguousarray(value).tobytes()}
    if isinstance(value, np.generic):
        return {b'nd': False, b'type': value.dtype.str, b'data': value.tobytes()}
    raise TypeError(f'cannot send a {type(value).__name__} as msgpack')


def _field(mapping: dict[Any, Any], name: str) -> Any:
    return mapping.get(name.encode(), mapping.get(name))


def _array_of(mapping: dict[Any, Any]) -> Any:
    nd = _field(mapping, 'nd')
    if nd is None or _field(mapping, 'type') is None or _field(mapping, 'data') is None:
        return mapping
    kind = _field(mapping, 'type')
    dtype = np.dtype(kind.decode('ascii') if isinstance(kind, bytes) else kind)
    if dtype.hasobject:
        raise ValueError('a numpy array of objects is not read')
    data = _field(mapping, 'data')
    if nd is False:
        return np.frombuffer(data, dtype=dtype, count=1)[0]
    shape = [int(d) for d in _field(mapping, 'shape') or []]
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def wants_msgpack(request: Request) -> bool:
    """Whether the caller asked for msgpack answers (Accept)."""
    return MSGPACK_TYPE in request.headers.get('accept', '')


async def read_payload(request: Request, limit: int, idle_timeout_s: float) -> Any:
    """Read the body as msgpack or JSON (by Content-Type); DirectError when unreadable."""
    try:
        body = await read_body(request, limit, idle_timeout_s)
        media = request.headers.get('content-type', '').split(';')[0].strip().lower()
        return unpack(bytes(body)) if media == MSGPACK_TYPE else parse_json(body)
    except ApiError as exc:  # 413, 408, 400 as the v1 front words them
        raise from_api_error(exc) from None


async def read_object(request: Request, limit: int, idle_timeout_s: float) -> dict[str, Any]:
    """Read the body (read_payload) and require an object; DirectError otherwise."""
    payload = await read_payload(request, limit, idle_timeout_s)
    if not isinstance(payload, dict):
        raise DirectError('invalid_request', 'the body must be an object')
    return payload


def answer(request: Request, value: dict[str, Any], headers: dict[str, str]) -> Response:
    """Answer `value` as msgpack when the caller asked for it, else as JSON."""
    if wants_msgpack(request):
        return Response(pack(value), 200, headers=headers, media_type=MSGPACK_TYPE)
    return JsonReply(_plain(value), 200, headers=headers)


def _plain(value: Any) -> Any:
    """Return `value` with arrays as lists, what JSON carries of them."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value
