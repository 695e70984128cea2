"""The request-field checks every /v1/act refusal is built from: each names its field (422)."""

import math
from typing import Any

from .errors import ApiError


def invalid(detail: str) -> ApiError:
    """Return the 422 error for a request field, `detail` naming it."""
    return ApiError(422, detail)


def kind(value: Any) -> str:
    """Name what a JSON value is, for a message (never its content)."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value).replace('inf', 'Infinity').replace('nan', 'NaN')
    if isinstance(value, (int, float)):
        return 'a number'
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, list):
        return 'an array'
    return 'an object'


def number(value: Any, where: str) -> float:
    """Return a finite number, else a 422 naming `where`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(f'{where}: expected a finite number, got {kind(value)}')
    try:
        result = float(value)
    except OverflowError:  # an integer literal beyond float range
        result = math.inf if value > 0 else -math.inf
    if not math.isfinite(result):
        raise invalid(f'{where}: expected a finite number, got {kind(result)}')
    return result


def numbers(value: Any, where: str, count: int | None = None) -> list[float]:
    """Return a list of finite numbers, `count` of them if given; else a 422."""
    if not isinstance(value, list):
        wanted = f'{count} numbers' if count is not None else 'an array of numbers'
        raise invalid(f'{where}: expected {wanted}, got {kind(value)}')
    if count is not None and len(value) != count:
        raise invalid(f'{where}: expected {count} numbers, got {len(value)}')
    return [number(v, f'{where}[{i}]') for i, v in enumerate(value)]


def json_object(value: Any, where: str) -> dict[str, Any]:
    """Return a JSON object, else a 422 naming `where`."""
    if not isinstance(value, dict):
        raise invalid(f'{where}: expected an object, got {kind(value)}')
    return value


def int_option(value: Any, where: str, low: int, high: int | None) -> int:
    """Return an integer in [low, high] (no upper bound if None), else a 422."""
    in_range = f'between {low} and {high}' if high is not None else f'>= {low}'
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f'{where}: expected an integer {in_range}, got {kind(value)}')
    if value < low or (high is not None and value > high):
        shown = value if abs(value) < 10 ** 18 else 'a larger one'
        raise invalid(f'{where}: expected an integer {in_range}, got {shown}')
    return value
