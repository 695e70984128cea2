"""
The control-tick benchmark: the policy node's tick against a bare rclpy timer, per executor.

Run: .venv/bin/python -m bench.bench_control_tick [--seconds S | --quick] [--rates 15 50]
     [--executors single events] [--idle-seconds S] [--no-write | --write] [--results PATH]

The policy node (a real process with a params file, as the tests start it) publishes
JointTrajectory at each rate (`control_rate_hz`) while this script plays the robot over DDS
(by default as the simulated arm does: joint states at 100 Hz, two raw 320x240 camera frames
at 15 Hz) and the local gateway serves pi05-droid (warm, time scale 1.0, median latency 0.3 s,
so chunks keep arriving). Against it, at the same rates: a bare rclpy node in its own process
whose timer publishes the same JointTrajectory message and does nothing else, the limit on
this machine. Each publisher runs once per executor (SEQUENCE_AI_ROS_EXECUTOR: `single`, the
SingleThreadedExecutor, before; `events`, rclpy's EventsExecutor, after), and each node run
first measures the node configured but not active. Runs go one after another, the executors'
order alternating from rate to rate; one recorder process (on the single-threaded executor
throughout), subscribed with a reliable QoS, stamps every receipt for all of them, so DDS
delivery jitter is in every row. Every process gets a private ROS domain, localhost only, and
is stopped at the end (also on Ctrl-C). The default run writes its section of
bench/RESULTS.md (or --results); --quick (10 s per run) only prints, unless --write.
"""

import argparse
from collections.abc import Callable
import importlib.util
import os
from pathlib import Path
import sys
import tempfile
import time
from typing import Any, TypeVar

from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.child_processes import ChildProcess, random_domain_id, ros_environment
from sequence_ai_ros.harness.proc_stats import CpuWindow
from sequence_ai_ros.harness.robot import Robot
from sequence_ai_ros.harness.ros_side import RosSide
from sequence_ai_ros.world import arm_model
import yaml

from ._record import (
    add_results_options,
    command_line,
    GATEWAY_NICE,
    header,
    lower_priority,
    print_and_write,
)
from ._tick_report import read_record, report, Run
from ._tick_roles import NAMES, TOPIC

HERE = Path(__file__).resolve().parent

DEFAULT_SECONDS = 40.0
QUICK_SECONDS = 10.0
DEFAULT_IDLE_SECONDS = 15.0
QUICK_IDLE_SECONDS = 5.0
WARMUP_S = 3.0  # after the first command: discovery, first chunk, timer settled
SETTLE_S = 2.0  # after configure: the first frames and diagnostics are through
EXECUTORS = ('single', 'events')  # before, after
EXECUTOR_ENV = 'SEQUENCE_AI_ROS_EXECUTOR'
RECORDER_EXECUTOR = 'single'  # the instrument stays the same for every row
KEY = 'seq_bench_control_tick_key_00001'
LATENCY_S = 0.3
RESULTS = HERE / 'RESULTS.md'
WIDE_LIMIT_RAD = 1000.0
SECTION = '## Control tick'
T = TypeVar('T')


