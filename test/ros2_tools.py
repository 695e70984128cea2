"""
The real ROS 2 tooling for tests: where it comes from, a colcon install, `ros2` as a user types it.

launch, launch_ros, launch_testing and ros2cli are not on PyPI and the venvs do not have them;
where they are not installed (a venv without a ROS install sourced), :func:`require` skips with
one line naming what is missing. control_msgs is not on PyPI either: `make venv` generates the
types the tests use (:data:`CONTROL_MSGS_MISSING` says so where it did not). Nothing here imports
rclpy: conftest.py reads :func:`ros_distro` before any DDS variable is read.
"""

import importlib.metadata
import importlib.util
import os
from pathlib import Path
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from sequence_ai_ros.harness.child_processes import child_env
from sequence_ai_ros.harness.proc_stats import alive, descendants

REPO = Path(__file__).resolve().parents[1]
PACKAGE = 'sequence_ai_ros'
# rclpy's major version on PyPI and in the ROS 2 releases -> the distribution.
RCLPY_DISTROS = {3: 'humble', 7: 'jazzy', 9: 'kilted'}
# The module each piece of tooling is imported as, by what a test needs it for.
LAUNCH = ('launch', 'launch_ros', 'ros2launch')
CLI = ('ros2cli', 'ros2lifecycle', 'ros2param', 'ros2topic', 'ros2service')
LAUNCH_TESTING = ('launch_testing', 'launch_testing_ros')
NOT_SOURCE = ('.venv*', '.git', 'build', 'install', 'log', '__pycache__', '.*_cache',
              '*.egg-info', 'demo-out')
# A terminal's Ctrl-C reaches the whole foreground process group; launch then signals each
# child itself and escalates to SIGTERM after its sigterm_timeout (5 s), SIGKILL after 10.
CTRL_C_TIMEOUT_S = 40.0
PLACEHOLDER_KEY = 'local-gateway-auth-disabled'  # what the keyless local gateway accepts
SCALE = '0.25'  # the gateway's and the sim arm's time scale in these tests
COMMANDS = 'joint_trajectory_controller/joint_trajectory'  # the node's, relative
UP_S = 60.0  # a node's start, configure and first chunk on two loaded cores
CONTROL_MSGS_MISSING = ('control_msgs is not importable (`make venv` generates it from '
                        'test/interfaces/control_msgs with scripts/build_interfaces.py)')


def shared_dir() -> Path:
    """Return the shared folder beside the checkout (rosdistro/: rosdep's rules)."""
    return REPO.parent / 'shared'


def ros_distro() -> str:
    """Return the ROS 2 distribution of this environment's rclpy ('' if unknown)."""
    if os.environ.get('ROS_DISTRO'):  # a sourced ROS install says so itself
        return os.environ['ROS_DISTRO']
    for dist in ('ros-rclpy', 'rclpy'):
        try:
            major = int(importlib.metadata.version(dist).split('.')[0])
        except (importlib.metadata.PackageNotFoundError, ValueError):
            continue
        return RCLPY_DISTROS.get(major, '')
    return ''


def require(*modules: str) -> None:
    """Skip the calling test, in one line, if any of `modules` is not importable."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        distro = ros_distro().capitalize() or 'a'
        pytest.skip(f'{", ".join(missing)} not installed (ROS 2 packages not on PyPI; the test '
                    f'runs where a ROS 2 {distro} install provides them)')


def colcon_command() -> list[str]:
    """Return the colcon command of this interpreter's environment; skip if there is none."""
    if importlib.util.find_spec('colcon_core') is None:
        pytest.skip('colcon is not installed (requirements-dev.txt)')
    script = Path(sys.executable).with_name('colcon')
    found = str(script) if script.is_file() else shutil.which('colcon')
    if not found:
        pytest.skip('colcon_core is importable but no colcon command was found')
    return [found]


