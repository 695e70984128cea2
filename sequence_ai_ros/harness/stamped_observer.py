"""
A PolicyObserver noting the fate of every request, for loops whose actions carry stamps.

The load test and the fleet bench run many `Policy.run()` loops against one gateway and must
account for every request: sent, answered or failed, never lost. Each loop's observation
carries `<prefix> <loop> <seq>` as its instruction (`stamped_instruction` in stamped_actions);
the observer, passed to a plain Policy (`Policy(transport, model, observer=...)`), notes each
request on the thread that sends it and tells the loop's `SequenceCheck` how long each
answered chunk is, before any of its actions can play.
"""

import threading
import time

from sequence_ai_ros.client import Observation, PolicyObserver, Prediction
from sequence_ai_ros.harness.stamped_actions import read_instruction, SequenceCheck


class StampedObserver(PolicyObserver):
    """Each request's fate and round trip, by the sequence number its instruction carries."""

    def __init__(self, check: SequenceCheck, prefix: str) -> None:
        self.check = check
        self.prefix = prefix
        self.sent: set[int] = set()
        self.answered: set[int] = set()
        self.failed: set[int] = set()
        self.answered_at: dict[int, float] = {}
        # (wall seconds of the HTTP round trip, the server's own inference_ms) per answer
        self.timings: list[tuple[float, float | None]] = []
        self._lock = threading.Lock()

    def _seq(self, observation: Observation) -> int | None:
        # An observer must not raise: a request the loop did not stamp is left uncounted,
        # which the caller's sent-versus-requested tally shows.
        stamped = read_instruction(observation.instruction, self.prefix)
        return None if stamped is None else stamped[1]

    def request_sent(self, observation: Observation) -> None:
        """Note the request as sent."""
        seq = self._seq(observation)
        if seq is not None:
            with self._lock:
                self.sent.add(seq)

    def answer_received(self, observation: Observation, prediction: Prediction,
                        round_trip_s: float) -> None:
        """Note the answer, its chunk's length (for the check) and its timings."""
        seq = self._seq(observation)
        if seq is None:
            return
        inference = prediction.perf.get('inference_ms')
        with self._lock:
            self.check.lengths[seq] = len(prediction.action_chunk.steps)
            self.answered.add(seq)
            self.answered_at[seq] = time.monotonic()
            self.timings.append((round_trip_s, float(inference)
                                 if isinstance(inference, (int, float)) else None))

    def request_failed(self, observation: Observation, error: BaseException) -> None:
        """Note the request as failed."""
        seq = self._seq(observation)
        if seq is not None:
            with self._lock:
                self.failed.add(seq)

    def unresolved(self) -> set[int]:
        """Return the requests sent and neither answered nor failed (yet)."""
        with self._lock:
            return self.sent - self.answered - self.failed
