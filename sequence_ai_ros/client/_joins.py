"""
The joins: how a chunk that has arrived becomes the plan (docs/CHUNK_TIMING.md has the timing).

- whole: nothing plays yet (append), or predict() replaces the plan: the chunk is the plan.
- append: the chunk plays after the plan, every step.
- aligned: step i is due at capture + delay + i/hz; the steps whose time has passed are
  dropped and the old plan plays until the new one's first step. On absolute spaces the join
  may start a few steps earlier than its time says, at the step nearest the action it follows
  (a smaller seam; never less motion than the time-aligned join would have given).
- rtc: an answer that continues its prefix joins at the step that really plays next (the
  steps played since its prefix began are dropped), never blended unless it came late.

Each join reports what it did (JoinEvent: its kinds, the steps it dropped, its delay), which the
engine counts (EngineStats.count_join), so the counters add up
(test/unit/test_engine_properties.py).
"""

from collections import deque
from dataclasses import dataclass, field
import math

from ._nearest import nearest_index
from ._plan import PlannedStep, retime, timeline
from ._rtc import SentPrefix


@dataclass
class JoinEvent:
    """
    What one join did, for the engine to count.

    `kinds` are EngineStats.joins' names ('nearest' beside the join's own), `dropped` the steps
    it dropped, `delay_s` how far behind its capture it plays (None: not a timed join), and
    `rtc_late` an RTC answer that came after its prefix had run out.
    """

    kinds: list[str] = field(default_factory=list)
    dropped: int = 0
    delay_s: float | None = None
    rtc_late: bool = False


@dataclass
class JoinSite:
    """What a join sees of the engine (the plan, the playback grid, the last action) and does."""

    plan: 'deque[PlannedStep]'
    period: float
    last_values: list[float] | None
    absolute: bool  # the chunks' space is absolute: a nearer start may shrink the seam
    event: JoinEvent = field(default_factory=JoinEvent)

    def count(self, how: str) -> None:
        """Report one join of kind `how`."""
        self.event.kinds.append(how)

    def drop(self, steps: int) -> None:
        """Report `steps` dropped."""
        self.event.dropped += steps

    def play_from(self, steps: list[PlannedStep], first: int,
                  start: float) -> 'deque[PlannedStep]':
        """Play `steps` from index `first` on, one period apart from `start`; drop those before."""
        self.drop(first)
        return retime(steps[first:], start, self.period)

    def start_index(self, steps: list[PlannedStep], aligned: int,
                    reference: list[float] | None) -> int:
        """On absolute spaces the step nearest the action before, up to the aligned one."""
        if aligned <= 0 or reference is None or not self.absolute:
            return aligned
        nearest = nearest_index(steps[:aligned + 1], reference)
        if nearest < aligned:
            self.count('nearest')
        return nearest


def join_chunk(site: JoinSite, steps: list[PlannedStep], *, mode: str, replace: bool,
               capture: float, delay: float, now: float, sent: SentPrefix | None = None,
               played: int | None = None) -> 'deque[PlannedStep]':
    """
    Return the plan once `steps` are joined into `site.plan` by `mode` (the join in force).

    `sent` and `played` (PrefixBook.join_index) make it an RTC join whatever the mode has
    become meanwhile; `replace` makes the chunk the whole plan (predict()'s semantics).
    """
    if sent is not None and played is not None:
        return _join_rtc(site, steps, sent, played, now)
    if replace or not site.plan and mode == 'append':
        site.count('replaced' if replace else 'started')
        site.drop(len(site.plan))
        return deque(steps)
    if mode == 'append':
        site.count('appended')
        site.plan.extend(steps)
        return site.plan
    return _join_aligned(site, steps, capture + delay, delay, now)


def _join_aligned(site: JoinSite, steps: list[PlannedStep], base: float, delay: float,
                  now: float) -> 'deque[PlannedStep]':
    """Join with step i due at `base` + i periods (`delay` behind its capture)."""
    period = site.period
    if not site.plan:
        # Nothing is playing (first chunk, or after an underrun): the arm stands where the
        # last action left it, so the chunk plays from step 0 now (on an absolute space
        # from the step nearest that action, up to its time-aligned one).
        site.count('started')
        start = 0
        if site.last_values is not None and site.absolute:
            aligned = max(0, min(len(steps) - 1, math.floor((now - base) / period + 0.5)))
            start = site.start_index(steps, aligned, site.last_values)
        return site.play_from(steps, start, now)
    current = [s.index for s in steps if base + s.index * period >= now - 0.5 * period]
    if not current:
        site.count('past')
        site.drop(len(steps))
        return site.plan  # wholly in the past: it must not empty a plan that still runs
    first = current[0]
    due = base + first * period
    site.count('delayed' if delay > 0 else 'aligned')
    site.event.delay_s = delay
    # The old plan plays on until the new one's first step; what the driver's late ticks
    # left behind by more than a period is dropped here, not tick by tick: run() already
    # catches up on its own deadlines, and dropping as well would drain the plan early.
    keep, kept_end = [], now
    for step, step_due in timeline(site.plan, now, period):
        if step_due >= due - 0.5 * period:
            break
        if step_due >= now - period:
            keep.append(step)
            kept_end = step_due + period
    site.drop(len(site.plan) - len(keep))
    first = site.start_index(steps, first, keep[-1].values if keep else site.last_values)
    # A delayed join whose old plan ends first starts when it ends: no gap, and fresher.
    return deque(keep) + site.play_from(steps, first, min(due, kept_end))


def _join_rtc(site: JoinSite, steps: list[PlannedStep], sent: SentPrefix, played: int,
              now: float) -> 'deque[PlannedStep]':
    """
    Join an answer to a prefix at the step that plays next: drop the steps played since.

    The plan it replaces is dropped at once, as LeRobot's RTC queue does; its steps are the
    model's own continuation, never blended, unless it came late.
    """
    plan = site.plan
    if played >= len(steps):
        site.count('past')
        site.drop(len(steps))
        return plan
    site.count('rtc')
    # Later than its prefix ran out, the answer continues from a point the arm has passed:
    # a seam like any other, which the configured blend may ramp (absolute spaces).
    late = played > len(sent.rows)
    site.event.rtc_late = late
    for step in steps:
        step.rtc = not late
    # A delayed join: the plan's steps before the prefix play first, then the chunk.
    keep = [plan.popleft() for _ in range(min(-played, len(plan)))]
    site.event.delay_s = sent.skip * site.period
    site.drop(len(plan))
    start = now + len(keep) * site.period
    return deque(keep) + site.play_from(steps, max(0, played), start)