def colcon_install(workspace: Path) -> Path:
    """Build a copy of the repo in `workspace` with colcon; return install/<package>."""
    shutil.copytree(REPO, workspace / 'src' / PACKAGE,
                    ignore=shutil.ignore_patterns(*NOT_SOURCE))
    result = subprocess.run(
        [*colcon_command(), '--log-base', 'log', 'build', '--base-paths', 'src',
         '--build-base', 'build', '--install-base', 'install',
         '--event-handlers', 'console_direct+'],
        cwd=workspace, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return workspace / 'install' / PACKAGE


def site_packages(prefix: Path) -> Path:
    """Return the site-packages folder of an install prefix."""
    (found,) = prefix.glob('lib/python3*/site-packages')
    return found


def overlay_env(install: Path, log_dir: Path, *prefixes: Path) -> dict[str, str]:
    """
    Return the environment `source install/setup.bash` would give, on top of this venv.

    The venv's prefix is on AMENT_PREFIX_PATH (the PyPI wheels do not put it there, and ament's
    index finds their packages, the generated control_msgs among them, under it); `prefixes`
    come first (e.g. a stand-in package).
    """
    env = child_env(site_packages(install))
    bin_dir = str(Path(sys.executable).parent)
    env['PATH'] = os.pathsep.join([bin_dir, env.get('PATH', '')])
    env['AMENT_PREFIX_PATH'] = os.pathsep.join(str(p) for p in (*prefixes, install, sys.prefix))
    env['ROS_LOG_DIR'] = str(log_dir)
    env['PYTHONUNBUFFERED'] = '1'
    return env


class Ros2Process:
    """
    A `ros2 ...` command (e.g. `ros2 launch`) running in its own session, as from a terminal.

    Output is collected on a thread; :meth:`ctrl_c` signals the whole process group, as a
    terminal's Ctrl-C does. :meth:`close` kills whatever is left, so a failed test leaves no
    process behind for the next one.
    """

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.args = args
        self.proc = subprocess.Popen(
            ['ros2', *args], env=env, cwd=cwd, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.children: set[int] = set()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip('\n'))

    @property
    def output(self) -> str:
        """Return everything printed so far."""
        return '\n'.join(self.lines)

    def tail(self, count: int = 60) -> str:
        """Return the last `count` lines, for assertion messages."""
        return '\n'.join(self.lines[-count:])

    def wait_for(self, pattern: str, timeout_s: float) -> re.Match:
        """Wait until a line matches `pattern`; fail with the output if none does."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            for line in self.lines[seen:]:
                found = regex.search(line)
                if found:
                    return found
            seen = len(self.lines)
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self._reader.join(1.0)
                found = next((m for m in map(regex.search, self.lines[seen:]) if m), None)
                if found:
                    return found
                raise AssertionError(f'no line matching {pattern!r} from ros2 '
                                     f'{" ".join(self.args)}:\n{self.tail()}')
            time.sleep(0.05)

    def ctrl_c(self, timeout_s: float = CTRL_C_TIMEOUT_S) -> int:
        """Send SIGINT to the process group, as a terminal does; return the exit code."""
        self.children = descendants(self.proc.pid)
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'ros2 {self.args[0]} still running {timeout_s:g} s after '
                                 f'Ctrl-C:\n{self.tail()}') from None
        self._reader.join(5.0)
        return code

    def left_behind(self, grace_s: float = 5.0) -> set[int]:
        """Return the processes started below this one that still run after it ended."""
        deadline = time.monotonic() + grace_s
        while alive(self.children) and time.monotonic() < deadline:
            time.sleep(0.1)
        return alive(self.children)

    def close(self) -> None:
        """Kill the process group and anything left of it."""
        pids = descendants(self.proc.pid) | self.children
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        for pid in alive(pids):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reader.join(5.0)


def ros2(args: list[str], env: dict[str, str], cwd: Path, expect: str, tries: int = 5,
         timeout_s: float = 60.0) -> str:
    """
    Run `ros2 <args>` until its output matches the regex `expect`; return that output.

    A verb run right after a node started may not have discovered it yet (--no-daemon verbs
    start their discovery afresh); every try is bounded by timeout_s.
    """
    output = ''
    for attempt in range(tries):
        try:
            result = subprocess.run(['ros2', *args], env=env, cwd=cwd, capture_output=True,
                                    text=True, timeout=timeout_s)
            output = result.stdout + result.stderr
            if result.returncode == 0 and re.search(expect, output):
                return output
        except subprocess.TimeoutExpired as exc:
            output = str(exc)
        time.sleep(1.0 + attempt)
    raise AssertionError(f'ros2 {" ".join(args)}: no {expect!r} in {tries} tries; last:\n'
                         f'{output[-3000:]}')


def start(processes: list[Ros2Process], args: list[str], env: dict[str, str],
          cwd: Path) -> Ros2Process:
    """Start `ros2 <args>` and add it to `processes`, which the caller closes."""
    proc = Ros2Process(args, env, cwd)
    processes.append(proc)
    return proc


def sim_arm(processes: list[Ros2Process], env: dict[str, str], cwd: Path, namespace: str,
            command_topic: str = '') -> Ros2Process:
    """Start the simulated arm with `ros2 run` in `namespace`, commanded on `command_topic`."""
    # As on a robot: the shipped controllers file, the gripper on its ParallelGripperCommand action
    # (control_msgs as `make venv` generates it), the arm's JTC on 7 joints.
    args = ['run', PACKAGE, 'sequence_ai_sim_arm', '--ros-args', '-r', f'__ns:=/{namespace}',
            '-p', f'time_scale:={SCALE}', '-p', 'gripper_controller:=gripper_action_controller',
            '--params-file', str(REPO / 'config/ros2_control/panda_controllers.yaml')]
    if command_topic:
        args += ['-r', f'{COMMANDS}:={command_topic}']
    arm = start(processes, args, env, cwd)
    arm.wait_for('simulated arm up', UP_S)
    return arm


def ends_cleanly_on_ctrl_c(launch: Ros2Process) -> None:
    """Ctrl-C a launch: it must exit 0, with no exception caught by launch and no process left."""
    code = launch.ctrl_c()
    assert code == 0, launch.tail()
    assert 'Caught exception' not in launch.output, launch.tail()
    left = launch.left_behind()
    assert not left, f'left running: {left}\n{launch.tail()}'
