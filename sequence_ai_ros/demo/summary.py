"""What one demo episode produced (:class:`Run`), and the outcome table of the episodes."""

from dataclasses import dataclass, field

from sequence_ai_ros.contract.action_spaces import is_velocity_space

from . import analysis


@dataclass
class Run:
    """One episode: what was recorded, how it ended, and why it failed ('' if it did not)."""

    label: str
    prefetch: bool
    namespace: str
    data: analysis.Recording = field(default_factory=analysis.Recording)
    final_distance: float | None = None
    failure: str = ''
    logs: str = ''


def outcome_table(runs: list[Run], scale: float, action_space: str) -> str:
    """
    Return the outcome of each run, one column per run, in model seconds.

    `scale` is the demo's time scale (wall seconds per model second); `action_space` the
    model's, which says whether a seam jump is a position (rad) or a velocity (rad/s).
    """
    velocity = is_velocity_space(action_space)
    rows: list[tuple[str, list[str]]] = [
        ('', [run.label for run in runs]),
        ('outcome', [_outcome(run, 'outcome') for run in runs]),
        ('actions', [_outcome(run, 'actions') for run in runs]),
        ('chunks', [_outcome(run, 'chunks') for run in runs]),
        ('seconds', [_number(_motion_s(run, scale), 2) for run in runs]),
        ('underruns', [_outcome(run, 'underruns') for run in runs]),
        ('moving %', [_number(_fraction(run), 1) for run in runs]),
        (f'max seam jump ({"rad/s" if velocity else "rad"})',
         [_number(_seam(run, scale if velocity else 1.0), 4) for run in runs]),
        ('latency p50 (s)', [_number(_latency(run, 'p50', scale), 3) for run in runs]),
        ('latency p95 (s)', [_number(_latency(run, 'p95', scale), 3) for run in runs]),
        ('final task distance (m)', [_number(run.final_distance, 4) for run in runs]),
        ('rejected by controllers', [str(len(run.data.controller_errors)) for run in runs]),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f'{name:<{width}}' + ''.join(f'{v:>15}' for v in values) for name, values in rows]
    return '\n'.join(['', *lines, f'(model seconds: wall seconds / {scale:g})'])


def _outcome(run: Run, key: str) -> str:
    return str((run.data.outcome or {}).get(key, 'n/a'))


def _number(value: float | None, digits: int) -> str:
    return 'n/a' if value is None else f'{value:.{digits}f}'


def _motion_s(run: Run, scale: float) -> float | None:
    played = analysis.actions(run.data)
    if not played or run.data.outcome_time is None:
        return None
    return (run.data.outcome_time - played[0][0]) / scale


def _fraction(run: Run) -> float | None:
    value = (run.data.outcome or {}).get('moving_fraction')
    return None if value is None else 100.0 * float(value)


def _latency(run: Run, which: str, scale: float) -> float | None:
    value = (run.data.outcome or {}).get(f'latency_{which}_s')
    return None if value is None else float(value) / scale


def _seam(run: Run, per_model_second: float) -> float | None:
    value = (run.data.outcome or {}).get('max_seam_jump')
    # Velocities are per wall second at the served rate; per model second they are S times.
    return None if value is None else float(value) * per_model_second
