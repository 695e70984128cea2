"""`sequence-ai-ros demo`: the local gateway, a simulated arm and the policy node, end to end."""

# One episode with prefetch on, then (unless --no-compare) the same episode with prefetch off,
# each in a namespace of its own on a private ROS domain; then the outcome table and a PNG.
# Times printed and plotted are model seconds (wall seconds / --time-scale), so the numbers
# read like the hosted gateway's: ~0.8 s latency, 1.0 s pi05-droid chunks.

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
import secrets
import signal
import sys
import tempfile
import time
from types import FrameType
from typing import Any, TextIO

from sequence_ai_ros.client.engine import JOIN_MODES
from sequence_ai_ros.gateway.catalogue import load_catalogue, ModelProfile
from sequence_ai_ros.gateway.config import SCENARIOS
from sequence_ai_ros.gateway.process import GatewayProcess

from . import analysis
from .configs import config_file, find_config
from .controllers import (
    ARM_CONTROLLERS,
    config_value,
    controller_setup,
    DEFAULT_DISTRO,
    default_gripper_interface,
    DISTROS,
    GRIPPER_CONTROLLERS,
)
from .processes import ChildProcess, random_domain_id, ros_environment

DEFAULT_MODEL = 'pi05-droid'
DEFAULT_TIME_SCALE = 0.25
DEFAULT_OUT = 'demo-out/demo.png'
CONTROLLERS_FILE = 'ros2_control/panda_controllers.yaml'
# Model seconds of motion when --actions is not given: enough to reach the target from home
# and settle there, short enough that the whole demo takes well under two minutes.
EPISODE_MODEL_S = 20.0
TARGET_XY = (0.55, -0.2)
STEP_TIMEOUT_S = 30.0  # starting a process, configuring: generous for a slow CI machine
NON_TTY_EVERY_S = 3.0


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


class Progress:
    """One status line: rewritten in place on a terminal, printed now and then in a log."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self._shown = ''
        self._printed_at = 0.0
        self._phase = ''

    def show(self, text: str) -> None:
        """Replace the status line with `text`."""
        if self.tty:
            self.out.write('\r' + text.ljust(len(self._shown)))
            self.out.flush()
            self._shown = text
            return
        # In a log, a line when the phase changes (the text less its numbers), else now and then.
        phase = ''.join(c for c in text if not c.isdigit())
        if phase != self._phase or time.monotonic() - self._printed_at >= NON_TTY_EVERY_S:
            self._phase = phase
            self.line(text)

    def line(self, text: str) -> None:
        """Print `text` on a line of its own, below the status line."""
        if self._shown:
            self.out.write('\r' + ' ' * len(self._shown) + '\r')
            self._shown = ''
        self.out.write(text + '\n')
        self.out.flush()
        self._printed_at = time.monotonic()


def build_parser(prog: str = 'sequence-ai-ros demo') -> argparse.ArgumentParser:
    """Return the demo's command-line flags."""
    names = [p.name for p in load_catalogue().profiles]
    parser = argparse.ArgumentParser(
        prog=prog, description='Run the whole loop on this machine: the local gateway, a '
        'simulated arm and the policy node; print the outcome and draw it, next to the same '
        'run with prefetch off.')
    add = parser.add_argument
    add('--model', choices=names, default=DEFAULT_MODEL, help='catalogue model (default '
        '%(default)s)')
    add('--scenario', choices=SCENARIOS, default='steady', help='gateway latency scenario '
        '(default %(default)s)')
    add('--join', choices=JOIN_MODES, default=None,
        help="how chunks are joined (default: the model's config file)")
    add('--time-scale', type=_positive, default=DEFAULT_TIME_SCALE, metavar='S',
        help='wall seconds per model second for the gateway and the arm (default %(default)s)')
    add('--actions', type=_positive_int, default=None, metavar='N',
        help=f'actions per episode (default: {EPISODE_MODEL_S:g} s of model time)')
    add('--out', type=Path, default=Path(DEFAULT_OUT), metavar='PNG',
        help='where to write the picture (default %(default)s)')
    add('--no-compare', dest='compare', action='store_false',
        help='skip the second run with prefetch off')
    add('--warm', action='store_true', help='start with the model warm (no cold start)')
    add('--cold-start-s', type=_positive, default=None, metavar='SECONDS',
        help="model seconds of the cold start (default: the catalogue's)")
    add('--output-mode', choices=list(ARM_CONTROLLERS), default=None,
        help="the node's output_mode, and the simulated controller that receives it "
        "(default: the model's config file)")
    add('--gripper', choices=list(GRIPPER_CONTROLLERS), default=None,
        help="the gripper's interface (default: action where control_msgs is installed, "
        'else trajectory)')
    add('--distro', choices=DISTROS, default=DEFAULT_DISTRO,
        help='whose upstream rules and defaults the simulated controllers follow '
        '(default %(default)s)')
    return parser


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f'must be > 0, got {text}')
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be >= 1, got {text}')
    return value


