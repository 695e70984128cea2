"""
Real-time chunking (RTC) over the wire: the prefix a request carries, and how its answer joins.

While one chunk plays, the request for the next carries the actions that will still play
during the inference delay d (the frozen prefix, in the model's own action space), and the
model returns a chunk that starts with them and continues from where they end (Black,
Galliker, Levine 2025). The join is then the model's own continuous motion, in any space.

The rules, ported from LeRobot's in-process RTC (huggingface/lerobot, main):
- d is the delay in control steps of a high latency quantile, rounded up
  (examples/rtc/eval_with_real_robot.py, get_actions: `inference_delay =
  math.ceil(latency_tracker.max() / time_per_chunk)`); here the prefetch trigger's planning
  latency plus the one period the trigger leaves for the answer to be collected.
- On arrival the new chunk replaces the plan and its first steps are dropped, as many as
  really played since the observation, never an estimate of them
  (src/lerobot/policies/rtc/action_queue.py, `_replace_actions_queue` and
  `_check_and_resolve_delays`: "Never discard more than was actually consumed").
- The prefix is what will really be executed, so it is read from the plan, never from the
  measured state.

Beyond LeRobot, because a network sits in between: a server may ignore the options (the
hosted gateway may, today). An answer that reports no prefix used (REPORT_KEY) is the sign;
the engine then falls back to the aligned join, once. And a chunk is joined the RTC way only
when the steps that played since its observation are the prefix it was sent (within
`tolerance`): a newer chunk that replaced them in between makes it an ordinary aligned join.
"""

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
import math
from typing import Any

from sequence_ai_ros.contract.action_spaces import is_velocity_space
from sequence_ai_ros.contract.rtc import DELAY_OPTION, HORIZON_OPTION, PREFIX_OPTION

# How far a returned prefix step may depart from the one sent before the chunk is reported as
# not honouring it, as a position over one step (rad; a rate is multiplied by the period, so
# the figure does not change with the control rate). The reference policies stay within 0.001.
PREFIX_TOLERANCE = 0.02
# Actions remembered to check a prefix against what played: more than any request stays out.
PLAYED_LIMIT = 4096


def delay_steps(lead_s: float, period_s: float) -> int:
    """
    Return the control steps that will play before an answer is joined (at least 1).

    `lead_s` is the prefetch trigger's lead (tail latency plus one period): d is this less the
    steps a delayed join skips, at most the chunk's length - 1 (PrefixBook.record).
    """
    return max(1, math.ceil(lead_s / period_s - 1e-9))


def execution_horizon(delay: int, ramp: int, horizon: int) -> int:
    """Return the steps of the chunk over which the model ramps from the prefix into its plan."""
    return max(delay, min(horizon, delay + max(0, ramp)))


def honoured(report: Any) -> bool:
    """Whether an answer's report says the server used the prefix sent (else it ignored it)."""
    if not isinstance(report, dict):
        return False
    used = report.get('prefix_steps')
    return isinstance(used, int) and not isinstance(used, bool) and used >= 1


def largest_gap(rows: Sequence[Sequence[float]], reference: Sequence[Sequence[float]]) -> float:
    """
    Return the largest per-value gap between two runs of actions, row by row.

    Rows missing on either side (a shorter chunk, a shorter record) make the gap infinite:
    a prefix not returned is not honoured.
    """
    if len(rows) < len(reference):
        return math.inf
    gap = 0.0
    for got, want in zip(rows, reference):
        if len(got) != len(want):
            return math.inf
        for a, b in zip(got, want):
            gap = max(gap, abs(a - b))
    return gap


@dataclass
class SentPrefix:
    """
    What one request carried: the plan's next actions, d, and the execution horizon.

    `skip` is the plan's steps between the observation and the prefix: a join delayed as the
    aligned join delays it (ChunkEngine.aligned_delay) starts the chunk that much later, so
    its prefix is the plan from then on. `unit` turns a gap between actions into one between
    positions over a step: the period for a velocity space, else 1.
    """

    actions_at_capture: int
    rows: list[list[float]]
    delay: int
    horizon: int
    unit: float = 1.0
    skip: int = 0

    def gap(self, rows: Sequence[Sequence[float]]) -> float:
        """Return how far `rows` depart from the prefix, row by row, in positions over a step."""
        return largest_gap(rows, self.rows) * self.unit

    def options(self) -> dict[str, Any]:
        """Return them as request options: extra top-level keys of the /v1/act body."""
        return {PREFIX_OPTION: [list(row) for row in self.rows], DELAY_OPTION: self.delay,
                HORIZON_OPTION: self.horizon}


