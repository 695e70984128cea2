"""The nearest-step search: where an absolute plan passes closest to the arm."""

import math

from ._plan import gap, PlannedStep


def nearest_index(steps: list[PlannedStep], reference: list[float]) -> int:
    """
    Return the index of the step nearest `reference` (largest per-dimension gap), later on ties.

    An absolute plan is a path: where the arm has not gone as far as the new plan assumed by
    now (it was slowing into the previous goal, say), joining at the time-aligned step would
    jump ahead along the path; joining where the path passes nearest the arm does not. Steps
    of another dimension than `reference` give the last step (no search).
    """
    best, best_jump = steps[-1].index, math.inf
    for step in reversed(steps):
        if len(step.raw) != len(reference):
            return steps[-1].index
        jump = gap(step, reference)
        if jump < best_jump:
            best, best_jump = step.index, jump
    return best
