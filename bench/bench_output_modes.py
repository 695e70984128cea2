"""
The output-modes benchmark: the policy node's output modes against the simulated stock controllers.

Run: .venv/bin/python -m bench.bench_output_modes [--quick] [--repeats N] [--modes ...]
     [--rates 15 50] [--seed N] [--no-write | --write] [--results PATH]

For each output mode (trajectory_stream, trajectory_plan, forward_position as lines,
forward_position_steps: each step at once, forward_velocity) at 15 and 50 Hz, a real simulated
arm (sequence_ai_ros.sim.node, Kilted's controller rules and joint-limit enforcement, joint
states and physics at 200 Hz) and a real policy node (the shipped pi05_droid.yaml, the mode and
its controller set as the demo sets them) run against the local gateway (real time, warm,
steady latency), closed loop through the camera, while the disc the arm reaches for jumps
between two mirror-image places every 3 s. 15 Hz is pi05-droid itself; 50 Hz is a catalogue
entry that is pi05-droid in every respect (space, latency, 1.0 s chunks) but the rate: 50 steps
at 50 Hz. The gateway serves both through a plug-in (_output_modes_policy.py): the reference
policy's plan, which it makes at the same joint and tool speeds at any rate, with its noise
drawn on the 15 Hz grid and sampled from one smooth curve, so both rates get the same motion.
(The node's control_rate_hz would not do: it plays the 15 Hz steps at 50 Hz, so each chunk
lasts 0.3 s and moves 0.3 times as far, and the 0.78 s latency could never keep up.) Each run
is one episode: first a clean phase, then the node's process is stopped (SIGSTOP/SIGCONT) for
50, 100 and 200 ms while the arm moves; the tables put the two phases side by side, and the
stops per delay. Runs go one after another, the modes' order rotating from repeat to repeat. A
full run writes its section of bench/RESULTS.md (or --results); --quick (one repeat, shorter
phases) only prints, unless --write. Every process is on a private ROS domain, loopback only,
and is stopped at the end.
"""

import argparse
import json
from pathlib import Path
import secrets
import sys
import tempfile
import time

from sequence_ai_ros.gateway.catalogue import DEFAULT_CATALOGUE
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.child_processes import random_domain_id
from sequence_ai_ros.harness.proc_stats import busy_share, machine_jiffies

from ._output_modes_report import analyse, report, SECTION
from ._output_modes_run import run_once, RunResult, Setup, VARIANTS
from ._record import command_line, lower_priority, machine, provenance, write_results_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

MODES = ('trajectory_stream', 'trajectory_plan', 'forward_position', 'forward_position_steps',
         'forward_velocity')
BASE_MODEL = 'pi05-droid'
POLICY = 'bench._output_modes_policy:make_policy'
DELAYS_S = (0.05, 0.1, 0.2)
FULL = {'repeats': 3, 'clean_s': 9.0, 'stops_per_delay': 3}
QUICK = {'repeats': 1, 'clean_s': 6.0, 'stops_per_delay': 1}
RESULTS = HERE / 'RESULTS.md'


def rate_catalogue(path: Path, rates: list[float]) -> dict[float, str]:
    """Write a catalogue of pi05-droid at each rate (1.0 s chunks); return rate -> model."""
    data = json.loads(DEFAULT_CATALOGUE.read_text(encoding='utf-8'))
    base = next(m for m in data['models'] if m['name'] == BASE_MODEL)
    chunk_s = base['action_horizon'] / base['control_hz']
    names, models = {}, []
    for hz in rates:
        name = BASE_MODEL if hz == base['control_hz'] else f'{BASE_MODEL}-{hz:g}hz'
        models.append(dict(base, name=name, control_hz=hz, action_horizon=round(chunk_s * hz),
                           description=f'{BASE_MODEL} at {hz:g} Hz (bench only)'))
        names[hz] = name
    path.write_text(json.dumps(dict(data, models=models)), encoding='utf-8')
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    add = parser.add_argument
    add('--quick', action='store_true', help='one repeat, shorter phases (2-3 minutes)')
    add('--repeats', type=int, default=None, help=f'runs per mode and rate (default '
        f'{FULL["repeats"]}; --quick {QUICK["repeats"]})')
    # forward_position_steps is both a default mode and a variant: listed once.
    add('--modes', nargs='+', choices=tuple(dict.fromkeys(MODES + tuple(VARIANTS))),
        default=list(MODES),
        help='forward_position_250hz and _1000hz: the lines at another forward_output_rate_hz')
    add('--rates', nargs='+', type=float, default=[15.0, 50.0])
    add('--seed', type=int, default=1, help="the gateway's and the stops' seed")
    add('--results', type=Path, default=RESULTS)
    write = parser.add_mutually_exclusive_group()
    write.add_argument('--write', action='store_true', default=None,
                       help='update RESULTS.md even after --quick')
    write.add_argument('--no-write', dest='write', action='store_false', help='only print')
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run every mode at every rate, print the tables, write RESULTS.md for a full run."""
    args = parse_args(argv)
    plan = dict(QUICK if args.quick else FULL)
    if args.repeats:
        plan['repeats'] = args.repeats
    from sequence_ai_ros.harness.ros_side import RosSide

    began, busy_before = time.monotonic(), machine_jiffies()
    code = provenance()
    key = f'seq_bench_{secrets.token_hex(12)}'
    results: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix='bench-output-modes-') as tmp:
        catalogue = Path(tmp) / 'catalogue.json'
        models = rate_catalogue(catalogue, args.rates)
        gateway = GatewayProcess(['--time-scale', '1.0', '--start-warm', '--scenario', 'steady',
                                  '--catalogue', str(catalogue), '--seed', str(args.seed),
                                  '--policy', POLICY], keys={key: 10**6},
                                 import_paths=[REPO],
                                 startup_timeout_s=30.0)
        domain = random_domain_id()
        ros = None
        try:
            gateway.start()
            lower_priority(gateway.pid)
            ros = RosSide('bench_output_modes', domain)
            setup = Setup(ros, domain, gateway.base_url, key, Path(tmp), plan['clean_s'],
                          DELAYS_S * plan['stops_per_delay'], args.seed)
            total = plan['repeats'] * len(args.rates) * len(args.modes)
            for repeat in range(plan['repeats']):
                modes = args.modes[repeat % len(args.modes):] + \
                    args.modes[:repeat % len(args.modes)]
                for hz in args.rates:
                    for mode in modes:
                        print(f'[{len(results) + 1}/{total}] {mode} at {hz:g} Hz, repeat '
                              f'{repeat + 1}', flush=True)
                        result = run_once(setup, mode, hz, models[hz], repeat)
                        if result.failure:
                            print(f'  FAILED: {result.failure}', flush=True)
                        results.append(result)
        except KeyboardInterrupt:
            print('\ninterrupted: stopping every process', file=sys.stderr)
            return 130
        finally:
            if ros is not None:
                ros.close()
            gateway.close()
        rows = analyse(results)
    minutes = (time.monotonic() - began) / 60.0
    busy = busy_share(busy_before, machine_jiffies())
    text = report(rows, results, plan, command_line('bench.bench_output_modes', argv),
                  machine(), code, minutes, busy)
    print(text)
    write = args.write if args.write is not None else not args.quick
    if write:
        write_results_section(args.results, SECTION, text)
        print(f'\nwrote {args.results}')
    failed = [r for r in results if r.failure]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