class Bench:
    """Owns every process the bench starts, and stops them all."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        domain = os.environ.get('BENCH_TICK_DOMAIN') or str(random_domain_id())
        self.env = ros_environment(int(domain), {'BENCH_TICK_DOMAIN': domain})
        # The robot side runs in this process: the same private domain as the children.
        os.environ.update({k: v for k, v in self.env.items() if k.startswith(('ROS_', 'BENCH_'))})
        self.tmp = tempfile.TemporaryDirectory(prefix='bench_tick_')
        self.record = os.path.join(self.tmp.name, 'record.txt')
        self.children: list[ChildProcess] = []
        self.gateway: GatewayProcess | None = None
        self.ros: RosSide | None = None  # the robot side's node, spun in this process
        self.robot: Robot | None = None  # the robot of the node run going on
        self.runs: list[Run] = []
        self.topics: list[str] = []
        self.plan()

    def plan(self) -> None:
        """Plan every run, in the order they go (`add` each)."""
        args = self.args
        for i, rate in enumerate(args.rates):
            # Alternate which executor goes first, so a drift in the machine's load over the
            # run does not always land on the same one.
            order = args.executors if i % 2 == 0 else args.executors[::-1]
            for kind in ('bare', 'node'):
                for executor in order:
                    self.add(kind, executor, rate)

    def add(self, kind: str, executor: str, rate: float, label: str = '') -> Run:
        """Plan a run (in order) with its recorder topic; kind 'bare' or a policy node."""
        run = Run(kind, executor, rate, len(self.topics), label)
        self.runs.append(run)
        self.topics.append(f'/{self.namespace(run)}/{TOPIC}')
        return run

    @staticmethod
    def namespace(run: Run) -> str:
        return f'tick_{run.label or run.kind}_{run.executor}_{run.rate:g}'.replace('.', '_')

    def node_params(self, run: Run) -> dict[str, object]:
        """Return parameters over the bench's own for a node run: its episodes stay in tmp."""
        return {'record_dir': os.path.join(self.tmp.name, 'episodes', self.namespace(run))}

    def spawn(self, name: str, module: str, args: list[str], executor: str,
              extra_env: dict[str, str] | None = None) -> ChildProcess:
        env = dict(self.env, **(extra_env or {}), **{EXECUTOR_ENV: executor})
        child = ChildProcess(name, module, args, env, Path(self.tmp.name) / f'{name}.log')
        self.children.append(child)
        return child

    def log(self, name: str) -> str:
        path = Path(self.tmp.name) / f'{name}.log'
        return path.read_text(errors='replace') if path.exists() else ''

    def close(self) -> None:
        for child in reversed(self.children):
            child.stop(10.0)
        if self.gateway is not None:
            self.gateway.close()
        if self.robot is not None:
            self.robot.close()
        if self.ros is not None:
            self.ros.close()
        self.tmp.cleanup()

    def first_receipt(self, index: int, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # The recorder may still be starting (a bare timer runs first).
            commands = read_record(self.record)[0] if os.path.exists(self.record) else {}
            if commands.get(index):
                return commands[index][0][0]
            time.sleep(0.1)
        return None

    def measure(self, run: Run, child: ChildProcess) -> None:
        if self.first_receipt(run.index, 30.0) is None:
            raise RuntimeError(f'{child.name}: no command received within 30 s:\n'
                               f'{self.log(child.name)}')
        time.sleep(WARMUP_S)
        window = CpuWindow(child.proc.pid)
        run.t0 = window.t0
        time.sleep(self.args.seconds)
        _, run.cpu, run.cpu_main, run.busy = window.close()
        run.t1 = time.monotonic()
        if not child.running():
            run.note = f'exited with {child.proc.returncode}'

    def run_node(self, run: Run) -> None:
        ns = self.namespace(run)
        assert self.ros is not None
        self.gateway = self.fresh_gateway()
        # It holds still at home, commands unheard: the node's publisher serves the recorder.
        robot = self.robot = Robot(
            self.ros.node, ns, joint_rate_hz=self.args.joint_rate,
            camera_rate_hz=self.args.camera_rate, frame_size=self.args.camera_size,
            watch_commands=False)
        params = {
            'model': 'pi05-droid', 'base_url': self.gateway.base_url,
            'joint_names': list(arm_model.JOINT_NAMES),
            'gripper_joint': arm_model.GRIPPER_JOINT,
            'camera_views': ['exterior_1', 'wrist'],
            'camera_topics': ['camera/exterior/image_raw', 'camera/wrist/image_raw'],
            'camera_transports': ['raw', 'raw'], 'instruction': 'reach the red disc',
            'control_rate_hz': float(run.rate), 'max_actions': 1_000_000,
            # The robot side holds still, so integrated velocity actions drift: limits wide
            # enough that no run ends on them (the tick's work is the same).
            'position_limits.lower': [-WIDE_LIMIT_RAD] * len(NAMES),
            'position_limits.upper': [WIDE_LIMIT_RAD] * len(NAMES),
            'max_step_change': 0.5, 'hold_service': 'robot/hold',
            # The tick as measured so far; the robot side has no gripper controller of its own.
            'output_mode': 'trajectory_stream', 'gripper_interface': 'with_arm',
        }
        params.update(self.node_params(run))
        path = os.path.join(self.tmp.name, f'{ns}.yaml')
        with open(path, 'w') as handle:
            yaml.safe_dump({'/**': {'ros__parameters': params}}, handle)
        child = self.spawn(ns, 'sequence_ai_ros.node.main',
                           ['--ros-args', '-r', f'__ns:=/{ns}', '--params-file', path],
                           run.executor, {'SEQUENCES_API_KEY': KEY})
        try:
            if not robot.configure():
                raise RuntimeError(f'configure failed:\n{self.log(ns)}')
            time.sleep(SETTLE_S)
            window = CpuWindow(child.proc.pid)
            time.sleep(self.args.idle_seconds)
            _, run.idle_cpu, run.idle_main, _ = window.close()
            if not robot.activate():
                raise RuntimeError(f'activate failed:\n{self.log(ns)}')
            self.measure(run, child)
        finally:
            child.stop(10.0)
            robot.close()
            self.robot = None
            ended = [line.split('episode ended: ', 1)[1].strip() for line in
                     self.log(ns).splitlines() if 'episode ended: ' in line]
            if ended and 'shutdown' not in ended[0]:
                run.note = f'episode ended: {ended[0]}'

    def fresh_gateway(self) -> GatewayProcess:
        """Start a gateway, replacing the last one: every node run sees the same draws."""
        # The gateway's latency draws come from one seeded generator: shared across runs, the
        # underruns a run meets would depend on its place in the order, not on its executor.
        if self.gateway is not None:
            self.gateway.close()
            self.gateway = None
        gateway = GatewayProcess(
            ['--time-scale', '1.0', '--start-warm', '--latency-median-s', str(LATENCY_S),
             '--seed', '0', '--log-level', 'warning'], keys={KEY: 10 ** 9}, env=self.env)
        gateway.start()
        lower_priority(gateway.pid)
        return gateway

    def run_bare(self, run: Run) -> None:
        child = self.spawn(self.namespace(run), 'bench._tick_roles',
                           ['bare', self.topics[run.index], str(run.rate)], run.executor)
        try:
            self.measure(run, child)
        finally:
            child.stop(10.0)

    def run_and_report(self, name: str, detail: str, report: Callable[[Any], T]) -> T | None:
        """
        Say what runs, run every planned run, stop every process; return report(self).

        `name` and `detail` go into the first line (after the rates); None on Ctrl-C.
        """
        args = self.args
        print(f'{name} bench: rates {", ".join(f"{r:g}" for r in args.rates)} Hz{detail}, '
              f'{args.seconds:g} s per run, ROS_DOMAIN_ID {self.env["ROS_DOMAIN_ID"]}',
              flush=True)
        try:
            self.run()
            return report(self)
        except KeyboardInterrupt:
            print('interrupted: stopping every process')
            return None
        finally:
            self.close()

    def run(self) -> None:
        self.spawn('recorder', 'bench._tick_roles', ['recorder', self.record, *self.topics],
                   RECORDER_EXECUTOR)
        self.ros = RosSide('bench_robot')
        for run in self.runs:
            idle = f' (+{self.args.idle_seconds:g} s idle)' if run.kind != 'bare' else ''
            print(f'{run.label or run.kind} on {run.executor} at {run.rate:g} Hz for '
                  f'{self.args.seconds:g} s{idle} ...', flush=True)
            (self.run_bare if run.kind == 'bare' else self.run_node)(run)
        time.sleep(0.5)  # the last receipts reach the file


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=None,
                        help=f'measured seconds per run (default {DEFAULT_SECONDS:g}; '
                        f'--quick {QUICK_SECONDS:g})')
    parser.add_argument('--quick', action='store_true',
                        help=f'{QUICK_SECONDS:g} s per run')
    parser.add_argument('--rates', type=float, nargs='+', default=[15.0, 50.0],
                        help='control rates in Hz (default 15 50)')
    parser.add_argument('--executors', nargs='+', choices=EXECUTORS, default=list(EXECUTORS),
                        help='executors to compare, before first (default: single events)')
    parser.add_argument('--idle-seconds', type=float, default=None,
                        help='seconds the policy node is measured configured but not active '
                        f'(default {DEFAULT_IDLE_SECONDS:g}; --quick {QUICK_IDLE_SECONDS:g})')
    parser.add_argument('--joint-rate', type=float, default=100.0,
                        help='joint_states rate the robot side publishes (default 100, as the '
                        'simulated arm)')
    parser.add_argument('--camera-rate', type=float, default=15.0,
                        help='rate of each of the two camera topics (default 15)')
    parser.add_argument('--camera-size', type=lambda v: tuple(int(n) for n in v.split('x')),
                        default=(320, 240), help='camera frame WIDTHxHEIGHT (default 320x240)')
    add_results_options(parser, RESULTS, 'Control tick')
    args = parser.parse_args(argv)
    if args.seconds is None:
        args.seconds = QUICK_SECONDS if args.quick else DEFAULT_SECONDS
    if args.idle_seconds is None:
        args.idle_seconds = QUICK_IDLE_SECONDS if args.quick else DEFAULT_IDLE_SECONDS
    args.executors = list(dict.fromkeys(args.executors))
    if args.write is None:
        args.write = args.seconds >= DEFAULT_SECONDS
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the bench, print the tables and the ratios, and update RESULTS.md for a full run."""
    args = parse_args(argv)
    began = time.monotonic()
    missing = ''
    if 'events' in args.executors and importlib.util.find_spec('rclpy.experimental') is None:
        # The node would fall back to single: two rows would measure the same thing.
        args.executors.remove('events')
        missing = ' This rclpy has no EventsExecutor: only the single-threaded executor ran.'
        print(missing.strip())
    if not args.executors:
        return 2
    tables = Bench(args).run_and_report(
        'control tick', f', executors {", ".join(args.executors)}', report)
    if tables is None:
        return 130
    table, before_after, limit, near = tables
    runtime = time.monotonic() - began
    command = command_line('bench.bench_control_tick', argv)
    width, height = args.camera_size
    before, after = (args.executors + args.executors)[:2]
    sections = [
        header(command, runtime),
        f'Each publisher runs once per executor, chosen by `{EXECUTOR_ENV}`: **single** = '
        "rclpy's SingleThreadedExecutor (before), **events** = rclpy's EventsExecutor "
        '(`rclpy.experimental`, after), both spun by `sequence_ai_ros.runtime.spin`.'
        + missing + ' '
        f'Each run measures {args.seconds:g} s after {WARMUP_S:g} s of warm-up from the first '
        'command received; runs go one after another, bare timers first, and the executors '
        'swap order from one rate to the next. **policy node**: '
        '`python -m sequence_ai_ros.node.main` with `control_rate_hz` at the rate, pi05-droid '
        'through the local gateway (time scale 1.0, `--start-warm`, median latency '
        f'{LATENCY_S:g} s, nice {GATEWAY_NICE}; a fresh one with seed 0 for each node run, so '
        'every node meets the same latency draws), max_actions 1,000,000, prefetch on, each '
        "episode recorded (the node's default) into the bench's temporary directory; this "
        f'script plays the robot (joint states {args.joint_rate:g} Hz, two raw '
        f'{width}x{height} camera frames {args.camera_rate:g} Hz, as the simulated arm '
        'publishes by default, and the hold service) during every node run, and holds the arm '
        'still at home (so the velocity actions integrate freely: position limits are set to '
        f'+-{WIDE_LIMIT_RAD:g} rad, which no run reaches). Before activating, each node is '
        f'measured for {args.idle_seconds:g} s configured but not active ({SETTLE_S:g} s after '
        'configure): its subscriptions and diagnostics timer only. **bare rclpy timer**: a '
        'node in its own process whose timer only builds and publishes the same one-point '
        'JointTrajectory (stream_trajectory, 8 joints). One recorder process (reliable QoS, '
        f'depth 100, on the {RECORDER_EXECUTOR} executor in every run) stamps every receipt '
        'with time.monotonic(). **jitter** = |receipt period - nominal period|; **holds** = '
        'commands with all velocities zero (underruns), after each of which the node sends '
        'nothing until the next chunk lands: one long period, which **underrun gaps left '
        "out** drops (the periods that begin with a hold); **CPU share** = the process's "
        'utime+stime over the window / wall time (100% = one core); **main thread** = the same '
        'for the thread that runs the executor and every callback (DDS and the request '
        'workers are the rest); **machine busy** = all cores over the window, from /proc/stat, '
        f'other processes included (100% = all {os.cpu_count()} cores): the machine is shared, '
        'and tails of jitter move with it.',
        table,
    ]
    if before_after:
        sections.append(f'### Before ({before}) / after ({after}), same run\n\n' + before_after)
    sections += [
        '### Node / bare, on the same executor\n\n' + limit,
        '### Jitter near chunk arrivals (policy node)\n\nA period is "near a chunk" when it '
        "ends within 100 ms after (or 20 ms before) the recorder received one of the node's "
        '`~/chunks` events, which the node publishes from the tick that takes in a new '
        'chunk.\n\n' + near,
    ]
    print_and_write(sections, args.results, SECTION, args.write)
    return 0


if __name__ == '__main__':
    sys.exit(main())
