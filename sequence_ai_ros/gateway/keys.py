"""
API keys and their credit: loading, constant-time checks, and per-call accounting.

A key is never echoed: not in errors, logs or stats (stats show `mask_key(key, index)`).
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
import hashlib
import hmac
import os
from pathlib import Path
import threading

from sequence_ai_ros.contract.key_masking import KEY_PREFIX, mask_key

from .config import KEYS_ENV
from .errors import ApiError

_BEARER_HINT = "send 'Authorization: Bearer seq_...'"


ROBOT_PREFIX = 'seq_robot_'


def load_keys(keys_file: str | None = None,
              env: Mapping[str, str] | None = None) -> dict[str, int]:
    """
    Keys and credits from a file (`seq_xxx 100` per line, '#' comments) and the environment.

    The environment (`SEQUENCE_AI_ROS_GATEWAY_KEYS="seq_a=100,seq_b=5"`) wins over the file
    for a key in both. A robot key (`seq_robot_...`) also names the one deployment it may use:
    `seq_robot_arm1 100 pi05-droid`, `seq_robot_arm1=100@pi05-droid` (load_robot_keys). Raises
    ValueError naming the line or entry, never the key.
    """
    return {key: _credit(credit, where) for key, credit, _, where in _entries(keys_file, env)}


def load_robot_keys(keys_file: str | None = None,
                    env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return each robot key's deployment, from the same file and environment as load_keys."""
    return {key: scope for key, _, scope, _ in _entries(keys_file, env) if scope}


def _entries(keys_file: str | None,
             env: Mapping[str, str] | None) -> list[tuple[str, str, str | None, str]]:
    """Return (key, credit text, deployment of a robot key, where) per entry, env last."""
    entries = []
    if keys_file:
        text = Path(keys_file).read_text(encoding='utf-8')
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split('#', 1)[0].strip()
            if line:
                where = f'{keys_file}:{number}'
                parts = line.split()
                robot = parts[0].startswith(ROBOT_PREFIX)
                if len(parts) != 2 + robot:
                    raise ValueError(f'{where}: expected "<key> <credit>"' + (
                        ' and, for a robot key, its deployment' if robot else ''))
                entries.append((_check_key(parts[0], where), parts[1],
                                parts[2] if robot else None, where))
        if not entries:
            raise ValueError(f'{keys_file}: no keys (every line empty or a comment)')
    spec = (os.environ if env is None else env).get(KEYS_ENV, '')
    for number, item in enumerate(filter(None, (s.strip() for s in spec.split(','))), 1):
        where = f'{KEYS_ENV} entry {number}'
        key, sep, credit = item.partition('=')
        if not sep:
            raise ValueError(f'{where}: expected "<key>=<credit>"')
        key = _check_key(key.strip(), where)
        credit, _, scope = credit.partition('@')
        if key.startswith(ROBOT_PREFIX) != bool(scope.strip()):
            raise ValueError(f'{where}: a robot key (and only one) names its deployment: '
                             '"seq_robot_...=<credit>@<deployment>"')
        entries.append((key, credit.strip(), scope.strip() or None, where))
    return entries


def _check_key(key: str, where: str) -> str:
    if not key.startswith(KEY_PREFIX) or len(key) <= len(KEY_PREFIX):
        raise ValueError(f'{where}: a key must start with {KEY_PREFIX!r} and have more after it')
    return key


def _credit(text: str, where: str) -> int:
    try:
        credit = int(text)
    except ValueError:
        credit = -1
    if credit < 0:
        raise ValueError(f'{where}: credit must be a whole number >= 0')
    return credit


@dataclass
class Reservation:
    """One unit of credit held for a call in progress; committed on success, else refunded."""

    key: str | None
    settled: bool = False


class KeyLedger:
    """Authenticates bearer tokens and keeps each key's remaining credit."""

    def __init__(self, keys: Mapping[str, int],
                 robot_keys: Mapping[str, str] | None = None) -> None:
        self._keys = list(keys)
        self._deployment_of = dict(robot_keys or {})
        self._digests = [hashlib.sha256(k.encode()).digest() for k in self._keys]
        self._credit = dict(keys)
        self._acts = dict.fromkeys(self._keys, 0)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether any key is configured; without keys every call is accepted."""
        return bool(self._keys)

    def authenticate(self, authorization: str | None) -> str | None:
        """
        Return the configured key an Authorization header carries, else raise ApiError(401).

        Returns None when auth is disabled.
        """
        if not self.enabled:
            return None
        if not authorization:
            raise _unauthorized(f'missing API key: {_BEARER_HINT}')
        scheme, _, token = authorization.strip().partition(' ')
        token = token.strip()
        if scheme.lower() != 'bearer' or not token or ' ' in token:
            raise _unauthorized(f'malformed Authorization header: {_BEARER_HINT}')
        # Digests make the comparison independent of length; every key is compared, no early exit.
        digest = hashlib.sha256(token.encode('utf-8', 'surrogateescape')).digest()
        found = None
        for key, known in zip(self._keys, self._digests, strict=True):
            if hmac.compare_digest(digest, known):
                found = key
        if found is None:
            raise _unauthorized('invalid API key')
        return found

    def check_deployment(self, key: str | None, deployment: str) -> None:
        """Refuse (ApiError 403) a robot key used for a deployment other than its own."""
        own = self._deployment_of.get(key) if key is not None else None
        if own is not None and own != deployment:
            raise ApiError(403, f'this robot key may use {own} only, not {deployment}')

    def reserve(self, key: str | None) -> Reservation:
        """Hold one unit of the key's credit, else ApiError(402)."""
        if key is None:
            return Reservation(None)
        with self._lock:
            if self._credit[key] <= 0:
                used = self._acts[key]
                raise ApiError(402, f'out of credit: this key has no calls left ({used} used)')
            self._credit[key] -= 1
        return Reservation(key)

    @contextmanager
    def charging(self, key: str | None) -> Iterator[None]:
        """Hold one unit of credit (else ApiError 402) for the block: charged if it completes."""
        reservation = self.reserve(key)
        try:
            yield
        except BaseException:
            self.refund(reservation)
            raise
        self.commit(reservation)

    def commit(self, reservation: Reservation) -> None:
        """Charge the held unit: the call succeeded."""
        self._settle(reservation, self._acts)

    def refund(self, reservation: Reservation) -> None:
        """Give the held unit back: failed calls are free."""
        self._settle(reservation, self._credit)

    def _settle(self, reservation: Reservation, tally: dict[str, int]) -> None:
        # Once only: a reservation is either charged or refunded, never both nor twice.
        if reservation.settled:
            return
        reservation.settled = True
        if reservation.key is not None:
            with self._lock:
                tally[reservation.key] += 1

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Per masked key: successful acts and credit left."""
        with self._lock:
            return {mask_key(k, i): {'acts': self._acts[k], 'credit_left': self._credit[k]}
                    for i, k in enumerate(self._keys, 1)}


def _unauthorized(detail: str) -> ApiError:
    return ApiError(401, detail, {'WWW-Authenticate': 'Bearer realm="sequence-ai-ros"'})
