"""The control-tick bench's numbers and tables: the recorder's file, each run's statistics."""

from collections.abc import Callable
import statistics
from typing import Any

from sequence_ai_ros.harness.report import table


def read_record(path: str) -> tuple[dict[int, list[tuple[float, bool]]], dict[int, list[float]]]:
    commands: dict[int, list[tuple[float, bool]]] = {}
    chunks: dict[int, list[float]] = {}
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) == 3 and parts[0].isdigit():
                commands.setdefault(int(parts[0]), []).append((float(parts[1]), parts[2] == '1'))
            elif len(parts) == 2 and parts[0].startswith('c'):
                chunks.setdefault(int(parts[0][1:]), []).append(float(parts[1]))
    return commands, chunks


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float('nan')
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


class Run:
    """One measured window: who, on which executor, what rate, which recorder topic, the CPU."""

    def __init__(self, kind: str, executor: str, rate: float, index: int,
                 label: str = '') -> None:
        self.kind, self.executor, self.rate, self.index = kind, executor, rate, index
        self.label = label  # names the run's namespace when one kind runs more than once
        self.t0 = self.t1 = 0.0
        self.cpu = self.cpu_main = 0.0
        self.busy = float('nan')  # all cores, other processes included
        self.idle_cpu = self.idle_main = float('nan')  # policy node, configured, not active
        self.note = ''

    @property
    def key(self) -> tuple[str, str, float]:
        return self.kind, self.executor, self.rate

    def stats(self, commands, chunks) -> dict[str, float]:
        times = [(t, h) for t, h in commands.get(self.index, []) if self.t0 <= t <= self.t1]
        stamps = [t for t, _ in times]
        nominal = 1.0 / self.rate
        periods = [b - a for a, b in zip(stamps, stamps[1:])]
        jitter = [abs(p - nominal) * 1000 for p in periods]
        # After a hold (an underrun) the node publishes nothing until the next chunk lands:
        # that period measures the gateway's latency tail, not the tick.
        ticking = [j for j, (_, hold) in zip(jitter, times) if not hold]
        wall = self.t1 - self.t0
        out = {
            'p50': percentile(jitter, 0.5), 'p99': percentile(jitter, 0.99),
            'max': max(jitter, default=float('nan')),
            'max_ticking': max(ticking, default=float('nan')),
            'mean_period_ms': statistics.fmean(periods) * 1000 if periods else float('nan'),
            'received': len(stamps), 'expected': wall * self.rate,
            'holds': sum(h for _, h in times), 'cpu': self.cpu, 'cpu_main': self.cpu_main,
            'idle_cpu': self.idle_cpu, 'idle_main': self.idle_main, 'busy': self.busy,
            'chunks': 0, 'near_chunk_worst': float('nan'), 'p99_near': float('nan'),
            'p99_far': float('nan'),
        }
        arrivals = [c for c in chunks.get(self.index, []) if self.t0 <= c <= self.t1]
        if arrivals and periods:
            # A period "near a chunk" ends within 100 ms after a chunk event was received,
            # i.e. the tick that published it (or the one after) ran while the chunk landed.
            near, far = [], []
            for end, j in zip(stamps[1:], jitter):
                close = any(0.0 <= end - c <= 0.1 or 0.0 <= c - end <= 0.02 for c in arrivals)
                (near if close else far).append(j)
            count = max(1, len(jitter) // 100)
            worst = sorted(range(len(jitter)), key=jitter.__getitem__)[-count:]
            out.update(chunks=len(arrivals), p99_near=percentile(near, 0.99),
                       p99_far=percentile(far, 0.99),
                       near_chunk_worst=sum(
                           1 for i in worst if any(0.0 <= stamps[i + 1] - c <= 0.1
                                                   or 0.0 <= c - stamps[i + 1] <= 0.02
                                                   for c in arrivals)) / len(worst))
        return out


def pct(value: float) -> str:
    return '-' if value != value else f'{100 * value:.1f}%'


def ratio(after: float, before: float) -> str:
    return f'{after / before:.2f}x' if before and after == after else '-'


def report(bench: Any) -> tuple[str, ...]:
    """Return a finished Bench's tables: every run, before/after, node/bare, near chunks."""
    commands, chunks = read_record(bench.record)
    stats = {r.key: r.stats(commands, chunks) for r in bench.runs}
    rates, executors = bench.args.rates, bench.args.executors
    every = []
    for r in bench.runs:
        s = stats[r.key]
        who = 'policy node' if r.kind == 'node' else 'bare rclpy timer'
        note = f' ({r.note})' if r.note else ''
        idle = f'{pct(s["idle_cpu"])} [{pct(s["idle_main"])}]' if r.kind == 'node' else '-'
        every.append([f'{who}{note}', r.executor, f'{r.rate:g}',
                      f'{s["p50"]:.2f} / {s["p99"]:.2f} / {s["max"]:.2f}',
                      f'{s["mean_period_ms"]:.2f}', f'{s["received"]} / {s["expected"]:.0f}',
                      s['holds'], f'{pct(s["cpu"])} [{pct(s["cpu_main"])}]', idle,
                      pct(s['busy'])])
    runs = table(['publisher', 'executor', 'rate (Hz)', 'jitter p50 / p99 / max (ms)',
                  'mean period (ms)', 'received / expected', 'holds',
                  'CPU share [main thread]', 'configured, idle: CPU share [main thread]',
                  'machine busy'], every, 'llrrrrrrrr')

    before_after = ''
    if len(executors) == 2:
        old, new = executors
        head = ['']
        for rate in rates:
            head += [f'{rate:g} Hz: {old}', new, f'{new} / {old}']
        rows = []
        for label, kind, field, show in _BEFORE_AFTER:
            cells: list[object] = [label]
            for rate in rates:
                a, b = stats[(kind, old, rate)][field], stats[(kind, new, rate)][field]
                cells += [show(a), show(b), '-' if field == 'holds' else ratio(b, a)]
            rows.append(cells)
        before_after = table(head, rows, 'l' + 'r' * (len(head) - 1))

    limit, near = [], []
    for rate in rates:
        for executor in executors:
            n, b = stats[('node', executor, rate)], stats[('bare', executor, rate)]
            limit.append([f'{rate:g}', executor, ratio(n['p99'], b['p99']),
                          ratio(n['cpu'], b['cpu'])])
            near.append([f'{rate:g}', executor, n['chunks'],
                         f'{n["p99_near"]:.2f} / {n["p99_far"]:.2f}',
                         f'{100 * n["near_chunk_worst"]:.0f}%'])
    return (runs, before_after,
            table(['rate (Hz)', 'executor', 'p99 jitter node / bare', 'CPU node / bare'],
                  limit, 'rlrr'),
            table(['rate (Hz)', 'executor', 'chunks received',
                   'p99 jitter, periods ending near a chunk / elsewhere (ms)',
                   'worst 1% of periods near a chunk'], near, 'rlrrr'))


def _ms(value: float) -> str:
    return f'{value:.2f}'


# The before/after table: (label, publisher kind, statistic, how it is shown).
_BEFORE_AFTER: tuple[tuple[str, str, str, Callable[[Any], str]], ...] = (
    ('policy node: jitter p50 (ms)', 'node', 'p50', _ms),
    ('policy node: jitter p99 (ms)', 'node', 'p99', _ms),
    ('policy node: jitter max (ms)', 'node', 'max', _ms),
    ('policy node: jitter max, underrun gaps left out (ms)', 'node', 'max_ticking', _ms),
    ('policy node: CPU share, running', 'node', 'cpu', pct),
    ('policy node: main thread, running', 'node', 'cpu_main', pct),
    ('policy node: CPU share, configured, idle', 'node', 'idle_cpu', pct),
    ('policy node: main thread, configured, idle', 'node', 'idle_main', pct),
    ('policy node: holds', 'node', 'holds', str),
    ('bare timer: jitter p99 (ms)', 'bare', 'p99', _ms),
    ('bare timer: jitter max (ms)', 'bare', 'max', _ms),
    ('bare timer: CPU share', 'bare', 'cpu', pct),
)
