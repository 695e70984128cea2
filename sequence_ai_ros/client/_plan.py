"""
The plan a ChunkEngine plays: its steps, and when each of them is due.

A step keeps the model's own numbers (`raw`) beside what is sent (`values`, blended at a seam),
so a seam is always measured on what the model said.
"""

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from ._rtc import SentPrefix
from ._types import ActionChunk


@dataclass
class PlannedStep:
    """One action of the plan: what to send, what the model said, and where it came from."""

    values: list[float]
    raw: list[float]
    chunk: int
    index: int
    capture_time: float
    due: float | None = None
    rtc: bool = False  # joined as the model's continuation of a prefix: never blended


@dataclass
class Arrival:
    """A chunk in hand, with what its join needs: when it was asked for and when it came."""

    chunk: ActionChunk
    capture: float
    time: float
    server_ms: float | None
    prefix: SentPrefix | None = None

    def steps(self, ticket: int) -> list[PlannedStep]:
        """Return the chunk as planned steps of request `ticket`, not yet due."""
        return [PlannedStep(list(v), list(v), ticket, i, self.capture)
                for i, v in enumerate(self.chunk.steps)]


def gap(step: PlannedStep, reference: list[float]) -> float:
    """Return the largest per-dimension gap between the model's own step and `reference`."""
    return max(abs(a - b) for a, b in zip(step.raw, reference, strict=False))


def retime(steps: list[PlannedStep], start: float, period: float) -> 'deque[PlannedStep]':
    """Make `steps` due one period apart from `start`, as a plan."""
    for step in steps:
        step.due = start + (step.index - steps[0].index) * period
    return deque(steps)


def timeline(plan: 'deque[PlannedStep]', now: float,
             period: float) -> Iterator[tuple[PlannedStep, float]]:
    """Yield the plan's steps with when each will play (appended steps follow in turn)."""
    due = now - period
    for step in plan:
        due = step.due if step.due is not None else due + period
        yield step, due
