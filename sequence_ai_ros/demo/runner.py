"""`sequence-ai-ros demo`: the local gateway, a simulated arm and the policy node, end to end."""

# One episode with prefetch on, then (unless --no-compare) the same episode with prefetch off,
# each in a namespace of its own on a private ROS domain; then the outcome table and a PNG.
# Times printed and plotted are model seconds (wall seconds / --time-scale), so the numbers
# read like the hosted gateway's: ~0.8 s latency, 1.0 s pi05-droid chunks.

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
import secrets
import sys
import tempfile
import threading
import time
from typing import Any, TextIO

from sequence_ai_ros import stop_signals
from sequence_ai_ros.gateway.catalogue import load_catalogue, ModelProfile
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.child_processes import ChildProcess, random_domain_id, ros_environment

from .arguments import build_parser, EPISODE_MODEL_S
from .configs import config_file, find_config
from .controllers import config_value, controller_setup, default_gripper_interface
from .progress import Progress, RunStatus
from .summary import outcome_table, Run

CONTROLLERS_FILE = 'ros2_control/panda_controllers.yaml'
TARGET_XY = (0.55, -0.2)
STEP_TIMEOUT_S = 30.0  # starting a process, configuring: generous for a slow CI machine


class Interrupted(Exception):
    """SIGINT or SIGTERM asked the demo to stop: it stops every process and exits 0."""


