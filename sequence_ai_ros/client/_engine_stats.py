"""
What a ChunkEngine counts while it runs, and the summary run() and the ROS node report from it.

EngineStats are the engine's own counters, kept so that they add up (test_engine_properties):
the joins and the RTC prefixes report what they did, and only the engine counts it here.
EngineReport is their summary in RunOutcome's field names.
"""

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._joins import JoinEvent
from ._latency import quantile

if TYPE_CHECKING:  # the engine imports this module
    from ._engine import ChunkEngine

SERIES_LIMIT = 10_000


@dataclass
class EngineStats:
    """Counters that add up: every action played is counted once, every request once."""

    actions: int = 0
    chunks: int = 0
    requests: int = 0
    failed_requests: int = 0
    stale_chunks: int = 0
    # Steps of every chunk joined; each is later played, dropped (past on arrival, replaced by a
    # newer plan, late, cleared) or still in the plan.
    planned_steps: int = 0
    dropped_steps: int = 0
    blended_steps: int = 0
    # How chunks were joined: 'replaced' (predict), 'started' (nothing was playing),
    # 'appended' (after the plan), 'aligned' (at its time), 'delayed' (behind its time,
    # aligned_delay), 'rtc' (at the step after those played since its observation, which
    # were the prefix it was sent), 'nearest' (also counted above: an absolute plan joined at
    # the step nearest the last action, before its time), 'past' (wholly in the past).
    joins: dict[str, int] = field(default_factory=dict)
    max_join_delay_s: float = 0.0
    underruns: int = 0
    underrun_s: float = 0.0
    longest_underrun_s: float = 0.0
    max_seam_jump: float | None = None
    action_space: str | None = None
    # Real-time chunking: requests that carried a prefix, how far each answer departed from
    # it (rtc.SentPrefix.gap: a position over a step, rad), answers beyond the tolerance, RTC
    # joins that came after the prefix had run out (the delay was longer than d), and whether
    # an ignoring server made the engine fall back to 'aligned'.
    prefixes_sent: int = 0
    prefix_errors: 'deque[float]' = field(default_factory=lambda: deque(maxlen=SERIES_LIMIT))
    max_prefix_error: float | None = None
    prefix_violations: int = 0
    rtc_late_joins: int = 0
    rtc_fallback: bool = False
    # Bounded: a node may run for hours; quantiles over the latest samples are what matter.
    latencies: 'deque[float]' = field(default_factory=lambda: deque(maxlen=SERIES_LIMIT))
    server_inference_ms: 'deque[float]' = field(default_factory=lambda: deque(maxlen=SERIES_LIMIT))
    obs_ages: 'deque[float]' = field(default_factory=lambda: deque(maxlen=SERIES_LIMIT))

    def count_join(self, event: JoinEvent) -> None:
        """Count what one join did."""
        for kind in event.kinds:
            self.joins[kind] = self.joins.get(kind, 0) + 1
        self.dropped_steps += event.dropped
        if event.delay_s is not None:
            self.max_join_delay_s = max(self.max_join_delay_s, event.delay_s)
        self.rtc_late_joins += event.rtc_late

    def count_prefix_gap(self, gap: float, tolerance: float) -> bool:
        """Count how far an answer departed from its prefix; True at the first beyond tolerance."""
        self.prefix_errors.append(gap)
        self.max_prefix_error = gap if self.max_prefix_error is None else \
            max(self.max_prefix_error, gap)
        if gap <= tolerance:
            return False
        self.prefix_violations += 1
        return self.prefix_violations == 1


def summarize(values: Sequence[float]) -> tuple[float | None, float | None]:
    """(p50, max) of a series, or (None, None) when empty."""
    return (quantile(values, 0.5), max(values)) if values else (None, None)


@dataclass(kw_only=True)
class EngineReport:
    """
    What an engine measured: RunOutcome's engine fields (run() and the node share them).

    `max_seam_jump` is the largest per-dimension jump between the last executed action and the
    first action played from a new chunk, measured before any blending; it reads as a position
    jump only when `action_space` is absolute.
    """

    chunks: int = 0
    underruns: int = 0
    underrun_s: float = 0.0
    max_seam_jump: float | None = None
    action_space: str | None = None
    # The share of the run the arm was commanded, and the longest wait without a command.
    moving_fraction: float = 0.0
    longest_underrun_s: float = 0.0
    requests: int = 0
    failed_requests: int = 0
    stale_chunks: int = 0
    dropped_steps: int = 0
    blended_steps: int = 0
    # Capture-to-chunk latency as the loop saw it, and the server's own inference time, so
    # network and model time can be told apart.
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    latency_p99_s: float | None = None
    server_inference_p50_ms: float | None = None
    obs_age_p50_s: float | None = None
    obs_age_max_s: float | None = None
    # join='rtc': requests that carried a prefix, the largest departure of an answer from its
    # prefix, answers beyond the tolerance, and whether an ignoring server made it 'aligned'.
    prefixes_sent: int = 0
    max_prefix_error: float | None = None
    prefix_violations: int = 0
    rtc_fallback: bool = False
    # How the chunks were joined (a count per kind of join) and the longest delay of a join.
    joins: dict[str, int] = field(default_factory=dict)
    max_join_delay_s: float = 0.0


def report(engine: 'ChunkEngine', commanded_actions: int) -> EngineReport:
    """
    Summarize an engine's run; `commanded_actions` are those that really went out.

    The moving fraction is commanded time over commanded plus underrun time.
    """
    stats = engine.stats
    commanded = commanded_actions * engine.period
    latencies = list(stats.latencies)
    age_p50, age_max = summarize(list(stats.obs_ages))
    return EngineReport(
        chunks=stats.chunks, underruns=stats.underruns, underrun_s=stats.underrun_s,
        longest_underrun_s=stats.longest_underrun_s,
        moving_fraction=commanded / (commanded + stats.underrun_s) if commanded else 0.0,
        requests=stats.requests, failed_requests=stats.failed_requests,
        stale_chunks=stats.stale_chunks, dropped_steps=stats.dropped_steps,
        blended_steps=stats.blended_steps, max_seam_jump=stats.max_seam_jump,
        action_space=stats.action_space, latency_p50_s=quantile(latencies, 0.5),
        latency_p95_s=quantile(latencies, 0.95), latency_p99_s=quantile(latencies, 0.99),
        server_inference_p50_ms=quantile(list(stats.server_inference_ms), 0.5),
        obs_age_p50_s=age_p50, obs_age_max_s=age_max, prefixes_sent=stats.prefixes_sent,
        max_prefix_error=stats.max_prefix_error, prefix_violations=stats.prefix_violations,
        rtc_fallback=stats.rtc_fallback, joins=dict(stats.joins),
        max_join_delay_s=stats.max_join_delay_s)
