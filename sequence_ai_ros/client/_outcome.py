"""RunOutcome: what a run did, so a stalled run and a smooth one never look the same."""

from dataclasses import dataclass

from ._engine_stats import EngineReport


@dataclass(kw_only=True)
class RunOutcome(EngineReport):
    """
    What Policy.run() did: the sequence-ai client's fields and repr, then the engine's.

    The sequence-ai client's fields are actions, chunks, elapsed_s, underruns, underrun_s,
    stopped_early, reason, max_seam_jump and action_space; the rest are EngineReport's and the
    loop's own.
    """

    actions: int = 0
    elapsed_s: float = 0.0
    stopped_early: bool = False
    reason: str = 'completed'
    # hold() calls: one at each underrun's start (unless hold_on_underrun=False), one at an
    # early stop; 0 when run() was given no hold.
    holds: int = 0
    requests_per_s: float = 0.0

    def __repr__(self) -> str:
        stall = f', {self.underruns} underruns ({self.underrun_s:.2f}s)' if self.underruns else ''
        return (f'RunOutcome({self.actions} actions over {self.chunks} chunks '
                f'in {self.elapsed_s:.1f}s{stall}, {self.reason})')
