"""
A msgpack packer for observations: the worker's /observe reads msgpack (x-seq-msgpack/1).

Packing only, of what an observation holds (maps with string keys, lists, strings, bytes,
numbers, booleans, None), so the client core keeps httpx as its one dependency.
"""

import math
import struct
from typing import Any

MEDIA_TYPE = 'application/x-seq-msgpack'


def _header(size: int, fix: int | None, fix_max: int, codes: tuple[int, int, int]) -> bytes:
    if fix is not None and size <= fix_max:
        return bytes([fix | size])
    for code, fmt, limit in zip(codes, ('>B', '>H', '>I'), (0xFF, 0xFFFF, 0xFFFFFFFF)):
        if code and size <= limit:
            return bytes([code]) + struct.pack(fmt, size)
    raise ValueError(f'{size} items or bytes is too many for msgpack')


def _int(value: int) -> bytes:
    if 0 <= value <= 0x7F or -32 <= value < 0:
        return struct.pack('>b', value) if value < 0 else bytes([value])
    for code, fmt, low, high in ((0xD0, '>b', -2**7, 2**7), (0xD1, '>h', -2**15, 2**15),
                                 (0xD2, '>i', -2**31, 2**31), (0xD3, '>q', -2**63, 2**63)):
        if low <= value < high:
            return bytes([code]) + struct.pack(fmt, value)
    if value < 2**64:
        return b'\xcf' + struct.pack('>Q', value)
    raise ValueError(f'{value} does not fit in 64 bits')


def pack(value: Any) -> bytes:
    """Return `value` as msgpack; a non-finite float or another type raises ValueError."""
    out: list[bytes] = []
    _pack(value, out)
    return b''.join(out)


def _pack(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(b'\xc0')
    elif isinstance(value, bool):
        out.append(b'\xc3' if value else b'\xc2')
    elif isinstance(value, int):
        out.append(_int(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f'non-finite number {value!r}')
        out.append(b'\xcb' + struct.pack('>d', value))
    elif isinstance(value, str):
        data = value.encode('utf-8')
        out.extend((_header(len(data), 0xA0, 31, (0xD9, 0xDA, 0xDB)), data))
    elif isinstance(value, (bytes, bytearray)):
        out.extend((_header(len(value), None, 0, (0xC4, 0xC5, 0xC6)), bytes(value)))
    elif isinstance(value, (list, tuple)):
        out.append(_header(len(value), 0x90, 15, (0, 0xDC, 0xDD)))
        for item in value:
            _pack(item, out)
    elif isinstance(value, dict):
        out.append(_header(len(value), 0x80, 15, (0, 0xDE, 0xDF)))
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f'map keys must be strings, got {type(key).__name__}')
            _pack(key, out)
            _pack(item, out)
    else:
        raise ValueError(f'{type(value).__name__} cannot go in an observation')
