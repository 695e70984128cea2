"""The output-modes bench's tables: per mode and rate, the clean and stalled phases abreast."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
import math
import statistics
from typing import Any

from ._output_modes_metrics import (
    BACK_S,
    GRID_S,
    jerk_p99,
    jerk_rms,
    P99_GRID_S,
    path_length,
    PRE_S,
    SG_ORDER,
    SG_WINDOW,
    stall,
    STALL_SHARE,
    StallMeasure,
    states_array,
    targets,
    tracking,
)
from ._output_modes_run import (
    JOINT_STATE_HZ,
    MOVING_RAD_S,
    PULSE_GAP_S,
    RunResult,
    TARGET_EVERY_S,
)

SECTION = '## Output modes against the simulated stock controllers'


@dataclass
class Measures:
    """One run's figures (rad, s; NaN where nothing could be measured)."""

    mode: str
    hz: float
    speed_clean: float = math.nan
    speed_stopped: float = math.nan
    tracking_clean: tuple[float, float] = (math.nan, math.nan)
    tracking_stopped: tuple[float, float] = (math.nan, math.nan)
    jerk_clean: float = math.nan
    jerk_stopped: float = math.nan
    jerk_p99_clean: float = math.nan
    stalls: list[StallMeasure] = field(default_factory=list)
    skipped_stops: int = 0
    underruns: int = 0
    rejected: int = 0
    limit_clamps: int = 0
    commands: int = 0


def analyse(results: Sequence[RunResult]) -> list[Measures]:
    """Measure every run that did not fail."""
    rows = []
    for result in results:
        if result.failure or len(result.series.states) < SG_WINDOW:
            continue
        period = 1.0 / result.hz
        t, q, v = states_array(result.series)
        goals = targets(result.series, result.mode, period, t, q)
        clean = (result.clean_start, result.clean_end)
        stopped = (result.clean_end, result.end)
        row = Measures(result.mode, result.hz)
        # forward_position's lines: each value is where the arm should be at once.
        lead = 0.0 if result.mode.startswith('forward_position') and \
            result.mode != 'forward_position_steps' else None
        row.tracking_clean = tracking(goals, period, t, q, clean, lead)
        row.tracking_stopped = tracking(goals, period, t, q, stopped, lead)
        row.jerk_clean, row.jerk_stopped = jerk_rms(t, q, clean), jerk_rms(t, q, stopped)
        row.jerk_p99_clean = jerk_p99(t, q, clean)
        row.speed_clean = path_length(t, q, *clean) / (clean[1] - clean[0])
        row.speed_stopped = path_length(t, q, *stopped) / (stopped[1] - stopped[0])
        for pulse in result.pulses:
            measure = stall(pulse, result.series, result.mode, period, t, q, v)
            if measure is None:
                row.skipped_stops += 1
            else:
                row.stalls.append(measure)
        row.underruns = int(result.outcome.get('underruns', 0) or 0)
        row.rejected = result.controller_errors
        row.limit_clamps = result.limit_clamps
        row.commands = len(result.series.sent)
        rows.append(row)
    return rows


def _spread(values: Sequence[float], scale: float = 1.0, digits: int = 1) -> str:
    """Return 'mean (min-max)' of the finite values, or the one value, or '-'."""
    finite = [v * scale for v in values if math.isfinite(v)]
    if not finite:
        return '-'
    mean = statistics.fmean(finite)
    if len(finite) == 1:
        return f'{mean:.{digits}f}'
    return f'{mean:.{digits}f} ({min(finite):.{digits}f}-{max(finite):.{digits}f})'


def _mean_max(values: Sequence[float], scale: float, digits: int = 0) -> str:
    finite = [v * scale for v in values if math.isfinite(v)]
    if not finite:
        return '-'
    return f'{statistics.fmean(finite):.{digits}f} ({max(finite):.{digits}f})'


def _groups(rows: Sequence[Measures]) -> dict[tuple[float, str], list[Measures]]:
    groups: dict[tuple[float, str], list[Measures]] = {}
    for row in rows:
        groups.setdefault((row.hz, row.mode), []).append(row)
    return dict(sorted(groups.items(), key=lambda item: (item[0][0], _mode_rank(item[0][1]))))


