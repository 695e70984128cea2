"""
Real-time chunking request options: checking them, and the weights a policy honours them by.

A request may carry (extra top-level keys, as any option):

- `action_prefix`: 1 to `action_horizon` rows of `action_dim` numbers in the model's action
  space: what the robot will execute from the moment of the observation on, whatever this
  answer says (the plan it is playing now). Step i of the answer is the action for the same
  moment as row i.
- `inference_delay_steps` (d, required with a prefix): how many of those rows will have
  played by the time the answer is joined; 0 <= d < action_horizon, so an answer always
  brings at least one step of its own. Rows [0, min(d, rows)) are frozen: a policy returns
  them as they are. Fewer rows than d mean the robot stops after them and waits.
- `execution_horizon` (s, d <= s <= action_horizon, default d): the steps over which the
  answer goes from the prefix into its own plan (RTC's soft-masked region).

The names are LeRobot's (`predict_action_chunk(..., inference_delay=, prev_chunk_left_over=,
execution_horizon=)`, huggingface/lerobot main, src/lerobot/policies/rtc/modeling_rtc.py).
A policy that honours the prefix says so (`honours_prefix = True`); the answer then reports
what it used under `rtc`, and otherwise carries a warning that the prefix was ignored.
"""

from dataclasses import dataclass
import math
from typing import Any

import numpy as np
from sequence_ai_ros.contract.rtc import DELAY_OPTION, HORIZON_OPTION, PREFIX_OPTION, REPORT_KEY

from .fields import int_option, invalid, kind, numbers

# The wire names live in one place, with the client that sends them.
OPTIONS = (PREFIX_OPTION, DELAY_OPTION, HORIZON_OPTION)
__all__ = ['OPTIONS', 'parse_prefix', 'Prefix', 'prefix_weights', 'REPORT_KEY']


@dataclass(frozen=True)
class Prefix:
    """Validated RTC options: the rows (n x action_dim), d and the execution horizon s."""

    rows: np.ndarray
    delay: int
    horizon: int

    @property
    def frozen(self) -> int:
        """Rows a policy returns unchanged: those that play before the answer is joined."""
        return min(self.delay, len(self.rows))

    def options(self) -> dict[str, Any]:
        """Return the options a policy plug-in receives (rows as a float array)."""
        return {PREFIX_OPTION: self.rows.copy(), DELAY_OPTION: self.delay,
                HORIZON_OPTION: self.horizon}

    def report(self) -> dict[str, int]:
        """Return the answer's account of the prefix it used."""
        return {'prefix_steps': len(self.rows), DELAY_OPTION: self.delay,
                HORIZON_OPTION: self.horizon}


def parse_prefix(payload: dict[str, Any], action_dim: int, steps: int) -> Prefix | None:
    """Check the RTC options of a body for a chunk of `steps` steps; None if there are none."""
    rows, delay, horizon = (payload.get(name) for name in OPTIONS)
    if rows is None:
        for name, value in ((DELAY_OPTION, delay), (HORIZON_OPTION, horizon)):
            if value is not None:
                raise invalid(f'{name}: only meaningful with {PREFIX_OPTION} (the actions that '
                              'will play while this request is answered)')
        return None
    if not isinstance(rows, list) or not 1 <= len(rows) <= steps:
        got = f'{len(rows)} rows' if isinstance(rows, list) else kind(rows)
        raise invalid(f'{PREFIX_OPTION}: expected 1 to {steps} rows (action_horizon) of '
                      f'{action_dim} numbers, got {got}')
    table = np.array([numbers(row, f'{PREFIX_OPTION}[{i}]', action_dim)
                      for i, row in enumerate(rows)], dtype=float)
    if delay is None:
        raise invalid(f'{DELAY_OPTION}: required with {PREFIX_OPTION} (how many of its rows '
                      'will have played when the answer is joined)')
    delay = int_option(delay, DELAY_OPTION, 0, steps - 1)
    horizon = delay if horizon is None else int_option(horizon, HORIZON_OPTION, delay, steps)
    return Prefix(table, delay, horizon)


def prefix_weights(frozen: int, end: int, total: int) -> np.ndarray:
    """
    Return RTC's soft mask: 1 on the frozen steps, decaying to 0 at `end`, 0 from there on.

    The exponential schedule of Physical Intelligence's real-time-chunking-kinetix, as LeRobot
    ports it (huggingface/lerobot main, src/lerobot/policies/rtc/modeling_rtc.py,
    RTCProcessor.get_prefix_weights with RTCAttentionSchedule.EXP): on [frozen, end) the
    linear ramp (end - i) / (end - frozen + 1), then w * (e^w - 1) / (e - 1).
    """
    frozen = min(frozen, end)
    index = np.arange(total, dtype=float)
    ramp = np.clip((end - index) / (end - frozen + 1), 0.0, 1.0)
    weights = ramp * np.expm1(ramp) / (math.e - 1.0)
    weights[:frozen] = 1.0
    weights[end:] = 0.0
    return weights
