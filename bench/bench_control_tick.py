"""
Issue #8's benchmark: the policy node's control tick against a bare rclpy timer, per executor.

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
import importlib.util
import os
from pathlib import Path
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.world import arm_model

from ._record import (
    command_line,
    GATEWAY_NICE,
    lower_priority,
    machine,
    provenance,
    write_results_section,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

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
TOPIC = 'joint_trajectory_controller/joint_trajectory'
NAMES = list(arm_model.JOINT_NAMES) + [arm_model.GRIPPER_JOINT]


def ros_env() -> dict[str, str]:
    """Return this process's environment with a private, localhost-only ROS domain."""
    env = dict(os.environ)
    env['ROS_DOMAIN_ID'] = os.environ.get('BENCH_TICK_DOMAIN') or str(
        random.SystemRandom().randint(1, 100))
    env['BENCH_TICK_DOMAIN'] = env['ROS_DOMAIN_ID']
    env['ROS_LOCALHOST_ONLY'] = '1'  # Humble
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'  # Jazzy and later
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    env['PYTHONUNBUFFERED'] = '1'
    return env


def reliable_qos(depth: int = 100):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)


# -- child roles ------------------------------------------------------------------------------

def run_recorder(topics: list[str], out: str) -> int:
    """
    Stamp every JointTrajectory on `topics` (and chunk events) into `out`, until a signal.

    Lines: `<topic index> <monotonic s> <1 if hold>` and `c<topic index> <monotonic s>`.
    """
    import rclpy
    from sequence_ai_ros.runtime.spin import init, shutdown, spin_until_shutdown
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory
    init()
    node = rclpy.create_node('tick_recorder')
    handle = open(out, 'w', buffering=1)

    def on_command(msg, index):
        now = time.monotonic()
        hold = not msg.points or all(v == 0.0 for v in msg.points[0].velocities)
        handle.write(f'{index} {now:.9f} {int(hold)}\n')

    def on_chunk(msg, index):
        handle.write(f'c{index} {time.monotonic():.9f}\n')

    for i, topic in enumerate(topics):
        node.create_subscription(JointTrajectory, topic,
                                 lambda msg, i=i: on_command(msg, i), reliable_qos())
        ns = topic.rsplit('/' + TOPIC, 1)[0]
        node.create_subscription(String, f'{ns}/policy_node/chunks',
                                 lambda msg, i=i: on_chunk(msg, i), reliable_qos())
    try:
        spin_until_shutdown(node)
    finally:
        handle.close()
        node.destroy_node()
        shutdown()
    return 0


def run_bare(topic: str, rate: float) -> int:
    """Publish the node's kind of one-point JointTrajectory at `rate` from a bare timer."""
    import rclpy
    from sequence_ai_ros.node.arm_output import stream_trajectory
    from sequence_ai_ros.runtime.spin import init, shutdown, spin_until_shutdown
    from trajectory_msgs.msg import JointTrajectory
    init()
    node = rclpy.create_node('bare_tick')
    pub = node.create_publisher(JointTrajectory, topic, reliable_qos(10))
    home = [float(v) for v in arm_model.HOME] + [0.0]
    step = [0]

    def tick():
        step[0] += 1
        wiggle = 1e-4 * (step[0] % 100)
        pub.publish(stream_trajectory(NAMES, [p + wiggle for p in home], 1.0 / rate))

    node.create_timer(1.0 / rate, tick)
    try:
        spin_until_shutdown(node)
    finally:
        node.destroy_node()
        shutdown()
    return 0


# -- the robot side (this process) -----------------------------------------------------------