def _mode_rank(mode: str) -> int:
    order = ('trajectory_stream', 'trajectory_plan', 'forward_position',
             'forward_position_250hz', 'forward_position_1000hz', 'forward_position_steps',
             'forward_velocity')
    return order.index(mode) if mode in order else len(order)


def phase_table(rows: Sequence[Measures]) -> str:
    """Speed, tracking error and jerk per mode and rate, without and with the node stopped."""
    columns: list[tuple[Callable[[Measures], float], float, int]] = [
        (lambda r: r.speed_clean, 1.0, 2), (lambda r: r.speed_stopped, 1.0, 2),
        (lambda r: r.tracking_clean[0], 1e3, 1), (lambda r: r.tracking_stopped[0], 1e3, 1),
        (lambda r: r.tracking_clean[1], 1e3, 1), (lambda r: r.tracking_stopped[1], 1e3, 1),
        (lambda r: r.jerk_clean, 1.0, 0), (lambda r: r.jerk_stopped, 1.0, 0),
        (lambda r: r.jerk_p99_clean, 1.0, 0)]
    lines = [
        '| rate | output mode | runs | arm speed (rad/s): clean | with stops | tracking RMS '
        '(mrad): clean | with stops | tracking max (mrad): clean | with stops | jerk RMS '
        '(rad/s^3): clean | with stops | jerk p99 (rad/s^3): clean | underruns | rejected | '
        'limit clamps |',
        '|---:|---|---:|' + '---:|' * (len(columns) + 3)]
    for (hz, mode), group in _groups(rows).items():
        cells = [_spread([get(r) for r in group], scale, digits)
                 for get, scale, digits in columns]
        lines.append(f'| {hz:g} Hz | {mode} | {len(group)} | {" | ".join(cells)} | '
                     f'{sum(r.underruns for r in group)} | {sum(r.rejected for r in group)} | '
                     f'{sum(r.limit_clamps for r in group)} |')
    return '\n'.join(lines)


