"""
The policy core that both wire fronts call: warm-up, the FIFO gate, latency and inference.

`/v1/act` (act.py) and the direct worker's `/act` (direct/worker.py) differ only in how a call
arrives and how its answer is written. Everything between (the cold start, first come first
served, the simulated latency floor, the backend and the seed) happens here, once, so a model
behaves alike whichever front a robot uses.
"""

import asyncio
from dataclasses import dataclass
import time
from typing import Any

import numpy as np

from .catalogue import Catalogue
from .fifo_gate import FifoGate
from .latency import LatencySampler
from .policy_backend import Inference, PolicyBackend
from .validation import ActRequest
from .warmth import Warmth


@dataclass(frozen=True)
class Served:
    """One inference as the core ran it: the checked answer and its (floored) duration in ms."""

    inference: Inference
    inference_ms: float


class PolicyCore:
    """Per-model warm-up, FIFO gates and the backend, for any front that calls a policy."""

    def __init__(self, catalogue: Catalogue, warmth: Warmth, latency: LatencySampler,
                 backend: PolicyBackend, concurrency: int, seed: int) -> None:
        self.catalogue = catalogue
        self.warmth = warmth
        self.latency = latency
        self.backend = backend
        self.gates = {p.id: FifoGate(concurrency) for p in catalogue.profiles}
        # Draws per-call seeds; used only on the event loop thread, so it needs no lock.
        self._seeds = np.random.default_rng(seed)

    async def run(self, call: ActRequest, options: dict[str, Any]) -> Served:
        """
        Run one validated call: WarmingUp while its model is cold, else its inference.

        The simulated latency is a floor: a slower plug-in is reported as it is.
        """
        profile = call.profile
        self.warmth.admit(profile.id)
        seed = call.seed % 2 ** 64 if call.seed is not None else int(self._seeds.integers(2 ** 63))
        rng = np.random.default_rng(seed)
        self.warmth.begin(profile.id)
        try:
            async with self.gates[profile.id]:
                latency_s = self.latency.sample(profile)
                started = time.perf_counter()
                inference = await self.backend.infer(profile, call.observation(), options, rng)
                compute_s = time.perf_counter() - started
                if latency_s > compute_s:
                    await asyncio.sleep(latency_s - compute_s)
        finally:
            self.warmth.end(profile.id)
        return Served(inference, max(latency_s, compute_s) * 1000.0)

    def queue_snapshot(self) -> dict[str, dict[str, int]]:
        """Per model: calls running now, waiting now, and the most ever waiting."""
        return {model: {'in_flight': gate.holders, 'queued': gate.queued,
                        'max_queued': gate.max_queued}
                for model, gate in self.gates.items()}
