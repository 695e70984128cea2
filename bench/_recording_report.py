"""The recording bench's numbers and tables: each episode file's size and span, on/off ratios."""

from dataclasses import dataclass
from pathlib import Path
import statistics
from typing import Any

from sequence_ai_ros.harness.report import table
from sequence_ai_ros.record.reader import read_episode
from sequence_ai_ros.record.schemas import COMPRESSED_IMAGE
from sequence_ai_ros.record.size_cap import episodes

from ._tick_report import pct, ratio, read_record

P99_TARGET = 1.10  # recording may widen the tick's p99 jitter by at most 10%


def episode_file(directory: Path) -> Path | None:
    """Return the newest episode file of a run's record_dir, or None."""
    found = episodes(directory) if directory.is_dir() else []
    return found[-1] if found else None


@dataclass(frozen=True)
class FileFigures:
    """One finished episode file: its size, the span of its messages, what is in it."""

    path: Path
    size: int
    span_s: float
    messages: int
    frames: int
    frame_bytes: int
    truncated: bool

    @classmethod
    def read(cls, path: Path) -> 'FileFigures':
        contents = read_episode(path)
        times = [m.time for m in contents.messages]
        images = [m for m in contents.messages if m.type_name == COMPRESSED_IMAGE]
        return cls(path, path.stat().st_size, max(times) - min(times) if times else 0.0,
                   len(contents.messages), len(images),
                   sum(len(m.message.data) for m in images), contents.truncated)

    @property
    def mb_per_min(self) -> float:
        return self.size / self.span_s * 60 / 1e6 if self.span_s > 0 else float('nan')


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float('nan')


def _mb(figures: FileFigures | None) -> str:
    return '-' if figures is None else f'{figures.size / 1e6:.2f}'


def _rate(figures: FileFigures | None) -> str:
    return '-' if figures is None else f'{figures.mb_per_min:.2f}'


def _dropped(bench: Any, run: Any) -> str:
    value = bench.dropped.get(bench.namespace(run))
    return '-' if value is None else str(value)


def _note(bench: Any, run: Any) -> str:
    notes = [run.note] if run.note else []
    figures = bench.files.get(run.index)
    if not run.label.startswith('rec_off') and figures is None:
        notes.append(f'no file: {bench.recording.get(bench.namespace(run)) or "?"}')
    if figures is not None and figures.truncated:
        notes.append('file truncated')
    return f' ({"; ".join(notes)})' if notes else ''


def report(bench: Any) -> tuple[str, str, str]:
    """Return a finished RecordingBench's tables: every tick run, on/off per rate, models."""
    commands, chunks = read_record(bench.record)
    stats = {r.index: r.stats(commands, chunks) for r in bench.runs}
    rows = []
    # rate -> repeat -> 'rec_on' / 'rec_off' -> that window's statistics
    pairs: dict[float, dict[str, dict[str, dict[str, float]]]] = {}
    for r in bench.runs:
        if r.kind != 'node':
            continue
        s, figures = stats[r.index], bench.files.get(r.index)
        state, repeat = r.label.rsplit('_', 1)
        pairs.setdefault(r.rate, {}).setdefault(repeat, {})[state] = s
        rows.append([f'{r.rate:g}', f'{state[4:]}{_note(bench, r)}',
                     f'{s["p50"]:.2f} / {s["p99"]:.2f} / {s["max"]:.2f}',
                     f'{s["received"]} / {s["expected"]:.0f}',
                     f'{pct(s["cpu"])} [{pct(s["cpu_main"])}]', pct(s['busy']),
                     _dropped(bench, r), _mb(figures), _rate(figures)])
    ticks = table(['rate (Hz)', 'recording', 'jitter p50 / p99 / max (ms)',
                   'received / expected', 'CPU [main thread]', 'machine busy', 'dropped',
                   'file (MB)', 'MB / min'], rows, 'rlrrrrrrr')
    ratios = []
    for rate, repeats in pairs.items():
        both = [p for p in repeats.values() if 'rec_on' in p and 'rec_off' in p]
        if not both:
            continue
        on = {k: _median([p['rec_on'][k] for p in both]) for k in ('p50', 'p99', 'cpu')}
        off = {k: _median([p['rec_off'][k] for p in both]) for k in ('p50', 'p99', 'cpu')}
        p99 = on['p99'] / off['p99'] if off['p99'] else float('nan')
        verdict = '-' if p99 != p99 else ('within' if p99 <= P99_TARGET else 'over')
        within = sum(p['rec_on']['p99'] <= P99_TARGET * p['rec_off']['p99'] for p in both)
        ratios.append([f'{rate:g}', f'{on["p99"]:.2f} / {off["p99"]:.2f}', f'{p99:.2f}x',
                       verdict, f'{within} / {len(both)}', ratio(on['p50'], off['p50']),
                       ratio(on['cpu'], off['cpu'])])
    on_off = table(['rate (Hz)', 'p99 jitter on / off (ms)', 'p99 on / off',
                    f'<= {P99_TARGET:.2f}x', 'pairs within', 'p50 on / off', 'CPU on / off'],
                   ratios, 'rrrlrrr')
    models = []
    for r in bench.runs:
        if r.kind != 'model':
            continue
        model, figures = bench.model_of(r), bench.files.get(r.index)
        if figures is None:
            models.append([f'{model}{_note(bench, r)}', bench.spaces[model], f'{r.rate:g}',
                           *'-' * 5, _dropped(bench, r)])
            continue
        models.append([f'{model}{_note(bench, r)}', bench.spaces[model], f'{r.rate:g}',
                       f'{figures.span_s:.1f}', f'{figures.messages} [{figures.frames}]',
                       _mb(figures), _rate(figures),
                       pct(figures.frame_bytes / figures.size if figures.size else float('nan')),
                       _dropped(bench, r)])
    return ticks, on_off, table(
        ['model', 'action space', 'rate (Hz)', 'episode (s)', 'messages [frames]', 'file (MB)',
         'MB / min', 'frames', 'dropped'], models, 'llrrrrrrr') if models else ''