class Robot:
    """Joint states and camera frames out, the hold service, the lifecycle clients."""

    def __init__(self, joint_rate: float, camera_rate: float, size: tuple[int, int]) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import Image, JointState
        from sequence_ai_ros.sim.render import SceneRenderer
        self.rclpy = rclpy
        try:
            from rclpy.signals import SignalHandlerOptions
            self.context = rclpy.Context()
            rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        except ImportError:
            self.context = rclpy.Context()
            rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_robot', context=self.context)
        self.positions = [float(v) for v in arm_model.HOME] + [0.0]
        self._JointState = JointState
        self._pubs = {}
        self._frames = []
        renderer = SceneRenderer(*size)
        q = tuple(self.positions[:7])
        for render in (renderer.exterior, renderer.wrist):
            pixels = render(q, (0.5, 0.2))
            self._frames.append(Image(height=pixels.shape[0], width=pixels.shape[1],
                                      encoding='rgb8', step=pixels.shape[1] * 3,
                                      data=pixels.tobytes()))
        self._sensor_qos = qos_profile_sensor_data
        self._services = {}
        self.change_client: Any = None
        self.node.create_timer(1 / joint_rate, self._send_joints)
        self.node.create_timer(1 / camera_rate, self._send_frames)
        # Not rclpy 9.1's MultiThreadedExecutor: it piles up duplicate handlers and stalls the
        # process for up to a second (test/ros_harness.py), and the node would hold on it.
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._running = True
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self._running and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001
                print(f'robot callback raised: {type(exc).__name__}: {exc}')

    def attach(self, ns: str) -> None:
        """Serve namespace `ns`: sensors, hold service, lifecycle clients."""
        from lifecycle_msgs.srv import ChangeState
        from sensor_msgs.msg import Image, JointState
        from std_srvs.srv import Trigger
        node = self.node
        self._pubs[ns] = (
            node.create_publisher(JointState, f'/{ns}/joint_states', self._sensor_qos),
            [node.create_publisher(Image, f'/{ns}/camera/{view}/image_raw', self._sensor_qos)
             for view in ('exterior', 'wrist')])

        def on_hold(request, response):
            response.success, response.message = True, 'holding'
            return response

        self._services[ns] = node.create_service(Trigger, f'/{ns}/robot/hold', on_hold)
        self.change_client = node.create_client(ChangeState,
                                                f'/{ns}/policy_node/change_state')

    def detach(self, ns: str) -> None:
        """Stop publishing to `ns`, so later runs do not pay for its sensors."""
        # Only forgotten, not destroyed: destroying entities the spinning thread may be
        # waiting on races it, and an idle publisher or service costs nothing.
        del self._pubs[ns]

    def _send_joints(self) -> None:
        for joints, _ in list(self._pubs.values()):
            msg = self._JointState(name=NAMES, position=list(self.positions))
            msg.header.stamp = self.node.get_clock().now().to_msg()
            joints.publish(msg)

    def _send_frames(self) -> None:
        for _, cameras in list(self._pubs.values()):
            for pub, msg in zip(cameras, self._frames):
                pub.publish(msg)

    def transition(self, transition_id: int, timeout: float = 20.0) -> bool:
        """Change the attached node's lifecycle state; whether it took."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState
        from sequence_ai_ros.harness.service_calls import call_service
        assert self.change_client is not None
        request = ChangeState.Request()
        request.transition = Transition(id=transition_id)
        return bool(call_service(self.change_client, request, timeout).success)

    def close(self) -> None:
        self._running = False
        self._thread.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.context)


# -- measuring --------------------------------------------------------------------------------

def cpu_seconds(pid: int, main_thread: bool = False) -> float:
    """Utime + stime of a process (or of its main thread: executor and callbacks), in s."""
    path = f'/proc/{pid}/task/{pid}/stat' if main_thread else f'/proc/{pid}/stat'
    fields = Path(path).read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def machine_ticks() -> tuple[int, int]:
    """Return (busy, total) jiffies of all cores since boot, from /proc/stat."""
    fields = [int(v) for v in Path('/proc/stat').read_text().split('\n', 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class CpuWindow:
    """CPU time of a process and its main thread, and how busy the machine was, in a window."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.t0 = time.monotonic()
        self.cpu0, self.main0 = cpu_seconds(pid), cpu_seconds(pid, main_thread=True)
        self.machine0 = machine_ticks()

    def close(self) -> tuple[float, float, float, float]:
        """Return (wall s, CPU share, main thread's share, machine busy) since it opened."""
        wall = time.monotonic() - self.t0
        cpu, main = cpu_seconds(self.pid), cpu_seconds(self.pid, main_thread=True)
        busy, total = (b - a for a, b in zip(self.machine0, machine_ticks()))
        return (wall, (cpu - self.cpu0) / wall, (main - self.main0) / wall,
                busy / total if total else float('nan'))


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

    def __init__(self, kind: str, executor: str, rate: float, index: int) -> None:
        self.kind, self.executor, self.rate, self.index = kind, executor, rate, index
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


