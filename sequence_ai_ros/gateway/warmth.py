"""
Cold, warming and warm workers: the state that turns a first call into 503 warming_up.

State is computed lazily from timestamps on each look, so no background task is needed:
a warming model becomes warm when its deadline passes, a warm one goes cold after it has
been idle (nothing in flight) for longer than `idle_cold_s`.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
import logging
import secrets
import time
from typing import Any

from .errors import WarmingUp

LOG = logging.getLogger(__name__)


@dataclass
class _Worker:
    cold_start_s: float
    state: str = 'cold'
    ready_at: float = 0.0
    last_active: float = 0.0
    job_id: str | None = None
    in_flight: int = 0
    warmups: int = 0


class Warmth:
    """Per-model worker state; times are wall seconds (already scaled)."""

    def __init__(self, cold_start_s: dict[str, float], idle_cold_s: float, start_warm: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._idle_cold_s = idle_cold_s
        now = clock()
        self._workers = {
            model: _Worker(seconds, 'warm' if start_warm else 'cold', last_active=now)
            for model, seconds in cold_start_s.items()
        }

    def _refresh(self, model: str, worker: _Worker, now: float) -> None:
        if worker.state == 'warming' and now >= worker.ready_at:
            worker.state, worker.last_active = 'warm', worker.ready_at
            LOG.info('%s is warm (job %s)', model, worker.job_id)
        if (worker.state == 'warm' and worker.in_flight == 0
                and now - worker.last_active > self._idle_cold_s):
            worker.state = 'cold'
            LOG.info('%s went cold after %.1f s idle', model, now - worker.last_active)

    def admit(self, model: str) -> None:
        """Let a call through if the model is warm; otherwise start warming and raise WarmingUp."""
        worker, now = self._workers[model], self._clock()
        self._refresh(model, worker, now)
        if worker.state == 'cold':
            worker.state, worker.ready_at = 'warming', now + worker.cold_start_s
            worker.job_id, worker.warmups = f'warm_{secrets.token_hex(8)}', worker.warmups + 1
            LOG.info('%s is cold: warming for %.2f s (job %s)',
                     model, worker.cold_start_s, worker.job_id)
        if worker.state == 'warming':
            assert worker.job_id is not None
            raise WarmingUp(model, worker.ready_at - now, worker.job_id)

    def begin(self, model: str) -> None:
        """Record that a call for `model` starts inference (keeps it from idling cold)."""
        worker = self._workers[model]
        worker.in_flight += 1
        worker.last_active = self._clock()

    def end(self, model: str) -> None:
        """Record that a call for `model` finished, whatever the outcome."""
        worker = self._workers[model]
        worker.in_flight -= 1
        worker.last_active = self._clock()

    def snapshot(self, models: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """Per model: state, seconds until warm, seconds idle, warm-ups started."""
        now = self._clock()
        out = {}
        for model in models if models is not None else self._workers:
            worker = self._workers[model]
            self._refresh(model, worker, now)
            out[model] = {
                'state': worker.state,
                'warm_in_s': max(0.0, worker.ready_at - now) if worker.state == 'warming' else 0.0,
                'idle_s': now - worker.last_active if worker.state == 'warm' else None,
                'warmups': worker.warmups,
            }
        return out
