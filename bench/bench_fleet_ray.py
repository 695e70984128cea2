"""
The fleet bench on Ray Serve: 32 stamped loops, in-process gateway vs 1, 2, 4 replicas.

Run: .venv/bin/python -m bench.bench_fleet_ray [--loops 32] [--seconds S] [--replicas 1 2 4]
     [--no-record]

Each row starts a fresh gateway serving the fleet bench's stamping plug-in (bench/_fleet_policy),
runs the loops of bench/_fleet_clients against it (each checks what it played), and reports
sequence breaks, lost requests, p99 round trip and answered requests per second per replica.
Writes its section of bench/RESULTS.md with bench/_record.py's writer.
"""

import argparse
import sys
import time

from sequence_ai_ros.gateway.process import GatewayProcess

from ._fleet_clients import run_fleet, synthetic_frames
from ._record import command_line, header, REPO, write_results_section

KEY = 'seq_bench_fleet_ray_key_00000001'
MODEL = 'pi05-droid'
SCALE = 0.5
HORIZON = 15


def gateway(replicas: int | None) -> GatewayProcess:
    """Return a warm gateway with the stamping plug-in: in-process (None) or on Ray."""
    args = ['--time-scale', f'{SCALE:g}', '--start-warm', '--seed', '0', '--log-level',
            'warning', '--policy', 'bench._fleet_policy:make_fleet_policy']
    if replicas:
        args += ['--ray', '--replicas', str(replicas)]
    return GatewayProcess(args, keys={KEY: 10 ** 9}, import_paths=[REPO],
                          startup_timeout_s=150.0, stop_timeout_s=40.0)


def run_row(replicas: int | None, loops: int, seconds: float) -> list[str]:
    """Run one row; return its table cells."""
    actions = max(3, round(seconds / (HORIZON * 0.0667 * SCALE))) * HORIZON
    with gateway(replicas) as server:
        start = time.monotonic() + 0.5
        results, _ = run_fleet(server.base_url, KEY, MODEL, list(range(loops)), actions,
                               synthetic_frames(), start)
        wall = time.monotonic() - start
    trips = sorted(t[0] for r in results for t in r.timings)
    p99 = trips[min(len(trips) - 1, int(0.99 * len(trips)))] if trips else float('nan')
    answered = sum(r.received for r in results)
    return [f'Ray Serve, {replicas} replica(s)' if replicas else 'in-process gateway',
            str(sum(r.breaks for r in results)), str(sum(r.lost for r in results)),
            str(sum(r.failed for r in results)), f'{p99:.3f}',
            f'{answered / wall / (replicas or 1):.1f}']


def main(argv: list[str] | None = None) -> int:
    """Run the rows, print the table, record it."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--loops', type=int, default=32)
    parser.add_argument('--seconds', type=float, default=10.0)
    parser.add_argument('--replicas', type=int, nargs='+', default=[1, 2, 4])
    parser.add_argument('--no-record', action='store_true')
    args = parser.parse_args(argv)
    began = time.monotonic()
    rows = []
    for replicas in [None, *args.replicas]:
        rows.append(run_row(replicas, args.loops, args.seconds))
        print(' | '.join(rows[-1]), flush=True)
    table = '\n'.join(
        ['| serving | sequence breaks | lost requests | failed (typed) | p99 round trip (s) | '
         'requests/s per replica |', '|---|---:|---:|---:|---:|---:|']
        + ['| ' + ' | '.join(row) + ' |' for row in rows])
    body = header(command_line('bench.bench_fleet_ray', argv), time.monotonic() - began) \
        + f' {args.loops} loops, {MODEL} at time scale {SCALE:g}.\n\n' + table + '\n'
    print('\n' + body)
    if not args.no_record:
        write_results_section(REPO / 'bench' / 'RESULTS.md', '## Fleet on Ray Serve', body)
    return 1 if any(row[1] != '0' or row[2] != '0' for row in rows) else 0


if __name__ == '__main__':
    sys.exit(main())
