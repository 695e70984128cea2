"""
Sessions, seats and leases: who may send acts to the worker, and for how long.

A robot's session (its client's uuid) takes a seat on a deployment at connect and holds it while
it keeps alive: a keepalive, a connect or an act within `seat_ttl_s` keeps it; a release, or
silence past `seat_ttl_s`, frees it. Each seated session has its own direct secret, valid at
the worker until its lease ends (`lease_ttl_s` after the last connect, which renews it with the
same secret and epoch). When every seat of a deployment is taken, a connect is refused `busy`
(429), or, with a line (`queue`), the session waits in it in arrival order (503 with its
`queue_position`) and takes the first seat freed when it asks next.

State is refreshed lazily on each look, so no background task is needed.
"""

from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
import hashlib
import hmac
import secrets
import threading
import time
from typing import Any

from sequence_ai_ros.contract.key_masking import mask_key

from .errors import DirectError

# The epoch rolls with the process: a gateway that restarted hands out another generation.
_EPOCH = int(time.time())


@dataclass
class Session:
    """One robot's seat on a deployment."""

    id: str  # noqa: A003 (the client's session uuid)
    model: str
    key: str | None = field(repr=False)
    secret: str = field(repr=False)
    secret_digest: bytes = field(repr=False)
    seated_at: float = 0.0
    kept_until: float = 0.0
    lease_until: float = 0.0
    acts: int = 0
    running: int = 0  # requests at the worker now: a seat in use does not expire
    episodes: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Seating:
    """What a connect hands the robot: its secret (kept on a renewal), its epoch and lease."""

    secret: str = field(repr=False)
    epoch: int
    lease_until: float