def stall_table(rows: Sequence[Measures]) -> str:
    """Per mode, rate and delay: what the stopped node let the arm do."""
    lines = [
        '| rate | output mode | stop asked (ms) | stops | stopped (ms) | longest gap between '
        'commands (ms), mean (max) | arm stalled (ms), mean (max) | motion carried on, mean '
        '(min) | past the last target (mrad), mean (max) | pulled back after (mrad), mean (max) |',
        '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for (hz, mode), group in _groups(rows).items():
        stalls = [s for r in group for s in r.stalls]
        for delay in sorted({s.delay_s for s in stalls}):
            of = [s for s in stalls if s.delay_s == delay]
            carried = [100.0 * s.carried for s in of]
            lines.append(
                f'| {hz:g} Hz | {mode} | {1e3 * delay:.0f} | {len(of)} | '
                f'{statistics.fmean(s.stopped_s for s in of) * 1e3:.0f} | '
                f'{_mean_max([s.tick_gap_s for s in of], 1e3)} | '
                f'{_mean_max([s.stall_s for s in of], 1e3)} | '
                f'{statistics.fmean(carried):.0f}% ({min(carried):.0f}%) | '
                f'{_mean_max([s.past_target for s in of], 1e3, 1)} | '
                f'{_mean_max([s.pulled_back for s in of], 1e3, 1)} |')
    return '\n'.join(lines)


def _mean(group: Sequence[Measures], get: Callable[[Measures], float]) -> float:
    values = [get(r) for r in group if math.isfinite(get(r))]
    return statistics.fmean(values) if values else math.nan


def _stall_mean(group: Sequence[Measures], delay: float) -> float:
    values = [s.stall_s for r in group for s in r.stalls if s.delay_s == delay]
    return statistics.fmean(values) if values else math.nan


def comparisons(rows: Sequence[Measures]) -> list[str]:
    """Ratios from the same run: each mode against trajectory_stream, and 50 Hz against 15."""
    groups = _groups(rows)
    rates = sorted({hz for hz, _ in groups})
    modes = sorted({mode for _, mode in groups}, key=_mode_rank)
    lines = []
    for hz in rates:
        base = groups.get((hz, 'trajectory_stream'))
        if not base:
            continue
        parts = []
        for mode in modes:
            group = groups.get((hz, mode))
            if mode == 'trajectory_stream' or not group:
                continue
            jerk = _mean(group, lambda r: r.jerk_clean) / _mean(base, lambda r: r.jerk_clean)
            rms = _mean(group, lambda r: r.tracking_clean[0]) / \
                _mean(base, lambda r: r.tracking_clean[0])
            parts.append(f'{mode} jerk x{jerk:.2f}, tracking RMS x{rms:.2f}')
        lines.append(f'- {hz:g} Hz, clean phase, against trajectory_stream: {"; ".join(parts)}')
    if len(rates) == 2:
        low, high = rates
        parts = []
        for mode in modes:
            a, b = groups.get((low, mode)), groups.get((high, mode))
            if not a or not b:
                continue
            jerk = _mean(b, lambda r: r.jerk_clean) / _mean(a, lambda r: r.jerk_clean)
            rms = _mean(b, lambda r: r.tracking_clean[0]) / _mean(a, lambda r: r.tracking_clean[0])
            parts.append(f'{mode} jerk x{jerk:.2f}, tracking RMS x{rms:.2f}')
        lines.append(f'- {high:g} Hz against {low:g} Hz, clean phase: {"; ".join(parts)}')
    for hz in rates:
        for delay in sorted({s.delay_s for r in rows for s in r.stalls}):
            parts = [f'{mode} {1e3 * _stall_mean(groups[(hz, mode)], delay):.0f}'
                     for mode in modes if (hz, mode) in groups]
            lines.append(f'- {hz:g} Hz, arm stalled per {1e3 * delay:.0f} ms stop (ms): '
                         f'{", ".join(parts)}')
    return lines


def report(rows: Sequence[Measures], results: Sequence[RunResult], plan: dict[str, Any],
           command: str, machine: str, code: str, minutes: float, busy: float) -> str:
    """Return the whole section: how it was made, the tables, the comparisons."""
    failed = [r for r in results if r.failure]
    skipped = sum(r.skipped_stops for r in rows)
    parts = [
        f'Command: `{command}`  ',
        f'Machine: {machine}  ',
        f'Code: {code}  ',
        f'Runtime: {minutes:.1f} min; {len(results)} runs ({plan["repeats"]} per mode and '
        f'rate), {len(failed)} failed. Each run: {plan["clean_s"]:g} s clean, then '
        f'{plan["stops_per_delay"]} stops of the node per delay. The machine is shared (2 '
        f"cores, other engineers' work beside it; all cores {100 * busy:.0f}% busy over the "
        'run, this bench included): compare within a table, and read the spread (min-max over '
        'runs).',
        '',
        _DEFINITIONS,
        '',
        phase_table(rows),
        '',
        stall_table(rows),
        '',
        '### Comparisons (same run)',
        '',
        *comparisons(rows),
    ]
    if skipped:
        parts.append(f'- {skipped} stops left out: the arm had no speed before them')
    for result in failed:
        first = result.failure.splitlines()[0]
        parts.append(f'- FAILED: {result.mode} at {result.hz:g} Hz, repeat '
                     f'{result.repeat + 1}: {first}')
    return '\n'.join(parts)


_DEFINITIONS = (
    'Each run is a real `sim_arm` (Kilted controller rules; physics at '
    f"{JOINT_STATE_HZ:g} Hz; its controller_manager at the controllers file's 1000 Hz, "
    "clamping every command to the joints' limits as Kilted's does, a forward controller "
    'writing each command in the update it arrives in, and a joint state for every update, '
    'stamped at its time, as the real joint_state_broadcaster publishes them: the 10 ms '
    "grid of the jerk p99 then sees the steps between a forward line's values) and a real "
    'policy node '
    '(config/pi05_droid.yaml with the mode and its controller as the demo pairs them; the '
    'gripper on its own trajectory controller; **forward_position** draws each step as a '
    'line at forward_output_rate_hz, its default, **forward_position_steps** sends each step '
    'at once, forward_output_rate_hz 0) against the local gateway (real time, warm, steady '
    'latency, nice 10), closed loop through the camera; the disc the arm reaches for jumps '
    f'between two mirror-image places every {TARGET_EVERY_S:g} s, so the arm keeps moving '
    'and every move is the same task. '
    '**15 Hz** is pi05-droid; **50 Hz** a catalogue entry that is pi05-droid but for the rate '
    '(50 steps at 50 Hz: the same 1.0 s chunks, latency and joint/tool speeds). The gateway '
    'serves the reference policy through a `--policy` plug-in (bench/_output_modes_policy.py) '
    "that draws its noise on the 15 Hz grid and samples it at the model's rate from a smooth "
    'curve: at 15 Hz the reference policy exactly, at 50 Hz the same motion more finely '
    "sampled (the reference policy's own noise, correlated per step, would be a rougher curve "
    "at 50 Hz and turn a rate comparison into a noise comparison). The node's control_rate_hz "
    'was not used for 50 Hz: it plays the 15 Hz steps at 50 Hz, 0.3 times the motion per '
    'chunk, which the 0.78 s latency cannot keep up with. **Phases**: the arm starts with '
    'its tool midway between the targets and the first move lasts half as long, so the '
    'back-and-forth is symmetric from the start; *clean* starts one whole move later and '
    'lasts a whole number of moves; *with stops* follows it, until the move after the last '
    "stop ends: the node's process is stopped "
    '(SIGSTOP) for 50, 100 and 200 ms in a shuffled order and continued (SIGCONT), each when '
    f'the arm moves faster than {MOVING_RAD_S:g} rad/s and at least {PULSE_GAP_S:g} s (plus a '
    'random part of a period) after the last one ended: every thread of the node is late at '
    'once, as under a GC pause or a CPU taken away. **arm speed**: joint-space path / time. '
    '**target**: where the node wants the arm one control period after it sends a command: a '
    "trajectory's first point, a forward position, or for forward_velocity the node's own "
    'integrated target (rebuilt as its CommandMapper builds it: from the measured positions '
    'at the first command and after each hold, plus velocity x period); holds are left out. '
    "**tracking error**: every 5 ms, the 7 arm joints' Euclidean distance between the "
    'measured positions and the commanded path (the targets joined linearly from one due '
    'time to the next; not across a late tick, which commands nothing new); RMS and max over '
    f'the phase. **jerk**: the measured positions resampled every {1e3 * GRID_S:g} ms, the '
    f'third derivative of a Savitzky-Golay fit of order {SG_ORDER} over {SG_WINDOW} samples '
    f'({1e3 * GRID_S * SG_WINDOW:g} ms), joint-space norm, RMS over the phase; **jerk p99**: '
    f'third differences on a {1e3 * P99_GRID_S:g} ms grid (as the real controllers were '
    'measured), 99th percentile over the clean phase. **arm '
    "stalled**: the longest rest (the sim's own joint speed below "
    f"{STALL_SHARE:.0%} of the arm's mean speed over the {1e3 * PRE_S:g} ms before the stop) "
    'that overlaps the stop, less the longest rest inside those ms (a forward_position arm '
    'rests between its steps); it may outlast the stop until a new command moves the arm. '
    '**motion carried on**: the path the arm covered while the node was stopped / (that mean '
    'speed x the stop). **past the last target**: how far the arm went beyond the end of the '
    "last command it had (a trajectory's last point, a forward position, or one period of a "
    'forward velocity from where the arm was), along the way that command sent it: motion no '
    'checked command asked for. **pulled back after**: how far, along that same way, the '
    f"node's next commands took the arm back within {1e3 * BACK_S:g} ms of going on (ground "
    'the controller had covered and the node sends again). **longest gap between commands**: '
    'the late '
    "tick as the controller saw it. **underruns**: the node's own count; **rejected**: the "
    "controllers' ERROR lines; **limit clamps**: the controller_manager's \"out of limits\" "
    'ERROR lines, throttled to one a second (all summed over the runs).')
