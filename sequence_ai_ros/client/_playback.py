"""
PlaybackOptions: how a driver plays a model's chunks, with the one set of defaults.

run() and the ROS node both drive an ActionStream; what they share (the join, the seam blend,
requests in flight, retries, the warm-model wait) is this one object, so a default or a check
is written once for both.
"""

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any
import warnings

JOIN_MODES = ('append', 'aligned', 'rtc')
BLENDS = ('linear', 'min_jerk')
# The rate actions play at before any chunk has declared one, unless the driver set a rate.
FALLBACK_CONTROL_RATE_HZ = 10.0
# The node's parameter names are the fields' names; these older keywords, documented for run()
# and PlaybackOptions, still work with a DeprecationWarning.
RENAMED = {'join': 'join_mode', 'retries': 'request_retries'}


def current_names(keywords: Mapping[str, Any], stacklevel: int = 3) -> dict[str, Any]:
    """Return `keywords` with each renamed field under its current name, warning once each."""
    renamed = dict(keywords)
    for old, new in RENAMED.items():
        if old not in renamed:
            continue
        if new in renamed:
            raise TypeError(f'{old}= and {new}= name the same setting: pass {new}= only')
        warnings.warn(f'{old}= is deprecated: pass {new}=', DeprecationWarning,
                      stacklevel=stacklevel)
        renamed[new] = renamed.pop(old)
    return renamed


class _AcceptsRenamed(type):
    """PlaybackOptions(join=...) still builds PlaybackOptions(join_mode=...)."""

    def __call__(cls, *args: Any, **keywords: Any) -> Any:
        return super().__call__(*args, **current_names(keywords))


@dataclass(frozen=True)
class PlaybackOptions(metaclass=_AcceptsRenamed):
    """
    How chunks are requested, joined and played.

    The names are the ROS node's parameter names (join and retries, their former names, still
    work as keywords, with a DeprecationWarning).

    join_mode         'append' (each chunk whole, after the one before), 'aligned' (step i
                      at capture + i/hz) or 'rtc' (real-time chunking: the prefix in flight
                      is sent as a guide)
    prefetch          request the next chunk while this one plays (False: refill when empty)
    max_inflight      requests allowed in flight when latency says one is not enough
    smooth_seam       ramp N steps of each new chunk out of the last action (absolute spaces)
    seam_blend        the ramp's shape: 'min_jerk' (no velocity kink) or 'linear'
    request_retries   transient failures absorbed in a row while the plan plays; the next
                      one is raised
    retry_backoff_s   pause before the first retry, doubled for each further one
    startup_timeout_s wait out a warming model, but only before the first action
    """

    join_mode: str = 'append'
    prefetch: bool = True
    max_inflight: int = 2
    smooth_seam: int = 0
    seam_blend: str = 'min_jerk'
    request_retries: int = 2
    retry_backoff_s: float = 0.25
    startup_timeout_s: float = 0.0

    def __post_init__(self) -> None:
        problem = next(iter(self.problems().items()), None)
        if problem is not None:
            raise ValueError(f'{problem[0]} {problem[1]}')

    def problems(self) -> dict[str, str]:
        """Return {field: what is wrong with it} (empty when every field is valid)."""
        found: dict[str, str] = {}
        checks = (
            (self.join_mode in JOIN_MODES, 'join_mode',
             f'must be one of {JOIN_MODES}, got {self.join_mode!r}'),
            (isinstance(self.prefetch, bool), 'prefetch', 'must be True or False'),
            (_integer(self.max_inflight) and self.max_inflight >= 1, 'max_inflight',
             'must be an integer >= 1'),
            (_integer(self.smooth_seam) and self.smooth_seam >= 0, 'smooth_seam',
             'must be an integer >= 0'),
            (self.seam_blend in BLENDS, 'seam_blend',
             f'must be one of {BLENDS}, got {self.seam_blend!r}'),
            (_integer(self.request_retries) and self.request_retries >= 0, 'request_retries',
             'must be an integer >= 0'),
            (_number(self.retry_backoff_s) and self.retry_backoff_s >= 0, 'retry_backoff_s',
             'must be >= 0'),
            (_number(self.startup_timeout_s) and self.startup_timeout_s >= 0,
             'startup_timeout_s', 'must be >= 0'),
        )
        for ok, name, why in checks:
            if not ok:
                found[name] = why
        return found

    @classmethod
    def from_keywords(cls, playback: 'PlaybackOptions | None',
                      keywords: Mapping[str, Any]) -> tuple['PlaybackOptions', dict[str, Any]]:
        """
        Split a driver's keywords into its PlaybackOptions and the wire options left over.

        The loose names (prefetch=, smooth_seam=, ...; the published sequence-ai client takes
        some of them) build the PlaybackOptions when `playback` is None. Given with `playback`
        they would set a field twice: a TypeError. Every other keyword goes on the wire.
        """
        names = {f.name for f in fields(cls)} | set(RENAMED)
        loose = current_names({k: v for k, v in keywords.items() if k in names}, stacklevel=4)
        wire = {k: v for k, v in keywords.items() if k not in names}
        if playback is None:
            return cls(**loose), wire
        if not isinstance(playback, cls):
            raise TypeError(f'playback must be a PlaybackOptions, got {type(playback).__name__}')
        if loose:
            raise TypeError(f'playback= already sets {sorted(loose)}: pass them in '
                            'PlaybackOptions, or without playback=, not both')
        return playback, wire

    def with_changes(self, **changes: Any) -> 'PlaybackOptions':
        """Return a copy with `changes` (checked like the original)."""
        changes = current_names(changes)
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f'unknown playback options: {sorted(unknown)}')
        return replace(self, **changes)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# What run(), next_action() and the node play with unless told otherwise.
DEFAULT_PLAYBACK = PlaybackOptions()