class SeatBook:
    """Seats per deployment, the line for them, and the direct secrets they carry."""

    def __init__(self, models: list[str], seats: int, seat_ttl_s: float, lease_ttl_s: float,
                 queue: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.seats = seats
        self.seat_ttl_s = seat_ttl_s
        self.lease_ttl_s = lease_ttl_s
        self.queue = queue
        self._clock = clock
        self._sessions: dict[str, dict[str, Session]] = {m: {} for m in models}
        # Per model: session -> when it last asked, in arrival order.
        self._lines: dict[str, OrderedDict[str, float]] = {m: OrderedDict() for m in models}
        self._secrets: dict[str, str] = {}  # secret digest (hex) -> session id
        self._freed = {m: {'released': 0, 'expired': 0} for m in models}
        self._lock = threading.Lock()

    # -- control plane ---------------------------------------------------------------------

    def connect(self, model: str, session: str, key: str | None) -> Seating:
        """Seat `session` (or renew its lease); DirectError busy or queued when none is free."""
        with self._lock:
            now = self._refresh(model)
            held = self._sessions[model].get(session)
            if held is not None:
                if held.key != key:
                    raise DirectError('forbidden', 'this session is held under another API key')
                held.kept_until = now + self.seat_ttl_s
                held.lease_until = now + self.lease_ttl_s
                return Seating(held.secret, _EPOCH, held.lease_until)
            self._wait_turn(model, session, now)
            secret = 'dsec_' + secrets.token_urlsafe(24)
            digest = _digest(secret)
            self._sessions[model][session] = Session(
                session, model, key, secret, digest, now, now + self.seat_ttl_s,
                now + self.lease_ttl_s)
            self._secrets[digest.hex()] = session
            return Seating(secret, _EPOCH, now + self.lease_ttl_s)

    def _wait_turn(self, model: str, session: str, now: float) -> None:
        line = self._lines[model]
        free = self.seats - len(self._sessions[model])
        if not self.queue:
            if free <= 0:
                raise DirectError('busy', f'every seat of {model} is taken ({self.seats}); '
                                          'try again when a robot releases one',
                                  retry_after_s=self.seat_ttl_s / 4,
                                  details={'seats': self.seats})
            return
        line.setdefault(session, now)
        line[session] = now
        position = list(line).index(session) + 1
        if position <= free:
            del line[session]
            return
        raise DirectError('queued', f'every seat of {model} is taken: this robot is number '
                                    f'{position} in line',
                          retry_after_s=max(0.05, self.seat_ttl_s / 8),
                          details={'queue_position': position, 'seats': self.seats})

    def keepalive(self, model: str, session: str) -> bool:
        """Keep the session's seat `seat_ttl_s` more; False when it holds none (gone, released)."""
        with self._lock:
            now = self._refresh(model)
            held = self._sessions[model].get(session)
            if held is not None:
                held.kept_until = now + self.seat_ttl_s
                return True
            if session in self._lines[model]:
                self._lines[model][session] = now
                return True
            return False

    def release(self, model: str, session: str) -> bool:
        """Free the session's seat (and its place in line); whether it held one."""
        with self._lock:
            self._refresh(model)
            self._lines[model].pop(session, None)
            held = self._sessions[model].pop(session, None)
            if held is None:
                return False
            self._secrets.pop(held.secret_digest.hex(), None)
            self._freed[model]['released'] += 1
            return True

    def place(self, model: str, session: str | None) -> dict[str, Any]:
        """Say where a ready poll's session stands: seated, free to sit, or its place in line."""
        with self._lock:
            now = self._refresh(model)
            if session is not None and session in self._sessions[model]:
                return {'seated': True}
            free = self.seats - len(self._sessions[model])
            if not self.queue or session is None:
                return {'seated': False, 'free': free > 0}
            line = self._lines[model]
            line.setdefault(session, now)
            position = list(line).index(session) + 1
            return {'seated': False, 'free': position <= free, 'queue_position': position}

    # -- worker ----------------------------------------------------------------------------

    def by_secret(self, secret: str) -> Session | None:
        """Return the live session a direct secret belongs to (its lease not ended), else None."""
        digest = _digest(secret)
        with self._lock:
            session_id = self._secrets.get(digest.hex())
            if session_id is None:
                return None
            for model, sessions in self._sessions.items():
                held = sessions.get(session_id)
                if held is not None and hmac.compare_digest(held.secret_digest, digest):
                    now = self._refresh(model)
                    if session_id in sessions and now < held.lease_until:
                        held.kept_until = max(held.kept_until, now + self.seat_ttl_s)
                        return held
            return None

    @contextmanager
    def using(self, session: Session) -> Iterator[None]:
        """Hold the session's seat for a worker request: kept `seat_ttl_s` from its end."""
        with self._lock:
            session.running += 1
        try:
            yield
        finally:
            with self._lock:
                session.running -= 1
                session.kept_until = max(session.kept_until, self._clock() + self.seat_ttl_s)

    # -- bookkeeping -----------------------------------------------------------------------

    def _refresh(self, model: str) -> float:
        """Drop seats whose keepalives stopped and line places no longer asked for; return now."""
        now = self._clock()
        sessions = self._sessions[model]
        for session_id in [s for s, held in sessions.items()
                           if now > held.kept_until and not held.running]:
            held = sessions.pop(session_id)
            self._secrets.pop(held.secret_digest.hex(), None)
            self._freed[model]['expired'] += 1
        line = self._lines[model]
        for session_id in [s for s, asked in line.items() if now - asked > self.seat_ttl_s]:
            del line[session_id]
        return now

    def snapshot(self) -> dict[str, Any]:
        """Per model: seats, who holds them (masked key, acts, episodes), the line, seats freed."""
        with self._lock:
            out = {}
            for model in self._sessions:
                now = self._refresh(model)
                keys: dict[str, str] = {}
                out[model] = {
                    'seats': self.seats,
                    'held': len(self._sessions[model]),
                    'sessions': [{
                        'session': held.id[:8],
                        'key': keys.setdefault(held.key, mask_key(held.key, len(keys) + 1))
                        if held.key else None,
                        'held_s': round(now - held.seated_at, 3),
                        'acts': held.acts, 'episodes': len(held.episodes)}
                        for held in self._sessions[model].values()],
                    'line': len(self._lines[model]),
                    **self._freed[model],
                }
            return out


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode('utf-8', 'surrogateescape')).digest()