class Demo:
    """The processes of one demo; close() stops every one of them, whatever happened."""

    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        self.args = args
        self.scale: float = args.time_scale
        profile = load_catalogue(time_scale=self.scale).get(args.model)
        assert profile is not None  # argparse offered only catalogue names
        self.profile: ModelProfile = profile
        self.actions: int = args.actions or round(EPISODE_MODEL_S * profile.native_hz)
        cold_model_s = args.cold_start_s or profile.cold_start_s / self.scale
        self.cold_wall_s = 0.0 if args.warm else cold_model_s * self.scale
        self.config = config_file(args.model)
        self.key = f'seq_demo_{secrets.token_hex(16)}'
        self.domain_id = random_domain_id()
        self.out = out
        self.progress = Progress(out)
        self.gateway: GatewayProcess | None = None
        self.ros: Any = None
        self.children: list[ChildProcess] = []
        self.runs: list[Run] = []
        self._tmp = tempfile.TemporaryDirectory(prefix='sequence-ai-ros-demo-')
        self._stats_at = 0.0
        self._stats: dict[str, Any] = {}

    # -- the demo -----------------------------------------------------------------------------

    def run(self) -> int:
        """Run the episodes, print the outcome, write the picture; return the exit status."""
        from .record import RosSide  # rclpy only once the demo really runs

        args, profile = self.args, self.profile
        flags = ['--time-scale', repr(self.scale), '--scenario', args.scenario]
        if args.warm:
            flags.append('--start-warm')
        if args.cold_start_s:
            flags += ['--cold-start-s', repr(args.cold_start_s)]
        self.progress.line(
            f'sequence-ai-ros demo: {profile.name} ({profile.action_space}, '
            f'{profile.action_horizon} steps at {profile.native_hz:g} Hz = '
            f'{profile.covers_seconds / self.scale:g} s chunks), scenario {args.scenario}, '
            f'time scale {self.scale:g}; ROS domain {self.domain_id}')
        self.gateway = GatewayProcess(flags, keys={self.key: 10**6}, startup_timeout_s=30.0)
        self.gateway.start()
        self.progress.line(f'local gateway on {self.gateway.base_url} (key auth, one demo key)')
        self.ros = RosSide(self.domain_id)
        runs = self.runs
        runs.append(self.episode('prefetch on', True))
        if args.compare and not runs[0].failure:
            runs.append(self.episode('prefetch off', False))
        done = [run for run in runs if not run.failure]
        if done:
            self.progress.line(self.table(done))
            self.picture(done)
        for run in runs:
            if run.failure:
                self.progress.line(f'FAILED ({run.label}): {run.failure}\n{run.logs}')
        return 1 if len(done) < len(runs) else 0

    def episode(self, label: str, prefetch: bool) -> Run:
        """Start an arm and a node in a fresh namespace, run one episode, stop both."""
        from .record import Recorder

        run = Run(label, prefetch, '/demo/' + label.replace(' ', '_'))
        sim = self._child('sim_arm', run, 'sequence_ai_ros.sim.node', [
            '-p', f'time_scale:={self.scale!r}',
            '-p', f'target_xy:=[{TARGET_XY[0]!r}, {TARGET_XY[1]!r}]', *self._controllers()[0]])
        node = self._child('policy_node', run, 'sequence_ai_ros.node.main', [
            '--params-file', str(self.config), *self._node_parameters(run)],
            SEQUENCES_API_KEY=self.key)
        recorder = Recorder(self.ros, run.namespace)
        run.data = recorder.data
        try:
            run.failure = self._drive(run, recorder, sim, node)
        finally:
            # The node first: it leaves the arm holding; then the arm.
            for child in (node, sim):
                child.stop()
                self.children.remove(child)
            recorder.close()
        if run.failure:
            tails = [f'--- {c.name} ({c.log_path}) ---\n{c.log_tail()}' for c in (node, sim)]
            assert self.gateway is not None
            gateway_log = '\n'.join(self.gateway.log().splitlines()[-15:])
            run.logs = '\n'.join(tails + [f'--- gateway ---\n{gateway_log}'])
        return run

    def _node_parameters(self, run: Run) -> list[str]:
        params = {
            'base_url': self._gateway_url(),
            'hold_service': f'{run.namespace}/sim_arm/hold',
            'max_actions': str(self.actions),
            'prefetch': 'true' if run.prefetch else 'false',
            # The node waits out the cold start before its first action; it must cover it.
            'startup_timeout_s': repr(self.cold_wall_s + STEP_TIMEOUT_S),
            **self._controllers()[1],
        }
        if self.args.join:
            params['join_mode'] = self.args.join
        return [arg for name, value in params.items() for arg in ('-p', f'{name}:={value}')]

    def _controllers(self) -> tuple[list[str], dict[str, Any]]:
        mode = self.args.output_mode or config_value(self.config, 'output_mode',
                                                     'trajectory_stream')
        gripper = self.args.gripper or default_gripper_interface()
        sim, node = controller_setup(mode, gripper, self.args.distro)
        # The controllers file a team copies: the simulated controllers read it as on a robot.
        sim += ['--params-file', str(find_config(CONTROLLERS_FILE))]
        # Time runs 1/S times faster and velocities do not scale: accelerations grow by 1/S.
        node['max_acceleration'] = repr(config_value(self.config, 'max_acceleration', 15.0)
                                        / self.scale)
        return sim, node

    def _drive(self, run: Run, recorder: Any, sim: ChildProcess, node: ChildProcess) -> str:
        """Bring the node up and wait for the episode's outcome; return why it failed, or ''."""
        from lifecycle_msgs.msg import Transition

        data = recorder.data
        self.progress.show(f'{run.label}: starting the simulated arm and the policy node')
        if not self._wait(lambda: bool(data.joint_states), STEP_TIMEOUT_S, sim, node):
            return self._dead(sim, node) or 'the simulated arm published no joint_states'
        if not recorder.wait_for_node(STEP_TIMEOUT_S):
            return self._dead(sim, node) or 'the policy node did not come up'
        if not recorder.transition(Transition.TRANSITION_CONFIGURE, STEP_TIMEOUT_S):
            return self._dead(sim, node) or 'the policy node failed to configure'
        if not recorder.transition(Transition.TRANSITION_ACTIVATE, STEP_TIMEOUT_S):
            return self._dead(sim, node) or 'the policy node failed to activate'
        period = 1.0 / self.profile.control_hz
        factor = 2.0 if run.prefetch else 4.0  # without prefetch it stalls at every chunk
        budget = self.cold_wall_s + factor * self.actions * period + STEP_TIMEOUT_S
        if not self._wait(lambda: data.outcome is not None, budget, sim, node,
                          status=lambda: self._status(run)):
            return self._dead(sim, node) or f'no episode outcome within {budget:.0f} s'
        assert data.outcome is not None and data.outcome_time is not None
        # The last action still moves the arm for a period; then read where the tool is.
        settled = data.outcome_time + max(0.3, 3 * period)
        self._wait(lambda: bool(data.distances) and data.distances[-1][0] > settled, 3.0)
        run.final_distance = data.distances[-1][1] if data.distances else None
        ended, reason = data.outcome['outcome'], data.outcome['reason']
        self.progress.line(f'{run.label}: episode {ended}' + (f' ({reason})' if reason != ended
                                                              else ''))
        if data.outcome['outcome'] != 'completed':
            return f'the episode ended {data.outcome["outcome"]}: {data.outcome["reason"]}'
        return ''

    def _wait(self, done: Any, timeout_s: float, *children: ChildProcess,
              status: Any = None) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > deadline or self._dead(*children):
                return False
            if status is not None:
                self.progress.show(status())
            time.sleep(0.1)
        return True

    def _dead(self, *children: ChildProcess) -> str:
        for child in children:
            if not child.running():
                return f'{child.name} exited with code {child.proc.returncode}'
        if self.gateway is not None and not self.gateway.running():
            return 'the gateway exited'
        return ''

    def _status(self, run: Run) -> str:
        data = run.data
        played = len(analysis.actions(data))
        if not played:
            return f'{run.label}: {self._warming(data) or "waiting for the first chunk"}'
        distance = f', tool {100 * data.distances[-1][1]:.1f} cm from the target' \
            if data.distances else ''
        return (f'{run.label}: {played}/{self.actions} actions, {len(data.chunks)} chunks, '
                f'{len(analysis.underruns(data))} underruns{distance}')

    def _warming(self, data: analysis.Recording) -> str:
        """Return the cold-start countdown ('' when the model is not warming)."""
        assert self.gateway is not None
        now = time.monotonic()
        if now - self._stats_at > 0.5:
            self._stats_at = now
            try:
                self._stats = self.gateway.stats()['models'][self.profile.id]
            except Exception:  # a busy gateway: the node's own estimate will do
                self._stats = {}
        if self._stats.get('state') == 'warming':
            return (f'cold start: the gateway is loading {self.profile.name}, ready in '
                    f'{self._stats.get("warm_in_s", 0.0):.0f} s')
        if not self._stats and data.warming_eta_s is not None:
            # The node's /diagnostics: the Retry-After of its last 503, not counting down.
            return f'cold start: the model is warming up, ready in ~{data.warming_eta_s:.0f} s'
        return ''

    def _child(self, name: str, run: Run, module: str, ros_args: list[str],
               **env: str) -> ChildProcess:
        log = Path(self._tmp.name) / f'{run.namespace.strip("/").replace("/", "_")}_{name}.log'
        child = ChildProcess(
            name, module, ['--ros-args', '-r', f'__ns:={run.namespace}', *ros_args],
            ros_environment(self.domain_id, env), log)
        self.children.append(child)
        return child

    def _gateway_url(self) -> str:
        assert self.gateway is not None
        return self.gateway.base_url

    # -- what it shows ------------------------------------------------------------------------

    def table(self, runs: list[Run]) -> str:
        """Return the outcome of each run, one column per run."""
        rows: list[tuple[str, list[str]]] = [
            ('', [run.label for run in runs]),
            ('outcome', [self._outcome(run, 'outcome') for run in runs]),
            ('actions', [self._outcome(run, 'actions') for run in runs]),
            ('chunks', [self._outcome(run, 'chunks') for run in runs]),
            ('seconds', [self._number(self._motion_s(run), 2) for run in runs]),
            ('underruns', [self._outcome(run, 'underruns') for run in runs]),
            ('moving %', [self._number(self._fraction(run), 1) for run in runs]),
            (f'max seam jump ({self._seam_unit()})',
             [self._number(self._seam(run), 4) for run in runs]),
            ('latency p50 (s)', [self._number(self._latency(run, 'p50'), 3) for run in runs]),
            ('latency p95 (s)', [self._number(self._latency(run, 'p95'), 3) for run in runs]),
            ('final task distance (m)', [self._number(run.final_distance, 4) for run in runs]),
            ('rejected by controllers', [str(len(run.data.controller_errors)) for run in runs]),
        ]
        width = max(len(name) for name, _ in rows)
        lines = [f'{name:<{width}}' + ''.join(f'{v:>15}' for v in values)
                 for name, values in rows]
        return '\n'.join(['', *lines, f'(model seconds: wall seconds / {self.scale:g})'])

    def picture(self, runs: list[Run]) -> None:
        """Draw the runs into the PNG and say where it is."""
        from .plot import render

        path = self.args.out
        render(runs, path, title=self._title(), scale=self.scale,
               chunk_s=self.profile.covers_seconds / self.scale,
               join=self.args.join or self._config_join(), target=TARGET_XY)
        self.progress.line(f'picture: {path}')

    def _title(self) -> str:
        args, profile = self.args, self.profile
        return (f'{profile.name} ({profile.action_space}) against the local gateway, scenario '
                f'{args.scenario}, join {args.join or self._config_join()}, time scale '
                f'{self.scale:g} (model seconds)')

    def _config_join(self) -> str:
        for line in self.config.read_text(encoding='utf-8').splitlines():
            name, _, value = line.strip().partition(':')
            if name == 'join_mode':
                return value.strip().strip('\'"')
        return 'append'

    @staticmethod
    def _outcome(run: Run, key: str) -> str:
        return str((run.data.outcome or {}).get(key, 'n/a'))

    @staticmethod
    def _number(value: float | None, digits: int) -> str:
        return 'n/a' if value is None else f'{value:.{digits}f}'

    def _motion_s(self, run: Run) -> float | None:
        played = analysis.actions(run.data)
        if not played or run.data.outcome_time is None:
            return None
        return (run.data.outcome_time - played[0][0]) / self.scale

    @staticmethod
    def _fraction(run: Run) -> float | None:
        value = (run.data.outcome or {}).get('moving_fraction')
        return None if value is None else 100.0 * float(value)

    def _latency(self, run: Run, which: str) -> float | None:
        value = (run.data.outcome or {}).get(f'latency_{which}_s')
        return None if value is None else float(value) / self.scale

    def _seam(self, run: Run) -> float | None:
        value = (run.data.outcome or {}).get('max_seam_jump')
        if value is None:
            return None
        # Velocities are per wall second at the served rate; per model second they are S times.
        return float(value) * (self.scale if 'velocity' in self.profile.action_space else 1.0)

    def _seam_unit(self) -> str:
        return 'rad/s' if 'velocity' in self.profile.action_space else 'rad'

    # -- clean-up -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every process this demo started (the nodes first, the gateway last)."""
        for child in reversed(self.children):
            child.stop()
        self.children = []
        if self.ros is not None:
            self.ros.close()
            self.ros = None
        if self.gateway is not None:
            self.gateway.close()
            self.gateway = None
        self._tmp.cleanup()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f'signal {signum}')


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return 0 when every episode completed, 1 if not, 130 when interrupted."""
    args = build_parser().parse_args(argv)
    try:
        from . import plot  # noqa: F401  (before minutes of work, not after)
    except ImportError as exc:
        print(f'the demo draws its picture with matplotlib, which is missing ({exc}): '
              'pip install matplotlib, or apt install python3-matplotlib', file=sys.stderr)
        return 2
    previous = signal.signal(signal.SIGTERM, _interrupt)  # stop the children on SIGTERM too
    demo: Demo | None = None
    try:
        demo = Demo(args, sys.stdout)
        return demo.run()
    except KeyboardInterrupt:
        print('\ninterrupted: stopping every process', file=sys.stderr)
        return 130
    except (RuntimeError, OSError) as exc:
        print(f'demo failed: {exc}', file=sys.stderr)
        return 1
    finally:
        if demo is not None:
            demo.close()
        signal.signal(signal.SIGTERM, previous)


if __name__ == '__main__':
    sys.exit(main())
