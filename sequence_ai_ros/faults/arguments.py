"""What FaultProxy accepts from its caller: loopback addresses, ports, seconds and counts."""

import ipaddress
import math

_LOOPBACK_V4 = ipaddress.ip_network('127.0.0.0/8')
_LOOPBACK_V6 = ipaddress.ip_address('::1')


def is_loopback(host: str) -> bool:
    """Tell whether `host` is 127.0.0.0/8, ::1 or 'localhost' (no name is looked up)."""
    if host.lower() == 'localhost':
        return True
    try:
        address = ipaddress.ip_address(host[1:-1] if host.startswith('[') else host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address in _LOOPBACK_V4
    return address == _LOOPBACK_V6


def loopback(role: str, host: str) -> str:
    """Return `host` if it is loopback, else raise ValueError naming its `role`."""
    if not isinstance(host, str) or not is_loopback(host):
        raise ValueError(f'{role} address {host!r} is not loopback (127.0.0.0/8, ::1 or '
                         'localhost): FaultProxy only relays between local ports')
    return host


def port(value: int, name: str, minimum: int) -> int:
    """Return a TCP port number from `minimum` to 65535, else raise ValueError."""
    if whole_number(value, name, minimum) > 65535:
        raise ValueError(f'{name} must be <= 65535, got {value}')
    return value


def seconds(value: float, name: str) -> float:
    """Return `value` as a float if it is a finite number of seconds >= 0, else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value < 0:
        raise ValueError(f'{name} must be a finite number of seconds >= 0, got {value!r}')
    return float(value)


def whole_number(value: int, name: str, minimum: int = 1) -> int:
    """Return `value` if it is an int (not a bool) >= `minimum`, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f'{name} must be a whole number >= {minimum}, got {value!r}')
    return value


def bandwidth(value: float | None) -> float | None:
    """Return a bytes-per-second cap as a float, or None for no cap; raise if not > 0."""
    if value is not None and not (isinstance(value, (int, float)) and
                                  math.isfinite(value) and value > 0):
        raise ValueError(f'bandwidth_bytes_per_s must be > 0 or None, got {value!r}')
    return None if value is None else float(value)


def status_code(value: int) -> int:
    """Return an HTTP status code from 100 to 999, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 999:
        raise ValueError(f'status must be an HTTP status code, got {value!r}')
    return value
