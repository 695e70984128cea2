"""Derived from a recording: the actions played, where chunks join (seams), the underruns."""

from dataclasses import dataclass

# The types live in record/ (below the demo); here for the demo's and the benches' imports.
from sequence_ai_ros.record.episode_data import ARM_JOINTS, is_hold, Recording, Vector

__all__ = ['ARM_JOINTS', 'Recording', 'Seam', 'Vector', 'actions', 'is_hold', 'period',
           'seams', 'underruns']

# A gap this many control periods long between two commands is an underrun, not jitter.
GAP_PERIODS = 2.5


@dataclass(frozen=True)
class Seam:
    """Where one chunk took over from the one before: time, action index, largest joint jump."""

    time: float
    index: int
    jump: float


def actions(data: Recording) -> list[tuple[float, tuple[float, ...]]]:
    """Return the commands that moved the arm, holds left out, as (time, positions) pairs."""
    return [(t, p) for t, p, v in data.commands if not is_hold(v)]


def period(data: Recording) -> float | None:
    """Return the median time between consecutive actions, or None with fewer than two."""
    times = [t for t, _ in actions(data)]
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    return gaps[len(gaps) // 2] if gaps else None


def underruns(data: Recording) -> list[tuple[float, float]]:
    """Return the intervals without actions: from the hold (or missed tick) to the next action."""
    step = period(data)
    if step is None:
        return []
    spans = []
    for (t0, _, v0), (t1, _, _) in zip(data.commands, data.commands[1:]):
        if t1 - t0 > GAP_PERIODS * step:
            spans.append((t0 if is_hold(v0) else t0 + step, t1))
    return spans


def seams(data: Recording, join: str) -> list[Seam]:
    """Return where each chunk after the first started to play, and the arm joints' jump there."""
    # Append mode plays a chunk after the steps already queued; aligned mode lets it take over
    # at once (the steps whose time has passed are dropped).
    played = actions(data)
    found, start, steps = [], 0, 0
    for number, (_, event) in enumerate(data.chunks):
        before = int(event.get('actions_before', 0))
        begin = before if join == 'aligned' or number == 0 else max(before, start + steps)
        start, steps = begin, int(event.get('steps', 0))
        if number == 0 or not 0 < begin < len(played):
            continue
        arm = data.arm_joints
        jump = max(abs(a - b) for a, b in zip(played[begin][1][:arm], played[begin - 1][1][:arm]))
        found.append(Seam(played[begin][0], begin, jump))
    return found
