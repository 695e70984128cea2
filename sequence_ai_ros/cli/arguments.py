"""The command line's argument types: a value argparse can check, or a usage error saying why."""

import argparse
from collections.abc import Callable
import math
from typing import TypeVar

from sequence_ai_ros.client import DEFAULT_BASE_URL, tls_context

T = TypeVar('T', int, float)
# The help of the arguments more than one command takes.
BASE_URL_HELP = f'gateway URL (default: $SEQUENCES_BASE_URL, else {DEFAULT_BASE_URL})'
CA_FILE_HELP = ("trust only the CA certificates in this PEM file, instead of the system's, "
                "e.g. a gateway's self-signed certificate")


def checked(convert: Callable[[str], T], accept: Callable[[T], bool],
            expected: str) -> Callable[[str], T]:
    """Return an argparse type: `convert` the text, refused unless `accept` takes the value."""
    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f'expected {expected}, got {text!r}')
        return value
    return parse


def _above_zero(value: float) -> bool:
    return value > 0 and math.isfinite(value)


positive_int = checked(int, lambda value: value >= 1, 'a whole number >= 1')
positive = checked(float, _above_zero, 'a number > 0')
seconds = checked(float, _above_zero, 'a number of seconds > 0')
milliseconds = checked(float, lambda value: value >= 0 and math.isfinite(value),
                       'milliseconds >= 0')
kbps = checked(float, _above_zero, 'kilobits per second > 0')


def ca_file(text: str) -> str:
    """Return a usable CA file's path; a wrong one is a usage error, not a failed check later."""
    try:
        tls_context(text)
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f'cannot use {text!r} as a CA file: {exc}') from exc
    return text


def host_port(text: str) -> tuple[str, int]:
    """Return (host, port) from HOST:PORT (an IPv6 host may be bracketed)."""
    host, _, port = text.rpartition(':')
    try:
        number = int(port)
    except ValueError:
        number = 0
    if not host or not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f'expected HOST:PORT, e.g. 127.0.0.1:8765, got {text!r}')
    return host.strip('[]'), number
