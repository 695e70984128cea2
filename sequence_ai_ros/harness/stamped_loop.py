"""
One numbered control loop on a Policy of its own, for the load test and the fleet bench.

Each request's observation carries `<prefix> <loop> <seq>` as its instruction, the loop's
StampedObserver notes every request's fate and its SequenceCheck checks what was executed.
The two callers differ in how they run the loop and report it; this is what they share.
"""

from collections.abc import Sequence

from sequence_ai_ros.client import (
    full_model_id,
    ImageFrame,
    Observation,
    Policy,
    Proprioception,
    Transport,
)
from sequence_ai_ros.harness.stamped_actions import SequenceCheck, stamped_instruction
from sequence_ai_ros.harness.stamped_observer import StampedObserver
from sequence_ai_ros.world import arm_model


class StampedLoop:
    """A Policy whose requests are numbered in order and whose actions are checked in order."""

    def __init__(self, number: int, transport: Transport, model: str,
                 frames: Sequence[ImageFrame], prefix: str) -> None:
        self.number = number
        self.frames = list(frames)
        self.prefix = prefix
        self.check = SequenceCheck(number)
        self.stamps = StampedObserver(self.check, prefix)
        self.policy = Policy(transport, full_model_id(model), observer=self.stamps)
        self.requested = 0

    def observe(self) -> Observation:
        """Return the observation of the next request (the arm at home), numbered in order."""
        seq = self.requested
        self.requested += 1
        return Observation(
            images=self.frames,
            proprioception=Proprioception(
                joint_positions=[float(v) for v in arm_model.HOME], gripper=0.0),
            instruction=stamped_instruction(self.prefix, self.number, seq))

    def unplayed(self, landed_before: float | None = None) -> set[int]:
        """
        Return the chunks answered and never executed, older than the newest one executed.

        The run's last answers may land after it stopped: they are not counted, nor, given
        `landed_before` (a monotonic time), those that landed from then on.
        """
        newest = max(self.check.played, default=-1)
        landed = self.stamps.answered_at
        return {s for s in self.stamps.answered - set(self.check.played) if s < newest
                and (landed_before is None or landed[s] < landed_before)}
