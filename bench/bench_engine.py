"""
The chunk engine's benchmark, its targets and the RTC targets: against the published client.

Run: .venv/bin/python -m bench.bench_engine [--quick] [--profiles NAME ...]
     [--scenarios steady heavy_tail step fast]
     [--loops naive published append aligned blended rtc] [--world circle|hops]
     [--chunks N] [--time-scale S] [--no-write | --write] [--markdown PATH] [--simulate SEEDS]

Six loops drive a kinematic arm through the local gateway (a real HTTP server, time-scaled),
one after another so they never disturb each other: a naive refill-when-empty loop, the
published sequence_ai 0.1.0 client's run() as shipped, and this project's run() in append and
time-aligned modes, time-aligned with a min-jerk seam blend, and real-time chunking (rtc).
Every catalogue profile meets every latency scenario; one gateway process serves each
scenario, except `step`, which gets a fresh gateway per run so that the latency doubles when
about half of that run's actions are done. Then the same engine, and a model of the published
client's loop, run on a simulated clock over several seeds: the loops without the machine (no
late ticks), to tell the engine's misses from the measurement's. The full run writes its
section of bench/RESULTS.md (a subset or --quick run only prints, unless --write).
"""

import argparse
import gc
from pathlib import Path
import sys
import time

from sequence_ai_ros.gateway.catalogue import load_catalogue, ModelProfile
from sequence_ai_ros.gateway.config import SCENARIOS
from sequence_ai_ros.gateway.process import GatewayProcess

from ._engine_loops import LOOPS, run_loop, RunSpec
from ._engine_report import (
    comparisons,
    definitions,
    measure,
    Row,
    rtc_targets,
    scenario_p99,
    SECTION,
    SIM_LOOPS,
    simulated_table,
    table,
    targets,
)
from ._engine_sim import SimRun, simulate_loop
from ._engine_world import Arm, render_frames, seam_rate, WORLDS
from ._record import (
    command_line,
    GATEWAY_NICE,
    lower_priority,
    machine,
    provenance,
    write_results_section,
)

HERE = Path(__file__).resolve().parent

DEFAULT_SCALE = 0.2
DEFAULT_CHUNKS = 20
QUICK_CHUNKS = 6
SIM_SEEDS = 8
KEY = 'seq_bench_engine'
RESULTS = HERE / 'RESULTS.md'


