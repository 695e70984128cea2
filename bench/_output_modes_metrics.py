"""
The output-modes bench's measures, from one run's recorded series (numpy only, no ROS).

Definitions (the bench's RESULTS.md section repeats them):

- **target** of a command: where the node wants the arm one control period after it sent it
  (the step's action lasts one period; a trajectory's first point when its time_from_start
  says, which after a late trajectory_plan tick is the last plan's due time): the positions
  of a trajectory's first point or of a forward_position command; for forward_velocity the
  node's own integrated target, rebuilt as its CommandMapper builds it (from the measured
  positions at the first command and after each hold, plus velocity x period per step).
  Holds are left out.
- **tracking error**: the joint-space (7 arm joints, Euclidean, rad) distance, every 5 ms,
  between the measured positions and the commanded path (the targets joined linearly from
  one due time to the next), where consecutive due times are at most GAP_PERIODS apart (a
  late tick commands nothing new: no path there); RMS and max.
- **jerk**: the measured positions resampled every 5 ms, a Savitzky-Golay cubic over 11
  samples (55 ms) for the third derivative, the joint-space norm, RMS over the window.
- **stall**, per SIGSTOP of the node: the longest rest (the sim's own joint speed, joint-space
  norm, below STALL_SHARE of the arm's mean speed over the PRE_S before the stop) that
  overlaps the stop, less the longest rest inside those PRE_S (a forward_position arm rests
  between its steps); **carried** = the path the arm covered while the node was stopped /
  (that mean speed x the stop); **past target** = how far the arm went beyond the end of the
  last command it had (a trajectory's last point, a position, or one period of a velocity
  from where the arm was), along the way that command sent it; **pulled back** = how far,
  along that way, the node's next commands took the arm back within BACK_S of going on.
"""

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np

from ._output_modes_record import Sent, Series

GRID_S = 0.005
P99_GRID_S = 0.01  # the grid the real controllers' p99 jerk was measured on
MAX_STATE_GAP = 2.5  # x the median interval between joint states: a gap in the record
SG_WINDOW = 11
SG_ORDER = 3
STALL_SHARE = 0.25
PRE_S = 0.25
STALL_SPAN_S = 0.5  # searched for the stall on either side of a stop
BACK_S = 0.15  # after a stop, where the arm may be sent back over ground it covered
ARM = 7
GAP_PERIODS = 1.5  # due times further apart than this: a late tick


def is_hold(sent: Sent, mode: str) -> bool:
    """Return whether a command is one of the node's holds (zero velocities, or zeros)."""
    if mode == 'forward_velocity':
        return all(v == 0.0 for v in sent.first)
    return bool(sent.velocities) and len(sent.velocities) == len(sent.first) and \
        sent.first == sent.last and all(v == 0.0 for v in sent.velocities)


