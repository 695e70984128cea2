"""
A Policy that notes the fate of every request, for loops whose actions carry stamps.

The load test and the fleet bench run many `Policy.run()` loops against one gateway and must
account for every request: sent, answered or failed, never lost. Each loop's observation
carries `<prefix> <loop> <seq>` as its instruction (`stamped_instruction` in stamped_actions);
the policy notes
each request on the worker thread that sends it, and tells the loop's `SequenceCheck` how
long each answered chunk is, before any of its actions can play.
"""

import threading
import time
from typing import Any

from sequence_ai_ros.client.policy import Policy
from sequence_ai_ros.client.transport import Transport
from sequence_ai_ros.client.types import Observation, Prediction
from sequence_ai_ros.harness.stamped_actions import SequenceCheck


class StampedPolicy(Policy):
    """A Policy noting each request's fate and round trip, by its sequence number."""

    def __init__(self, transport: Transport, model: str, check: SequenceCheck) -> None:
        super().__init__(transport, model)
        self.check = check
        self.sent: set[int] = set()
        self.answered: set[int] = set()
        self.failed: set[int] = set()
        self.answered_at: dict[int, float] = {}
        # (wall seconds of the HTTP round trip, the server's own inference_ms) per answer
        self.timings: list[tuple[float, float | None]] = []
        self._lock = threading.Lock()

    def send(self, observation: Observation, options: dict[str, Any]) -> Prediction:
        """Send as Policy does, noting the request as sent, then answered or failed."""
        seq = int(observation.instruction.split()[2])  # <prefix> <loop> <seq>
        with self._lock:
            self.sent.add(seq)
        began = time.monotonic()
        try:
            prediction = super().send(observation, options)
        except BaseException:
            with self._lock:
                self.failed.add(seq)
            raise
        answered = time.monotonic()
        inference = prediction.perf.get('inference_ms')
        with self._lock:
            self.check.lengths[seq] = len(prediction.action_chunk.steps)
            self.answered.add(seq)
            self.answered_at[seq] = answered
            self.timings.append((answered - began, float(inference)
                                 if isinstance(inference, (int, float)) else None))
        return prediction

    def unresolved(self) -> set[int]:
        """Return the requests sent and neither answered nor failed (yet)."""
        with self._lock:
            return self.sent - self.answered - self.failed