def check_stop() -> None:
    """Raise Interrupted if a stop was requested: called between steps and while waiting."""
    if stop_signals.requested():
        raise Interrupted


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
        self.status: RunStatus | None = None
        self.ros: Any = None
        self.children: list[ChildProcess] = []
        self.runs: list[Run] = []
        self._tmp = tempfile.TemporaryDirectory(prefix='sequence-ai-ros-demo-')

    # -- the demo -----------------------------------------------------------------------------

    def run(self) -> int:
        """Run the episodes, print the outcome, write the picture; return the exit status."""
        from sequence_ai_ros.harness.ros_side import RosSide  # rclpy only once the demo runs

        args, profile = self.args, self.profile
        flags = ['--time-scale', repr(self.scale), '--scenario', args.scenario,
                 '--protocol', args.protocol]
        if args.warm:
            flags.append('--start-warm')
        if args.cold_start_s:
            flags += ['--cold-start-s', repr(args.cold_start_s)]
        self.progress.line(
            f'sequence-ai-ros demo: {profile.name} ({profile.action_space}, '
            f'{profile.action_horizon} steps at {profile.native_hz:g} Hz = '
            f'{profile.covers_seconds / self.scale:g} s chunks), scenario {args.scenario}, '
            f'time scale {self.scale:g}; ROS domain {self.domain_id}; the gateway serves '
            f'{args.protocol}')
        check_stop()
        self.gateway = GatewayProcess(flags, keys={self.key: 10**6}, startup_timeout_s=30.0)
        self.gateway.start()
        check_stop()
        self.status = RunStatus(self.gateway, profile, self.actions)
        self.progress.line(f'local gateway on {self.gateway.base_url} (key auth, one demo key)')
        self.ros = RosSide('sequence_ai_ros_demo', self.domain_id)
        runs = self.runs
        runs.append(self.episode('prefetch on', True))
        check_stop()
        if args.compare and not runs[0].failure:
            runs.append(self.episode('prefetch off', False))
        done = [run for run in runs if not run.failure]
        if done:
            self.progress.line(outcome_table(done, self.scale, self.profile.action_space))
            self.picture(done)
        for run in runs:
            if run.failure:
                self.progress.line(f'FAILED ({run.label}): {run.failure}\n{run.logs}')
        return 1 if len(done) < len(runs) else 0

    def episode(self, label: str, prefetch: bool) -> Run:
        """Start an arm and a node in a fresh namespace, run one episode, stop both."""
        from .record import Recorder

        run = Run(label, prefetch, '/demo/' + label.replace(' ', '_'))
        check_stop()
        sim = self._child('sim_arm', run, 'sequence_ai_ros.sim.main', [
            '-p', f'time_scale:={self.scale!r}',
            '-p', f'target_xy:=[{TARGET_XY[0]!r}, {TARGET_XY[1]!r}]', *self._controllers()[0]])
        node = self._child('policy_node', run, 'sequence_ai_ros.node.main', [
            '--params-file', str(self.config), *self._node_parameters(run)],
            SEQUENCES_API_KEY=self.key)
        recorder = Recorder(self.ros, run.namespace)
        run.data = recorder.data
        recorded = set(self.episodes_dir.glob('*.mcap'))
        try:
            run.failure = self._drive(run, recorder, sim, node)
        finally:
            # The node first: it leaves the arm holding; then the arm.
            for child in (node, sim):
                child.stop()
                self.children.remove(child)
            recorder.close()
        self._label(set(self.episodes_dir.glob('*.mcap')) - recorded, run)
        if run.failure:
            tails = [f'--- {c.name} ({c.log_path}) ---\n{c.log_tail()}' for c in (node, sim)]
            assert self.gateway is not None
            gateway_log = '\n'.join(self.gateway.log().splitlines()[-15:])
            run.logs = '\n'.join(tails + [f'--- gateway ---\n{gateway_log}'])
        return run

    def _label(self, episodes: set[Path], run: Run) -> None:
        """Label the run's recordings by its outcome (a dataset export can filter on it)."""
        from sequence_ai_ros.record.labels import label_episode, LabelError

        notes = f'demo {run.label}: ' + (run.failure or
                                         str((run.data.outcome or {}).get('reason')))
        for episode in sorted(episodes):
            try:
                label_episode(episode, not run.failure, notes)
            except (LabelError, OSError) as exc:
                self.progress.line(f'{run.label}: recording not labelled: {exc}')

    def _node_parameters(self, run: Run) -> list[str]:
        params = {
            'base_url': self._gateway_url(),
            'hold_service': f'{run.namespace}/sim_arm/hold',
            'max_actions': str(self.actions),
            'prefetch': 'true' if run.prefetch else 'false',
            # The node waits out the cold start before its first action; it must cover it.
            'startup_timeout_s': repr(self.cold_wall_s + STEP_TIMEOUT_S),
            # Each episode's MCAP beside the picture: `sequence-ai-ros report` draws any of them.
            'record_dir': str(self.episodes_dir),
            **self._controllers()[1],
        }
        if self.args.join:
            params['join_mode'] = self.args.join
        return [arg for name, value in params.items() for arg in ('-p', f'{name}:={value}')]

    def _controllers(self) -> tuple[list[str], dict[str, Any]]:
        mode = self.args.output_mode or config_value(self.config, 'output_mode')
        gripper = self.args.gripper or default_gripper_interface()
        sim, node = controller_setup(mode, gripper, self.args.distro)
        # The controllers file a team copies: the simulated controllers read it as on a robot.
        sim += ['--params-file', str(find_config(CONTROLLERS_FILE))]
        # Time runs 1/S times faster and velocities do not scale: accelerations grow by 1/S.
        node['max_acceleration'] = repr(config_value(self.config, 'max_acceleration') / self.scale)
        return sim, node

    def _drive(self, run: Run, recorder: Any, sim: ChildProcess, node: ChildProcess) -> str:
        """Bring the node up and wait for the episode's outcome; return why it failed, or ''."""
        from lifecycle_msgs.msg import Transition

        data = recorder.data
        self.progress.show(f'{run.label}: starting the simulated arm and the policy node')
        if not self._wait(lambda: bool(data.joint_states), STEP_TIMEOUT_S, sim, node):
            return self._dead(sim, node) or 'the simulated arm published no joint_states'
        status = self.status
        assert status is not None
        steps: tuple[tuple[Callable[[], bool], str], ...] = (
            (lambda: recorder.wait_for_node(STEP_TIMEOUT_S), 'did not come up'),
            # On the direct protocol configure waits for the worker: the cold start.
            (lambda: self._showing(lambda: recorder.transition(
                Transition.TRANSITION_CONFIGURE, self.cold_wall_s + STEP_TIMEOUT_S),
                lambda: status.text(run), sim, node), 'failed to configure'),
            (lambda: recorder.transition(Transition.TRANSITION_ACTIVATE, STEP_TIMEOUT_S),
             'failed to activate'))
        for step, failure in steps:
            done = step()
            check_stop()  # each step takes up to seconds; a signal meanwhile stops here
            if not done:
                return self._dead(sim, node) or f'the policy node {failure}'
        period = 1.0 / self.profile.control_hz
        factor = 2.0 if run.prefetch else 4.0  # without prefetch it stalls at every chunk
        budget = self.cold_wall_s + factor * self.actions * period + STEP_TIMEOUT_S
        if not self._wait(lambda: data.outcome is not None, budget, sim, node,
                          status=lambda: status.text(run)):
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

    def _showing(self, step: Callable[[], bool], status: Callable[[], str],
                 *children: ChildProcess) -> bool:
        """Run `step` on a thread of its own, showing `status` until it returns."""
        result: list[bool] = []
        thread = threading.Thread(target=lambda: result.append(step()), daemon=True)
        thread.start()
        self._wait(lambda: not thread.is_alive(), float('inf'), *children, status=status)
        return bool(result and result[0])

    def _wait(self, done: Any, timeout_s: float, *children: ChildProcess,
              status: Any = None) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done():
            check_stop()
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

    def picture(self, runs: list[Run]) -> None:
        """Draw the runs into the PNG and say where it is."""
        from .plot import render

        path = self.args.out
        render(runs, path, title=self._title(), scale=self.scale,
               chunk_s=self.profile.covers_seconds / self.scale,
               join=self._join(), target=TARGET_XY)
        self.progress.line(f'picture: {path}')
        self.progress.line(f'episodes: {self.episodes_dir} (sequence-ai-ros report FILE.mcap)')

    @property
    def episodes_dir(self) -> Path:
        """Where the node records the demo's episodes: beside the picture."""
        return Path(self.args.out).resolve().parent / 'episodes'

    def _title(self) -> str:
        args, profile = self.args, self.profile
        return (f'{profile.name} ({profile.action_space}) against the local gateway, scenario '
                f'{args.scenario}, join {self._join()}, time scale '
                f'{self.scale:g} (model seconds)')

    def _join(self) -> str:
        return self.args.join or str(config_value(self.config, 'join_mode'))

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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return 0 when every episode completed or a signal stopped it, else 1."""
    # First: from here a signal stops the demo and every process it started, and it exits 0.
    with stop_signals.stop_on_signals():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from . import plot  # noqa: F401  (before minutes of work, not after)
    except ImportError as exc:
        print(f'the demo draws its picture with matplotlib, which is missing ({exc}): '
              'pip install matplotlib, or apt install python3-matplotlib', file=sys.stderr)
        return 2
    demo: Demo | None = None
    try:
        demo = Demo(args, sys.stdout)
        check_stop()
        return demo.run()
    except Interrupted:
        print('\ninterrupted: stopping every process', file=sys.stderr)
        return 0
    except (RuntimeError, OSError) as exc:
        if stop_signals.requested():  # a child stopped by the same Ctrl-C, as it should
            print('\ninterrupted: stopping every process', file=sys.stderr)
            return 0
        print(f'demo failed: {exc}', file=sys.stderr)
        return 1
    finally:
        if demo is not None:
            demo.close()


if __name__ == '__main__':
    sys.exit(main())
