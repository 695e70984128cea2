"""
Run the policy node as a real process and talk to it over DDS from the test.

The test side plays the robot (sequence_ai_ros.harness.robot's Robot, the benchmarks' too): it
publishes joint states and camera frames (so a test can make them stale or NaN), records every
command, offers the hold service, and drives the lifecycle.
"""

import contextlib
from dataclasses import dataclass, field
import json
import math
import os
from pathlib import Path
import tempfile
import time

from fixtures_gateway import NODE_KEY, NODE_SCALE  # the node tests' gateway's
from sequence_ai_ros.harness.child_processes import child_env, ChildProcess
from sequence_ai_ros.harness.proc_stats import open_sockets, thread_count
from sequence_ai_ros.harness.robot import RELIABLE, Robot  # noqa: F401 - RELIABLE: tests'
from sequence_ai_ros.node.params import PARAMETERS
from sequence_ai_ros.world import arm_model
import yaml

REPO = str(Path(__file__).resolve().parents[1])
NODE_ENV = {'SEQUENCES_API_KEY': NODE_KEY}
CONTROL_PERIOD_S = NODE_SCALE / 15


def node_parameters(**overrides):
    """Return a complete, valid parameter set for the DROID-like arm."""
    params = {
        'model': 'pi05-droid',
        'joint_names': list(arm_model.JOINT_NAMES),
        'gripper_joint': arm_model.GRIPPER_JOINT,
        'camera_views': ['exterior_1', 'wrist'],
        'camera_topics': ['camera/exterior/image_raw', 'camera/wrist/image_raw'],
        'camera_transports': ['raw', 'raw'],
        'instruction': 'reach the red disc',
        'max_actions': 60,
        'position_limits.lower': [float(v) for v in arm_model.LOWER_LIMITS] + [0.0],
        'position_limits.upper': [float(v) for v in arm_model.UPPER_LIMITS] + [1.0],
        'max_step_change': 0.5,
        'joint_state_timeout_s': 0.5,
        'camera_timeout_s': 1.0,
        'hold_service': 'robot/hold',
        'diagnostics_period_s': 0.2,
        'configure_timeout_s': 5.0,
        # The test robot reads one point per step and has no gripper controller of its own.
        'output_mode': 'trajectory_stream',
        'gripper_interface': 'with_arm',
    }
    params.update(overrides)
    return params


def effective_value(params, name):
    """Return what the node runs with for `name` given `params`: its value, else the default."""
    return params[name] if name in params else PARAMETERS[name].default


class PolicyNodeProcess(ChildProcess):
    """`python -m sequence_ai_ros.node.main` with a parameter file, in a namespace."""

    def __init__(self, namespace, params, env):
        self.namespace = namespace
        self._dir = tempfile.TemporaryDirectory()
        path = os.path.join(self._dir.name, 'params.yaml')
        with open(path, 'w') as handle:
            yaml.safe_dump({'/**': {'ros__parameters': params}}, handle)
        self._final_log = None
        super().__init__('policy_node', 'sequence_ai_ros.node.main',
                         ['--ros-args', '-r', f'__ns:=/{namespace}', '--params-file', path],
                         child_env(PYTHONUNBUFFERED='1', **env),
                         Path(self._dir.name) / 'node.log')

    def log(self):
        """Return everything the node has written (kept once it is stopped)."""
        if self._final_log is not None:
            return self._final_log
        return self.log_path.read_bytes().decode(errors='replace')

    def stop(self):
        """Stop the node (SIGTERM, then SIGKILL after 10 s); keep its log; return its code."""
        code = super().stop(10.0)
        if self._final_log is None:
            self._final_log = self.log()
            self._dir.cleanup()
        return code


def wait_until(predicate, timeout, interval=0.02):
    """Poll until predicate() is truthy; return its last value."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    return value


# -- shared pieces of the node fault tests ---------------------------------------------------

def is_hold(msg):
    """
    Whether a JointTrajectory (or one of its points) is a hold: one point at rest.

    trajectory_stream's steps carry positions only (no velocities), a hold zero velocities.
    An episode's last hold also rests at the same point FINAL_REST_S later (arm_output).
    """
    if hasattr(msg, 'points'):
        if len(msg.points) == 2 and is_final_rest(msg):
            return is_hold(msg.points[0])
        if len(msg.points) != 1:
            return False
    point = msg.points[0] if hasattr(msg, 'points') else msg
    return bool(point.velocities) and all(v == 0.0 for v in point.velocities)


def is_final_rest(msg):
    """Whether a JointTrajectory ends with an episode's final rest point (arm_output)."""
    from sequence_ai_ros.node.arm_output import FINAL_REST_S
    last = msg.points[-1]
    return len(msg.points) == 2 and last.time_from_start.sec >= int(FINAL_REST_S) and \
        list(last.positions) == list(msg.points[0].positions) and \
        bool(last.velocities) and all(v == 0.0 for v in last.velocities)


def is_finite(msg):
    """Whether every position and velocity of a JointTrajectory is finite."""
    point = msg.points[0]
    return all(math.isfinite(v) for v in (*point.positions, *point.velocities))


