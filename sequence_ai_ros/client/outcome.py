"""RunOutcome: what a run did, so a stalled run and a smooth one never look the same."""

from dataclasses import dataclass, field


@dataclass
class RunOutcome:
    """
    What Policy.run() did: the sequence-ai client's fields and repr, then the engine's.

    `max_seam_jump` is the largest per-dimension jump between the last executed action and the
    first action played from a new chunk, measured before any blending; it reads as a position
    jump only when `action_space` is absolute.
    """

    actions: int
    chunks: int
    elapsed_s: float
    underruns: int = 0
    underrun_s: float = 0.0
    stopped_early: bool = False
    reason: str = 'completed'
    max_seam_jump: float | None = None
    action_space: str | None = None
    # Beyond the sequence-ai client's: the share of the run the arm was commanded, and why not.
    moving_fraction: float = 0.0
    # hold() calls: one at each underrun's start (unless hold_on_underrun=False), one at an
    # early stop; 0 when run() was given no hold.
    holds: int = 0
    longest_underrun_s: float = 0.0
    requests: int = 0
    requests_per_s: float = 0.0
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

    def __repr__(self) -> str:
        stall = f', {self.underruns} underruns ({self.underrun_s:.2f}s)' if self.underruns else ''
        return (f'RunOutcome({self.actions} actions over {self.chunks} chunks '
                f'in {self.elapsed_s:.1f}s{stall}, {self.reason})')