class Bench:
    """Owns every process the bench starts, and stops them all."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.env = ros_env()
        os.environ.update({k: self.env[k] for k in (
            'ROS_DOMAIN_ID', 'BENCH_TICK_DOMAIN', 'ROS_LOCALHOST_ONLY',
            'ROS_AUTOMATIC_DISCOVERY_RANGE')})
        self.tmp = tempfile.TemporaryDirectory(prefix='bench_tick_')
        self.record = os.path.join(self.tmp.name, 'record.txt')
        self.procs: list[subprocess.Popen] = []
        self.logs: list = []
        self.gateway: GatewayProcess | None = None
        self.robot: Robot | None = None
        self.runs: list[Run] = []
        self.topics: list[str] = []
        for i, rate in enumerate(args.rates):
            # Alternate which executor goes first, so a drift in the machine's load over the
            # run does not always land on the same one.
            order = args.executors if i % 2 == 0 else args.executors[::-1]
            for kind in ('bare', 'node'):
                for executor in order:
                    run = Run(kind, executor, rate, len(self.topics))
                    self.runs.append(run)
                    self.topics.append(f'/{self.namespace(run)}/{TOPIC}')

    @staticmethod
    def namespace(run: Run) -> str:
        return f'tick_{run.kind}_{run.executor}_{run.rate:g}'.replace('.', '_')

    def spawn(self, name: str, cmd: list[str], executor: str,
              extra_env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(os.path.join(self.tmp.name, f'{name}.log'), 'wb')
        self.logs.append(log)
        env = dict(self.env, **(extra_env or {}))
        env[EXECUTOR_ENV] = executor
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        path = os.path.join(self.tmp.name, f'{name}.log')
        return Path(path).read_text(errors='replace') if os.path.exists(path) else ''

    @staticmethod
    def stop(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def close(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc)
        if self.gateway is not None:
            self.gateway.close()
        if self.robot is not None:
            self.robot.close()
        for log in self.logs:
            log.close()
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

    def measure(self, run: Run, proc: subprocess.Popen, name: str) -> None:
        if self.first_receipt(run.index, 30.0) is None:
            raise RuntimeError(f'{name}: no command received within 30 s:\n{self.log(name)}')
        time.sleep(WARMUP_S)
        window = CpuWindow(proc.pid)
        run.t0 = window.t0
        time.sleep(self.args.seconds)
        _, run.cpu, run.cpu_main, run.busy = window.close()
        run.t1 = time.monotonic()
        if proc.poll() is not None:
            run.note = f'exited with {proc.returncode}'

    def run_node(self, run: Run) -> None:
        from lifecycle_msgs.msg import Transition
        import yaml
        ns = self.namespace(run)
        assert self.robot is not None
        self.gateway = self.fresh_gateway()
        self.robot.attach(ns)
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
        }
        path = os.path.join(self.tmp.name, f'{ns}.yaml')
        with open(path, 'w') as handle:
            yaml.safe_dump({'/**': {'ros__parameters': params}}, handle)
        proc = self.spawn(ns, [sys.executable, '-m', 'sequence_ai_ros.node.main', '--ros-args',
                               '-r', f'__ns:=/{ns}', '--params-file', path], run.executor,
                          {'SEQUENCES_API_KEY': KEY})
        try:
            if not self.robot.transition(Transition.TRANSITION_CONFIGURE):
                raise RuntimeError(f'configure failed:\n{self.log(ns)}')
            time.sleep(SETTLE_S)
            window = CpuWindow(proc.pid)
            time.sleep(self.args.idle_seconds)
            _, run.idle_cpu, run.idle_main, _ = window.close()
            if not self.robot.transition(Transition.TRANSITION_ACTIVATE):
                raise RuntimeError(f'activate failed:\n{self.log(ns)}')
            self.measure(run, proc, ns)
        finally:
            self.stop(proc)
            self.robot.detach(ns)
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
        name = self.namespace(run)
        proc = self.spawn(name, [sys.executable, str(Path(__file__).resolve()), '--role',
                                 'bare', '--topic', self.topics[run.index],
                                 '--rate', str(run.rate)], run.executor)
        try:
            self.measure(run, proc, name)
        finally:
            self.stop(proc)

    def run(self) -> None:
        self.spawn('recorder', [sys.executable, str(Path(__file__).resolve()), '--role',
                                'recorder', '--out', self.record, '--topic', *self.topics],
                   RECORDER_EXECUTOR)
        self.robot = Robot(self.args.joint_rate, self.args.camera_rate, self.args.camera_size)
        for run in self.runs:
            idle = f' (+{self.args.idle_seconds:g} s idle)' if run.kind == 'node' else ''
            print(f'{run.kind} on {run.executor} at {run.rate:g} Hz for {self.args.seconds:g} s'
                  f'{idle} ...', flush=True)
            (self.run_node if run.kind == 'node' else self.run_bare)(run)
        time.sleep(0.5)  # the last receipts reach the file


def pct(value: float) -> str:
    return '-' if value != value else f'{100 * value:.1f}%'


def ratio(after: float, before: float) -> str:
    return f'{after / before:.2f}x' if before and after == after else '-'


def report(bench: Bench) -> tuple[str, ...]:
    """Return the markdown tables: every run, before/after, node against bare, near chunks."""
    commands, chunks = read_record(bench.record)
    stats = {r.key: r.stats(commands, chunks) for r in bench.runs}
    rates, executors = bench.args.rates, bench.args.executors
    lines = ['| publisher | executor | rate (Hz) | jitter p50 / p99 / max (ms) | mean period (ms) '
             '| received / expected | holds | CPU share [main thread] | configured, idle: '
             'CPU share [main thread] | machine busy |',
             '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in bench.runs:
        s = stats[r.key]
        who = 'policy node' if r.kind == 'node' else 'bare rclpy timer'
        note = f' ({r.note})' if r.note else ''
        idle = f'{pct(s["idle_cpu"])} [{pct(s["idle_main"])}]' if r.kind == 'node' else '-'
        lines.append(f'| {who}{note} | {r.executor} | {r.rate:g} | {s["p50"]:.2f} / '
                     f'{s["p99"]:.2f} / {s["max"]:.2f} | {s["mean_period_ms"]:.2f} | '
                     f'{s["received"]} / {s["expected"]:.0f} | {s["holds"]} | '
                     f'{pct(s["cpu"])} [{pct(s["cpu_main"])}] | {idle} | {pct(s["busy"])} |')

    before_after = ''
    if len(executors) == 2:
        old, new = executors
        head = ['| |'] + [f' {rate:g} Hz: {old} | {new} | {new} / {old} |' for rate in rates]
        rule = '|---|' + '---:|---:|---:|' * len(rates)
        rows = []
        for label, kind, field, show in (
                ('policy node: jitter p50 (ms)', 'node', 'p50', lambda v: f'{v:.2f}'),
                ('policy node: jitter p99 (ms)', 'node', 'p99', lambda v: f'{v:.2f}'),
                ('policy node: jitter max (ms)', 'node', 'max', lambda v: f'{v:.2f}'),
                ('policy node: jitter max, underrun gaps left out (ms)', 'node',
                 'max_ticking', lambda v: f'{v:.2f}'),
                ('policy node: CPU share, running', 'node', 'cpu', pct),
                ('policy node: main thread, running', 'node', 'cpu_main', pct),
                ('policy node: CPU share, configured, idle', 'node', 'idle_cpu', pct),
                ('policy node: main thread, configured, idle', 'node', 'idle_main', pct),
                ('policy node: holds', 'node', 'holds', str),
                ('bare timer: jitter p99 (ms)', 'bare', 'p99', lambda v: f'{v:.2f}'),
                ('bare timer: jitter max (ms)', 'bare', 'max', lambda v: f'{v:.2f}'),
                ('bare timer: CPU share', 'bare', 'cpu', pct)):
            cells = []
            for rate in rates:
                a, b = stats[(kind, old, rate)][field], stats[(kind, new, rate)][field]
                shown = '-' if field == 'holds' else ratio(b, a)
                cells.append(f' {show(a)} | {show(b)} | {shown} |')
            rows.append(f'| {label} |' + ''.join(cells))
        before_after = '\n'.join([''.join(head), rule, *rows])

    limit = ['| rate (Hz) | executor | p99 jitter node / bare | CPU node / bare |',
             '|---:|---|---:|---:|']
    near = ['| rate (Hz) | executor | chunks received | p99 jitter, periods ending near a chunk '
            '/ elsewhere (ms) | worst 1% of periods near a chunk |', '|---:|---|---:|---:|---:|']
    for rate in rates:
        for executor in executors:
            n, b = stats[('node', executor, rate)], stats[('bare', executor, rate)]
            limit.append(f'| {rate:g} | {executor} | {ratio(n["p99"], b["p99"])} | '
                         f'{ratio(n["cpu"], b["cpu"])} |')
            near.append(f'| {rate:g} | {executor} | {n["chunks"]} | {n["p99_near"]:.2f} / '
                        f'{n["p99_far"]:.2f} | {100 * n["near_chunk_worst"]:.0f}% |')
    return '\n'.join(lines), before_after, '\n'.join(limit), '\n'.join(near)


def write_section(path: Path, body: str) -> None:
    """Replace (or add) this bench's section of RESULTS.md, leaving other sections alone."""
    write_results_section(path, SECTION, body)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--role', choices=('main', 'recorder', 'bare'), default='main',
                        help=argparse.SUPPRESS)
    parser.add_argument('--topic', nargs='+', default=[], help=argparse.SUPPRESS)
    parser.add_argument('--out', help=argparse.SUPPRESS)
    parser.add_argument('--rate', type=float, help=argparse.SUPPRESS)
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
    parser.add_argument('--results', type=Path, default=RESULTS,
                        help='markdown file whose Control tick section to write '
                        '(default bench/RESULTS.md)')
    write = parser.add_mutually_exclusive_group()
    write.add_argument('--write', action='store_true', default=None,
                       help='update RESULTS.md even for a --quick or shorter run')
    write.add_argument('--no-write', dest='write', action='store_false', help='only print')
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
    if args.role == 'recorder':
        return run_recorder(args.topic, args.out)
    if args.role == 'bare':
        return run_bare(args.topic[0], args.rate)
    began = time.monotonic()
    missing = ''
    if 'events' in args.executors and importlib.util.find_spec('rclpy.experimental') is None:
        # The node would fall back to single: two rows would measure the same thing.
        args.executors.remove('events')
        missing = ' This rclpy has no EventsExecutor: only the single-threaded executor ran.'
        print(missing.strip())
    if not args.executors:
        return 2
    bench = Bench(args)
    print(f'control tick bench: rates {", ".join(f"{r:g}" for r in args.rates)} Hz, '
          f'executors {", ".join(args.executors)}, {args.seconds:g} s per run, '
          f'ROS_DOMAIN_ID {bench.env["ROS_DOMAIN_ID"]}', flush=True)
    try:
        bench.run()
        table, before_after, limit, near = report(bench)
    except KeyboardInterrupt:
        print('interrupted: stopping every process')
        return 130
    finally:
        bench.close()
    runtime = time.monotonic() - began
    command = command_line('bench.bench_control_tick', argv)
    width, height = args.camera_size
    before, after = (args.executors + args.executors)[:2]
    sections = [
        f'Command: `{command}`  \nMachine: {machine()}  \nCode: {provenance()}  \n'
        f'Runtime: {runtime / 60:.1f} min.',
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
        'every node meets the same latency draws), max_actions 1,000,000, prefetch on; this '
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
    body = '\n\n'.join(sections)
    print('\n' + body)
    if args.write:
        write_section(args.results, body)
        print(f'\nwrote {args.results}')
    else:
        print(f'\n(--quick or short run: {args.results} left alone; --write to update it)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