class PrefixBook:
    """
    The prefixes of the requests in flight, and the actions played since the oldest was sent.

    The engine records a prefix when a request starts, notes every action it plays while any
    prefix is out, and asks at a chunk's arrival how many actions played since its
    observation and whether they were the prefix.
    """

    def __init__(self, tolerance: float = PREFIX_TOLERANCE) -> None:
        if not (math.isfinite(tolerance) and tolerance >= 0):
            raise ValueError('prefix tolerance must be a finite number >= 0')
        self.tolerance = tolerance
        self._sent: dict[int, SentPrefix] = {}
        self._played: deque[list[float]] = deque(maxlen=PLAYED_LIMIT)
        self._played_end = 0  # the action count just after the last one noted

    def record(self, ticket: int, actions: int, upcoming: Iterable[list[float]], lead: int,
               skip: int, ramp: int, steps: int, action_space: str | None = None,
               hz: float | None = None) -> SentPrefix | None:
        """
        Record the prefix of a request captured after `actions` actions; None if empty.

        `upcoming` is the plan's actions from now on, `lead` the steps until the answer is
        expected to be joined (delay_steps), `skip` the steps the chunk will start behind its
        observation, `ramp` the steps after the prefix the model is asked to ramp over,
        `steps` the chunk length, `hz` the chunk's rate.
        """
        delay = max(1, min(lead - skip, steps - 1))
        rows = [list(values) for values in islice(upcoming, skip, skip + delay)]
        if not rows:
            return None
        if not self._sent:
            self._played.clear()
        self._played_end = actions
        unit = 1.0 / hz if hz and is_velocity_space(action_space) else 1.0
        sent = SentPrefix(actions, rows, delay, execution_horizon(delay, ramp, steps), unit,
                          skip)
        self._sent[ticket] = sent
        return sent

    def sent(self, ticket: int) -> SentPrefix | None:
        """Return the prefix a request in flight carries, if any."""
        return self._sent.get(ticket)

    def pop(self, ticket: int) -> SentPrefix | None:
        """Forget a request's prefix (it arrived, failed or went stale) and return it."""
        return self._sent.pop(ticket, None)

    def clear(self) -> None:
        """Forget every prefix and what played (a stop)."""
        self._sent.clear()
        self._played.clear()

    def note_played(self, actions: int, values: list[float]) -> None:
        """Note the action that made the count `actions`, while any prefix is out."""
        if self._sent:
            self._played.append(list(values))
            self._played_end = actions

    def played_since(self, sent: SentPrefix, actions: int) -> list[list[float]] | None:
        """Return the actions played since `sent`'s observation, or None if not all are known."""
        count = actions - sent.actions_at_capture
        if count < 0 or count > len(self._played) or self._played_end != actions:
            return None
        return list(self._played)[len(self._played) - count:] if count else []

    def join_index(self, sent: SentPrefix, actions: int,
                   upcoming: Iterable[list[float]]) -> int | None:
        """
        Return the step to join the answer at: the actions played since its prefix began.

        Negative when the prefix has not begun yet (a delayed join): that many of the plan's
        next steps play first. None when the actions that played (or, before the prefix, the
        plan's next one) were not the prefix sent (a newer chunk replaced them, or they are
        no longer known): the answer is then no continuation of what plays.
        """
        played = self.played_since(sent, actions)
        if played is None:
            return None
        began = len(played) - sent.skip
        if began > 0:
            seen = played[sent.skip:sent.skip + len(sent.rows)]
        else:
            seen = list(islice(upcoming, -began, -began + 1))
        if not seen or largest_gap(seen, sent.rows[:len(seen)]) * sent.unit > self.tolerance:
            return None
        return began


def violation_message(gap: float, tolerance: float) -> str:
    """Say that an answer departed from its prefix (the first time)."""
    return (f'an answer departed from the RTC prefix it was sent by {gap:.4g} (tolerance '
            f'{tolerance:g}); it is joined, and its seam measured, all the same; '
            'stats.prefix_violations counts such answers')


def fallback_message(ticket: int, smooth_seam: int, blend: str) -> str:
    """Say that the server ignored the prefix and what the engine does instead."""
    return (f'the gateway ignored the RTC prefix (its answer to request {ticket} reports none '
            f"used): falling back to join_mode='aligned' with smooth_seam={smooth_seam}, "
            f'seam_blend={blend!r} for this run')