def states_array(series: Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (stamps, positions, velocities) of the arm joints, in stamp order."""
    with series.lock:
        states = sorted(series.states)
    t = np.array([s[0] for s in states])
    q = np.array([s[1][:ARM] for s in states])
    v = np.array([s[2][:ARM] if s[2] else (0.0,) * ARM for s in states])
    return t, q, v


def position_at(t: np.ndarray, q: np.ndarray, when: float) -> np.ndarray:
    """Return the measured positions at `when`, linearly interpolated between samples."""
    return np.array([np.interp(when, t, q[:, j]) for j in range(q.shape[1])])


def targets(series: Series, mode: str, period: float, t: np.ndarray, q: np.ndarray
            ) -> list[tuple[float, np.ndarray]]:
    """Return (sent time, target) for every command that is not a hold."""
    with series.lock:
        sent = list(series.sent)
    out: list[tuple[float, np.ndarray]] = []
    target: np.ndarray | None = None
    for command in sent:
        if is_hold(command, mode):
            target = None  # the node's integration restarts from the measured positions
            continue
        if mode == 'forward_velocity':
            if target is None:
                target = position_at(t, q, command.time)
            target = target + np.array(command.first[:ARM]) * period
            out.append((command.time, target))
        else:
            # A trajectory's first point is due when it says (trajectory_plan after a late
            # tick keeps the last plan's due times): counted as sent that much off one period.
            shift = 0.0 if command.first_s is None else command.first_s - period
            out.append((command.time + shift, np.array(command.first[:ARM])))
    return out


def tracking(goals: Sequence[tuple[float, np.ndarray]], period: float, t: np.ndarray,
             q: np.ndarray, window: tuple[float, float], lead: float | None = None
             ) -> tuple[float, float]:
    """
    Return RMS and max distance (rad) between the measured and the commanded path.

    Each goal is due `lead` s after it was sent (default one period; forward_position's lines
    are due at once).
    """
    if len(goals) < 2:
        return math.nan, math.nan
    lead = period if lead is None else lead
    due = np.array([sent + lead for sent, _ in goals])
    path = np.array([goal for _, goal in goals])
    grid = _grid(t, window)
    k = np.searchsorted(due, grid, side='right') - 1
    inside = (k >= 0) & (k + 1 < len(due))
    k = k[inside]
    grid = grid[inside]
    # Across a late tick the node commanded nothing new: no path to follow there.
    steady = due[k + 1] - due[k] <= GAP_PERIODS * period
    k, grid = k[steady], grid[steady]
    if not k.size:
        return math.nan, math.nan
    share = ((grid - due[k]) / (due[k + 1] - due[k]))[:, None]
    commanded = path[k] + share * (path[k + 1] - path[k])
    measured = np.stack([np.interp(grid, t, q[:, j]) for j in range(q.shape[1])], axis=1)
    errors = np.linalg.norm(measured - commanded, axis=1)
    return float(np.sqrt(np.mean(errors ** 2))), float(errors.max())


def _grid(t: np.ndarray, window: tuple[float, float]) -> np.ndarray:
    return np.arange(max(window[0], t[0]), min(window[1], t[-1]), GRID_S)


def savgol(window: int, order: int, derivative: int, step: float) -> np.ndarray:
    """Return Savitzky-Golay convolution weights for the `derivative` at the window's centre."""
    half = window // 2
    offsets = np.arange(-half, half + 1, dtype=float)
    basis = np.vander(offsets, order + 1, increasing=True)
    weights = np.linalg.pinv(basis)[derivative] * math.factorial(derivative)
    return weights / step ** derivative


def jerk_rms(t: np.ndarray, q: np.ndarray, window: tuple[float, float]) -> float:
    """Return the RMS joint-space jerk (rad/s^3) of the measured path inside `window`."""
    grid = _grid(t, window)
    if grid.size <= SG_WINDOW:
        return math.nan
    weights = savgol(SG_WINDOW, SG_ORDER, 3, GRID_S)[::-1]
    jerks = np.array([np.convolve(np.interp(grid, t, q[:, j]), weights, mode='valid')
                      for j in range(q.shape[1])])
    return float(np.sqrt(np.mean(np.sum(jerks ** 2, axis=0))))


def jerk_p99(t: np.ndarray, q: np.ndarray, window: tuple[float, float]) -> float:
    """
    Return the 99th percentile joint-space jerk (rad/s^3): third differences, 10 ms grid.

    Only where the joint states cover the four grid points: a gap in the recorded states (a
    reader that fell behind on a busy machine) would be a straight line drawn across it.
    """
    grid = np.arange(max(window[0], t[0]), min(window[1], t[-1]), P99_GRID_S)
    if grid.size < 8:
        return math.nan
    points = np.stack([np.interp(grid, t, q[:, j]) for j in range(q.shape[1])], axis=1)
    jerks = np.linalg.norm(np.diff(points, n=3, axis=0), axis=1) / P99_GRID_S ** 3
    after = np.clip(np.searchsorted(t, grid), 1, t.size - 1)
    covered = t[after] - t[after - 1] <= MAX_STATE_GAP * np.median(np.diff(t))
    covered = covered[:-3] & covered[1:-2] & covered[2:-1] & covered[3:]
    return float(np.percentile(jerks[covered], 99)) if covered.any() else math.nan


@dataclass(frozen=True)
class Pulse:
    """One SIGSTOP of the node: asked for `delay_s`, stopped from `stop` to `cont`."""

    delay_s: float
    stop: float
    cont: float


@dataclass(frozen=True)
class StallMeasure:
    """What one pulse did to the arm (see the module docstring)."""

    delay_s: float
    stopped_s: float
    speed_before: float
    stall_s: float
    carried: float
    past_target: float
    pulled_back: float
    tick_gap_s: float


def stall(pulse: Pulse, series: Series, mode: str, period: float, t: np.ndarray,
          q: np.ndarray, v: np.ndarray) -> StallMeasure | None:
    """Measure one pulse; None when the arm was not moving before it (or was not recorded)."""
    if t[0] > pulse.stop - PRE_S or t[-1] < pulse.cont + STALL_SPAN_S:
        return None
    speed_before = path_length(t, q, pulse.stop - PRE_S, pulse.stop) / PRE_S
    if speed_before <= 0.0:
        return None
    rests = _rests(t, np.linalg.norm(v, axis=1) < STALL_SHARE * speed_before)
    # A forward_position arm rests between its steps: only rest beyond that is a stall.
    usual = max((end - begin for begin, end in rests
                 if begin >= pulse.stop - PRE_S and end <= pulse.stop), default=0.0)
    during = max((end - begin for begin, end in rests
                  if begin <= pulse.cont and end >= pulse.stop), default=0.0)
    stopped = pulse.cont - pulse.stop
    carried = path_length(t, q, pulse.stop, pulse.cont) / (speed_before * stopped)
    past, back = _overrun(pulse, series, mode, period, t, q)
    return StallMeasure(pulse.delay_s, stopped, speed_before, max(0.0, during - usual),
                        carried, past, back, _tick_gap(pulse, series))


def _rests(t: np.ndarray, slow: np.ndarray) -> list[tuple[float, float]]:
    """Return the (begin, end) times of each run of slow samples."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], slow.astype(int), [0]))))
    last = len(t) - 1
    return [(float(t[i]), float(t[min(j, last)])) for i, j in zip(edges[::2], edges[1::2])]


def path_length(t: np.ndarray, q: np.ndarray, begin: float, end: float) -> float:
    """Return the joint-space path the arm covered from `begin` to `end` (rad)."""
    grid = np.append(_grid(t, (begin, end)), min(end, t[-1]))
    points = np.stack([np.interp(grid, t, q[:, j]) for j in range(q.shape[1])], axis=1)
    return float(np.sum(np.linalg.norm(np.diff(points, axis=0), axis=1)))


def _overrun(pulse: Pulse, series: Series, mode: str, period: float, t: np.ndarray,
             q: np.ndarray) -> tuple[float, float]:
    """Return how far the arm went past its last command's end, and then back (rad)."""
    with series.lock:
        last = [s for s in series.sent if s.time < pulse.cont]
    if not last:
        return math.nan, math.nan
    command = last[-1]
    if mode == 'forward_velocity':
        end = position_at(t, q, command.time) + np.array(command.first[:ARM]) * period
    else:
        end = np.array(command.last[:ARM])
    # The way the last command sent the arm: from where it was then toward that command's end.
    direction = end - position_at(t, q, command.time)
    norm = float(np.linalg.norm(direction))
    if norm == 0.0:
        return 0.0, 0.0
    direction /= norm
    # The last sample before the node went on: the one after may hold its next command's move.
    index = max(0, int(np.searchsorted(t, pulse.cont, side='right')) - 1)
    after = (t > pulse.cont) & (t <= pulse.cont + BACK_S)
    back = max(0.0, -float(np.min((q[after] - q[index]) @ direction, initial=0.0)))
    return max(0.0, float((q[index] - end) @ direction)), back


def _tick_gap(pulse: Pulse, series: Series) -> float:
    """Return the longest gap between commands received that overlaps the stop."""
    with series.lock:
        times = [s.time for s in series.sent]
    gaps = [b - a for a, b in zip(times, times[1:]) if a <= pulse.cont and b >= pulse.stop]
    return max(gaps, default=math.nan)
