"""
Seam blending: the ramp from the last action sent into a new chunk's first steps.

Only absolute spaces are blended (a blend of two rates is not a path between positions), and
never a chunk joined as the model's continuation of its prefix (RTC), whose seam is its own.
"""

from collections.abc import Iterable

from ._plan import PlannedStep


def blend_weight(i: int, n: int, blend: str) -> float:
    """
    Weight of the model's step i (0-based) in an n-step ramp out of the last action.

    Linear is the sequence-ai client's ramp (a velocity kink at both ends); min_jerk is
    10s^3 - 15s^4 + 6s^5, whose velocity and acceleration are zero at both ends.
    """
    s = (i + 1) / (n + 1)
    if blend == 'min_jerk':
        return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)
    return s


def blend_seam(first: PlannedStep, following: Iterable[PlannedStep], last: list[float],
               steps: int, blend: str) -> int:
    """
    Ramp `first` and the steps of its chunk after it out of `last`, over `steps` steps.

    Returns how many steps were blended.
    """
    ramp = [first] + [s for s in list(following)[:steps - 1] if s.chunk == first.chunk]
    for step in ramp:
        w = blend_weight(step.index - first.index, steps, blend)
        step.values = [(1.0 - w) * a + w * b for a, b in zip(last, step.raw, strict=False)]
    return len(ramp)