def commands_after(robot, t):
    """Return the (time, message) commands received after monotonic time `t`."""
    return [(when, msg) for when, msg in robot.command_list() if when > t]


def moving_after(robot, t):
    """Count the commands received after `t` that are not holds."""
    return sum(not is_hold(msg) for _, msg in commands_after(robot, t))


def outcome_after(robot, index, timeout):
    """Wait for the episode outcome number `index` (0-based) and return it decoded, or None."""
    if not wait_until(lambda: len(robot.outcomes) > index, timeout):
        return None
    return json.loads(robot.outcomes[index])


def final_hold(robot, since, timeout=3.0):
    """
    Wait until the last command received after `since` is a hold; return its time or None.

    The outcome and the hold travel on different topics, so either may arrive first.
    """
    def last_is_hold():
        after = commands_after(robot, since)
        return after and is_hold(after[-1][1]) and after[-1][0]
    return wait_until(last_is_hold, timeout) or None


def log_faults(text):
    """Return the lines of a node's log that show an exception escaped ('Traceback', ...)."""
    return [line for line in text.splitlines()
            if 'Traceback' in line or 'Exception in' in line]


def process_counts(pid):
    """Return (threads, sockets) of a process, from /proc."""
    return thread_count(pid), open_sockets(pid)


def settled_counts(pid, baseline, timeout=5.0):
    """
    Return (threads, sockets) once both are back to `baseline`, or as seen after `timeout`.

    Request threads of an abandoned episode end when their HTTP call returns, a little later.
    """
    counts = [process_counts(pid)]

    def settled():
        counts[0] = process_counts(pid)
        return counts[0][0] <= baseline[0] and counts[0][1] <= baseline[1]
    wait_until(settled, timeout, interval=0.1)
    return counts[0]


# -- shared pieces of the gateway fault tests ------------------------------------------------

def holds_after(robot, t):
    """Return the times of the hold commands received after monotonic time `t`."""
    return [when for when, msg in commands_after(robot, t) if is_hold(msg)]


def statuses_after(robot, t, part):
    """Return (time, status) of the node's `part` status ('gateway', 'episode', ...) after `t`."""
    return [(when, status) for when, status in list(robot.diagnostics)
            if when > t and status.name.endswith(f': {part}')]


def status_values(status):
    """Return a DiagnosticStatus's key/values as a dict."""
    return {kv.key: kv.value for kv in status.values}


# -- one node process shared by the cases of a fault-test module -----------------------------

MOTION = 15  # moving commands seen before a fault: the episode is really running


@dataclass
class RunningNode:
    """A policy node process, the robot that plays its hardware, and its parameters."""

    robot: Robot
    process: PolicyNodeProcess
    params: dict = field(default_factory=dict)

    @property
    def pid(self):
        return self.process.proc.pid

    def healthy(self):
        """Assert the node is alive, no exception escaped into its log, and no key is in it."""
        log = self.process.log()
        assert self.process.proc.poll() is None, log[-3000:]
        assert log_faults(log) == [], log[-3000:]
        assert NODE_KEY not in log, 'the API key reached the log'

    def run_episode(self):
        """Reset the robot, start an episode, wait for motion; return (outcome index, counts)."""
        robot = self.robot
        robot.reset()
        time.sleep(5 / robot.camera_rate_hz)  # the node's latest inputs are good ones again
        before = process_counts(self.pid)
        index = len(robot.outcomes)
        started = time.monotonic()
        answer = robot.start_episode()
        assert answer.success, answer.message
        assert wait_until(lambda: moving_after(robot, started) >= MOTION, 20), \
            self.process.log()[-3000:]
        return index, before

    def ensure(self, **params):
        """Reconfigure the node (deactivate, cleanup, set, configure, activate) if it differs."""
        if all(self.params.get(k) == v for k, v in params.items()):
            return
        robot = self.robot
        assert robot.deactivate() and robot.cleanup(), self.process.log()[-3000:]
        results = robot.set_parameters(**params)
        assert all(r.successful for r in results), [r.reason for r in results]
        assert robot.configure() and robot.activate(), self.process.log()[-3000:]
        self.params.update(params)


@contextlib.contextmanager
def running_node(robot, namespace, params):
    """
    Start a node, bring it to active and through one short episode; stop it on exit.

    The warm-up episode fills the connection pool, so the thread and socket counts the cases
    take before and after a fault compare like with like.
    """
    process = PolicyNodeProcess(namespace, params, NODE_ENV)
    try:
        assert wait_until(robot.change_client.service_is_ready, 20), process.log()
        assert robot.configure(), process.log()
        assert robot.activate(), process.log()
        started = time.monotonic()
        assert robot.start_episode().success
        assert wait_until(lambda: moving_after(robot, started) >= MOTION, 20), process.log()
        robot.stop_episode()  # or it ended by itself on a loaded machine: either way it ends
        assert outcome_after(robot, 0, 10) is not None
        yield RunningNode(robot, process, dict(params))
    finally:
        robot.close()
        process.stop()
        assert NODE_KEY not in process.log(), 'the API key reached the log'