class Bench:
    """Runs the selected loops, profiles and scenarios and collects their rows."""

    def __init__(self, args: argparse.Namespace, profiles: list[ModelProfile]) -> None:
        self.args = args
        self.scale = args.time_scale
        self.profiles = profiles
        self.frames = render_frames(args.world)
        self.rows: list[Row] = []
        self.warnings: dict[str, set[str]] = {}
        self._startup_s: float | None = None  # a gateway's start-up, the slowest seen

    def gateway(self, scenario: str, extra: tuple[str, ...] = ()) -> GatewayProcess:
        """Make a gateway for one scenario (not yet started)."""
        return GatewayProcess(
            ['--time-scale', f'{self.scale:g}', '--scenario', scenario, '--start-warm',
             '--seed', str(self.args.seed), '--log-level', 'warning', *extra],
            keys={KEY: 10 ** 9})

    def actions(self, profile: ModelProfile) -> int:
        """Actions per run: the same for every loop on a profile."""
        return int(self.args.chunks * profile.action_horizon)

    def run_all(self) -> None:
        """Every scenario, profile and loop, in turn."""
        for scenario in self.args.scenarios:
            if scenario == 'step':
                for profile in self.profiles:
                    for loop in self.args.loops:
                        self._step_run(profile, loop)
                continue
            with self.gateway(scenario) as gateway:
                lower_priority(gateway.pid)
                for profile in self.profiles:
                    for loop in self.args.loops:
                        self._run(gateway.base_url, profile, scenario, loop)

    def _run(self, base_url: str, profile: ModelProfile, scenario: str, loop: str,
             step_at: float | None = None) -> None:
        arm = Arm(self.frames, profile.action_space, self.scale / profile.control_hz,
                  self.scale)
        spec = RunSpec(base_url, KEY, profile.name, self.actions(profile), arm,
                       self.args.max_inflight, seam_rate(profile.scaled(self.scale)))
        gc.collect()
        record = run_loop(loop, spec)
        row = measure(record, profile, scenario, self.scale, step_at)
        self.rows.append(row)
        for message in record.warnings:
            self.warnings.setdefault(message.split(':')[0], set()).add(
                f'{profile.name}/{scenario}/{loop}')
        self._progress(row, record.warnings)

    def _step_run(self, profile: ModelProfile, loop: str) -> None:
        """Make a fresh gateway whose latency doubles about halfway through this run."""
        # Wall time until half the actions are done, at the latency before the step: the
        # naive loop waits out every request; the others wait for the first one only.
        chunk_s, latency_s = profile.covers_seconds, profile.latency_median_s
        if loop == 'naive':
            half = self.args.chunks / 2 * (chunk_s + latency_s)
        else:
            half = latency_s + self.args.chunks / 2 * max(chunk_s, latency_s)
        half *= self.scale
        step_after = (self._startup_s or 3.0) + 0.5 + half
        gateway = self.gateway('step', ('--step-after-s', f'{step_after / self.scale:.3f}'))
        began = time.monotonic()
        with gateway:
            self._startup_s = max(self._startup_s or 0.0, time.monotonic() - began)
            lower_priority(gateway.pid)
            started = time.monotonic() - float(gateway.stats()['uptime_s'])
            step_at = started + step_after
            delay = step_at - half - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._run(gateway.base_url, profile, 'step', loop, step_at)

    def _progress(self, row: Row, warnings: list[str]) -> None:
        extra = ''
        if row.own_moving is not None:
            extra += f' (own account {100 * row.own_moving:.1f}%)'
        if row.stale is not None:
            extra += f' stale {row.stale}'
        if row.joins:
            extra += f' joins: {row.joins}'
        if row.step_fraction is not None:
            extra += f' step at {100 * row.step_fraction:.0f}%'
        seam = '-' if row.seam is None else f'{row.seam:.3f}'
        print(f'{row.profile:26} {row.scenario:10} {row.loop:9} moving '
              f'{100 * row.moving:5.1f}%{extra} underruns {row.underruns} '
              f'({row.underrun_s:.2f}s) seam {seam} age max {row.age_max:.2f}s '
              f'req/arm-s {row.requests_per_arm_s:.2f} [{row.elapsed_s:.1f}s wall]',
              flush=True)
        for message in warnings:
            print(f'    warning: {message}', flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Build the command line."""
    names = [p.name for p in load_catalogue().profiles]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--profiles', nargs='+', choices=names, default=names)
    parser.add_argument('--scenarios', nargs='+', choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument('--loops', nargs='+', choices=LOOPS, default=list(LOOPS))
    parser.add_argument('--chunks', type=int, default=None,
                        help=f'chunks of actions per run (default {DEFAULT_CHUNKS}; '
                        f'--quick {QUICK_CHUNKS})')
    parser.add_argument('--quick', action='store_true',
                        help=f'{QUICK_CHUNKS} chunks per run: a smoke run of the whole table')
    parser.add_argument('--time-scale', type=float, default=DEFAULT_SCALE,
                        help='gateway time scale (default %(default)s)')
    parser.add_argument('--max-inflight', type=int, default=3,
                        help="ours' max_inflight (default %(default)s)")
    parser.add_argument('--world', choices=WORLDS, default='circle',
                        help='target motion: circle (tracking, default) or hops (abrupt goal '
                        'changes every 3 model s)')
    parser.add_argument('--seed', type=int, default=0, help="the gateway's seed")
    parser.add_argument('--results', type=Path, default=RESULTS, help='RESULTS.md to update')
    parser.add_argument('--simulate', type=int, default=None, metavar='SEEDS',
                        help=f'simulated-clock runs per profile, scenario and loop (default '
                        f'{SIM_SEEDS}; --quick 2; 0 skips them)')
    parser.add_argument('--markdown', type=Path, default=None,
                        help='also write the section (as it would go into RESULTS.md) here')
    write = parser.add_mutually_exclusive_group()
    write.add_argument('--write', action='store_true', default=None,
                       help='update RESULTS.md even for a subset or --quick run')
    write.add_argument('--no-write', dest='write', action='store_false',
                       help='only print')
    args = parser.parse_args(argv)
    if args.chunks is None:
        args.chunks = QUICK_CHUNKS if args.quick else DEFAULT_CHUNKS
    if args.simulate is None:
        args.simulate = 2 if args.quick else SIM_SEEDS
    full = (not args.quick and args.chunks == DEFAULT_CHUNKS and args.world == 'circle'
            and args.simulate == SIM_SEEDS
            and len(args.profiles) == 4
            and len(args.scenarios) == len(SCENARIOS) and len(args.loops) == len(LOOPS))
    if args.write is None:
        args.write = full
    # Table order follows the catalogue and the scenario list, whatever the command line said.
    args.profiles = [n for n in names if n in args.profiles]
    args.scenarios = [s for s in SCENARIOS if s in args.scenarios]
    args.loops = [loop for loop in LOOPS if loop in args.loops]
    return args


def simulate(args: argparse.Namespace,
             profiles: list[ModelProfile]) -> dict[tuple[str, str, str], list[SimRun]]:
    """Run every loop on the simulated clock, `args.simulate` seeds each."""
    runs: dict[tuple[str, str, str], list[SimRun]] = {}
    for profile in profiles:
        for scenario in args.scenarios:
            for loop in SIM_LOOPS:
                runs[(profile.name, scenario, loop)] = [
                    simulate_loop(loop, profile, scenario, seed, args.chunks,
                                  args.max_inflight, args.world)
                    for seed in range(args.simulate)]
            moving = ', '.join(
                f'{loop} {100 * min(r.moving for r in runs[(profile.name, scenario, loop)]):.1f}%'
                for loop in SIM_LOOPS)
            print(f'simulated {profile.name:26} {scenario:10} worst moving: {moving}',
                  flush=True)
    return runs


def main(argv: list[str] | None = None) -> int:
    """Run the bench, print the table and verdicts, and update RESULTS.md for a full run."""
    args = parse_args(argv)
    began = time.monotonic()
    profiles = [p for p in load_catalogue().profiles if p.name in args.profiles]
    chunk_s = {p.name: p.covers_seconds for p in profiles}
    p99 = {(p.name, s): scenario_p99(p, s) for p in profiles for s in args.scenarios}
    print(f'chunk engine bench: time scale {args.time_scale:g}, {args.chunks} chunks per run, '
          f'{len(profiles)} profiles x {len(args.scenarios)} scenarios x {len(args.loops)} '
          'loops', flush=True)
    bench = Bench(args, profiles)
    bench.run_all()
    simulated = simulate(args, profiles) if args.simulate > 0 else {}
    order = {(p, s, lp): i for i, (p, s, lp) in enumerate(
        (p, s, lp) for p in args.profiles for s in args.scenarios for lp in args.loops)}
    rows = sorted(bench.rows, key=lambda r: order[(r.profile, r.scenario, r.loop)])
    runtime = time.monotonic() - began

    command = command_line('bench.bench_engine', argv)
    k = args.max_inflight
    p99_lines = ['| profile | chunk C (s) | aligned limit kC/(k+1) (s) | '
                 + ' | '.join(f'p99 {s}' for s in args.scenarios) + ' |',
                 '|---|---:|---:|' + '---:|' * len(args.scenarios)]
    for p in profiles:
        cells = ' | '.join(
            f'{p99[(p.name, s)]:.2f}' + (' *' if p99[(p.name, s)] < p.covers_seconds else '')
            for s in args.scenarios)
        limit = k * p.covers_seconds / (k + 1)
        p99_lines.append(f'| {p.name} | {p.covers_seconds:.2f} | {limit:.2f} | {cells} |')
    notes = [f'- `{k}`: {", ".join(sorted(v))}' for k, v in sorted(bench.warnings.items())]
    body = '\n\n'.join([
        f'Command: `{command}`  \nMachine: {machine()}  \nCode: {provenance()}  \n'
        f'Time scale: {args.time_scale:g} '
        '(the gateway multiplies every duration by it and divides control rates by it; '
        f'figures below are in model seconds). Target motion: {args.world}. The gateway '
        f'runs on the same machine at nice {GATEWAY_NICE}; the loops run one after another. '
        f'Runtime: {runtime / 60:.1f} min.',
        definitions(args.time_scale, args.chunks, args.max_inflight,
                    (min(args.time_scale / p.control_hz for p in profiles),
                     max(args.time_scale / p.control_hz for p in profiles))),
        table(rows),
        '### Comparisons (same run)\n\n' + '\n'.join(comparisons(rows, chunk_s)),
        "### Engine targets\n\nThe latency p99 of each scenario's distribution (sampled "
        "from the gateway's own sampler, model s; `*` = below the chunk, where the 99% target "
        'applies; `step` pools the halves before and after the doubling). Time-aligned '
        'joining with k requests in flight keeps up only while latency L <= kC/(k+1): a chunk '
        'yields C - L of motion and k requests complete per L.\n\n'
        + '\n'.join(p99_lines) + '\n\n' + '\n'.join(targets(rows, chunk_s, p99)),
        "### RTC targets (join='rtc')\n\nJudged where the scenario's p99 latency is "
        'below the chunk (`*` above); the seam is the joint jump on absolute profiles and '
        'the commanded-velocity jump on the others (rad/s); **own account** as above.\n\n'
        + '\n'.join(rtc_targets(rows, chunk_s, p99)),
        '### Warnings the runs raised (recorded, not printed)\n\n'
        + ('\n'.join(notes) if notes else 'None.'),
    ] + ([
        '### The same loops on a simulated clock\n\n'
        f'{args.simulate} runs per row, {args.chunks} chunks each, seeds 0-{args.simulate - 1} '
        "of the gateway's own latency sampler; the reference policy plans every chunk from "
        'the arm and target at the observation, as the live gateway does; ticks come exactly '
        'on time, so **moving** here is starvation only (the own-account figure, no late '
        "ticks). **published model**: its run()'s logic as its code reads (one request in "
        'flight, prefetch when the buffer is at most the latency EMA x 1.25 + one period, the '
        'next chunk taken once the buffer is empty), not the package itself. Ours: the real '
        f'ChunkEngine, max_inflight={args.max_inflight} (blended: smooth_seam=half the '
        "chunk's steps, blend='min_jerk', every ramp step a seam; rtc: the same, the planner "
        "given each request's prefix and its answers reporting it, as the gateway's do). "
        'Seams as above: rad on absolute profiles, rad/s of commanded velocity on the '
        'others.\n\n'
        + simulated_table(simulated),
    ] if simulated else []))
    print('\n' + body)
    if args.markdown is not None:
        args.markdown.write_text(f'{SECTION}\n\n{body.strip()}\n', encoding='utf-8')
        print(f'\nwrote {args.markdown}')
    if args.write:
        write_results_section(args.results, SECTION, body)
        print(f'\nwrote {args.results}')
    else:
        print('\n(subset or --quick run: RESULTS.md left alone; --write to update it)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
