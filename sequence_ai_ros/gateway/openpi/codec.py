"""
openpi's msgpack + numpy wire format, written with `msgpack` and `numpy` alone.

openpi-client pins numpy < 2, so its `msgpack_numpy` is not imported; its rules are ported
from Physical-Intelligence/openpi, main,
packages/openpi-client/src/openpi_client/msgpack_numpy.py (`pack_array`, `unpack_array`):

- an `ndarray` travels as the map `{b'__ndarray__': True, b'data': <C-order bytes>,
  b'dtype': dtype.str, b'shape': [dims]}`, a numpy scalar as `{b'__npgeneric__': True,
  b'data': <item>, b'dtype': dtype.str}` (bytes keys, so msgpack bin type);
- void, object and complex dtypes (kinds V, O, c) are refused, never pickled;
- the decoder also takes the str-keyed form of both maps, as openpi's `unpack_array` does.

Decoding is stricter than openpi's, because the other end is a network peer: the data must
be exactly shape x itemsize bytes, and the refused kinds are refused on the way in too.
"""

from typing import Any

import msgpack
import numpy as np

REFUSED_KINDS = frozenset('VOc')
_ARRAY = (b'__ndarray__', '__ndarray__')
_SCALAR = (b'__npgeneric__', '__npgeneric__')


class CodecError(ValueError):
    """Bytes that are not openpi's msgpack + numpy format, or a value it cannot carry."""


def _refuse(dtype: np.dtype) -> None:
    if dtype.kind in REFUSED_KINDS:
        raise CodecError(f'unsupported dtype {dtype.str} (openpi sends no void, object or '
                         'complex arrays)')


def _encode(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        _refuse(value.dtype)
    if isinstance(value, np.ndarray):
        return {b'__ndarray__': True, b'data': value.tobytes(), b'dtype': value.dtype.str,
                b'shape': list(value.shape)}
    if isinstance(value, np.generic):
        return {b'__npgeneric__': True, b'data': value.item(), b'dtype': value.dtype.str}
    raise TypeError(f'cannot send a {type(value).__name__} to an openpi server')


def _field(obj: dict[Any, Any], name: str) -> Any:
    for key in (name.encode(), name):
        if key in obj:
            return obj[key]
    raise CodecError(f'a numpy map without {name!r}')


def _decode(obj: dict[Any, Any]) -> Any:
    is_array, is_scalar = (any(k in obj for k in keys) for keys in (_ARRAY, _SCALAR))
    if not (is_array or is_scalar):
        return obj
    try:
        dtype = np.dtype(_field(obj, 'dtype'))
    except TypeError as exc:
        raise CodecError(f'bad dtype: {exc}') from None
    _refuse(dtype)
    data = _field(obj, 'data')
    if is_scalar:
        return dtype.type(data)
    shape = tuple(int(n) for n in _field(obj, 'shape'))
    if not isinstance(data, bytes) or any(n < 0 for n in shape):
        raise CodecError('an array map needs bytes data and a non-negative shape')
    if len(data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        raise CodecError(f'{len(data)} bytes cannot be a {dtype.str} array of shape {shape}')
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def packb(value: Any) -> bytes:
    """Encode a value (dicts, lists, numbers, strings, numpy arrays) as openpi does."""
    try:
        return msgpack.packb(value, default=_encode, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(str(exc)) from None


def unpackb(data: bytes) -> Any:
    """Decode openpi's bytes; numpy maps come back as (read-only) arrays and scalars."""
    try:
        return msgpack.unpackb(data, object_hook=_decode, raw=False)
    except CodecError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise CodecError(f'not msgpack: {exc}') from None
