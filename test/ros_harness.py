"""
Run the policy node as a real process and talk to it over DDS from the test.

The test side plays the robot: it publishes joint states and camera frames (so a test can make
them stale or NaN), records every command, offers the hold service, and drives the lifecycle.
"""

from array import array
import collections
import contextlib
from dataclasses import dataclass, field
import io
import json
import math
import os
from pathlib import Path
import tempfile
import threading
import time

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from fixtures_gateway import NODE_KEY, NODE_SCALE  # the node tests' gateway's
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from PIL import Image as PILImage
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros.harness.child_processes import child_env, ChildProcess
from sequence_ai_ros.harness.proc_stats import open_sockets, thread_count
from sequence_ai_ros.harness.scripted_robot import raw_frame
from sequence_ai_ros.harness.service_calls import call_service, change_state
from sequence_ai_ros.node.params import PARAMETERS
from sequence_ai_ros.sim.render import SceneRenderer
from sequence_ai_ros.world import arm_model
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
import yaml

REPO = str(Path(__file__).resolve().parents[1])
NAMES = list(arm_model.JOINT_NAMES) + [arm_model.GRIPPER_JOINT]
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
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


class Robot:
    """The test's side of DDS for one namespace: sensors out, commands and diagnostics in."""

    def __init__(self, node, namespace, *, joint_rate_hz=50.0, camera_rate_hz=10.0,
                 compressed=False, stamp_frames=False, watch_diagnostics=False):
        """
        Play the robot of `namespace`.

        `compressed` is one flag for both cameras or a (exterior, wrist) pair; `stamp_frames`
        stamps camera frames (joint states are always stamped); `watch_diagnostics` keeps
        (time, status) of this namespace's /diagnostics statuses in `diagnostics`.
        """
        self.node = node
        self.ns = f'/{namespace}'
        self.joint_rate_hz, self.camera_rate_hz = joint_rate_hz, camera_rate_hz
        self.positions = [float(v) for v in arm_model.HOME] + [0.0]
        self.names = list(NAMES)
        self.publish_joints = True
        self.publish_cameras = True
        self.follow = True
        self.stamp_frames = stamp_frames
        # Added to the stamps the timers put on (a clock that jumped); 0 = now.
        self.joint_stamp_shift_s = 0.0
        self.frame_stamp_shift_s = 0.0
        # Camera index -> message published instead of the rendered frame, every camera tick.
        self.frame_overrides = {}
        self._injections = []
        self.commands = []
        self.outcomes = []
        self.diagnostics = []
        self.holds = 0
        self.hold_times = []
        self.joint_sent = collections.deque(maxlen=5000)  # publish times, to tell whose stall
        self._renderer = SceneRenderer(160, 120)
        self._frames = (None, [])
        self._lock = threading.Lock()
        self._entities = []
        keep = self._keep
        self.joint_pub = keep(node.create_publisher(JointState, f'{self.ns}/joint_states',
                                                    qos_profile_sensor_data))
        self.compressed = compressed
        self.compressed_views = (compressed,) * 2 if isinstance(compressed, bool) \
            else tuple(compressed)
        self.image_pubs = [keep(node.create_publisher(
            *((CompressedImage, f'{self.ns}/camera/{view}/image_raw/compressed') if packed
              else (Image, f'{self.ns}/camera/{view}/image_raw')), qos_profile_sensor_data))
            for view, packed in zip(('exterior', 'wrist'), self.compressed_views)]
        self.instruction_pub = keep(node.create_publisher(String, f'{self.ns}/instruction',
                                                          RELIABLE))
        self.gate_pub = keep(node.create_publisher(Bool, f'{self.ns}/safety_gate', RELIABLE))
        keep(node.create_subscription(
            JointTrajectory, f'{self.ns}/joint_trajectory_controller/joint_trajectory',
            self._on_command, RELIABLE))
        keep(node.create_subscription(String, f'{self.ns}/policy_node/episode_outcome',
                                      lambda msg: self.outcomes.append(msg.data), RELIABLE))
        keep(node.create_service(Trigger, f'{self.ns}/robot/hold', self._on_hold))
        if watch_diagnostics:
            keep(node.create_subscription(DiagnosticArray, '/diagnostics',
                                          self._on_diagnostics, 50))
        keep(node.create_timer(1.0 / joint_rate_hz, self._send_joints))
        keep(node.create_timer(1.0 / camera_rate_hz, self._send_frames))
        self.change_client = keep(node.create_client(
            ChangeState, f'{self.ns}/policy_node/change_state'))
        self.state_client = keep(node.create_client(GetState,
                                                    f'{self.ns}/policy_node/get_state'))
        self.start_client = keep(node.create_client(Trigger,
                                                    f'{self.ns}/policy_node/start_episode'))
        self.stop_client = keep(node.create_client(Trigger,
                                                   f'{self.ns}/policy_node/stop_episode'))
        self.set_params_client = keep(node.create_client(
            SetParameters, f'{self.ns}/policy_node/set_parameters'))
        self.get_params_client = keep(node.create_client(
            GetParameters, f'{self.ns}/policy_node/get_parameters'))

    def _keep(self, entity):
        self._entities.append(entity)
        return entity

    def every(self, period, callback):
        """Create a timer that goes away with this robot."""
        return self._keep(self.node.create_timer(period, callback))

    def close(self):
        """Remove every publisher, subscription, service, client and timer of this robot."""
        self.publish_joints = self.publish_cameras = False
        timers = [e for e in self._entities if hasattr(e, 'timer_period_ns')]
        for entity in timers + [e for e in self._entities if e not in timers]:
            for destroy in (self.node.destroy_timer, self.node.destroy_publisher,
                            self.node.destroy_subscription, self.node.destroy_service,
                            self.node.destroy_client):
                try:
                    if destroy(entity):
                        break
                except Exception:
                    continue
        self._entities = []

    def _on_command(self, msg):
        with self._lock:
            self.commands.append((time.monotonic(), msg))
        if self.follow and msg.points and len(msg.points[0].positions) == len(self.positions):
            # An ideal controller: the arm is where it was last told to be, so the loop closes.
            self.positions = [float(v) for v in msg.points[0].positions]

    def _on_diagnostics(self, msg):
        now = time.monotonic()
        # '/ns/' so that '/arm1' does not collect '/arm10'.
        self.diagnostics.extend((now, status) for status in msg.status
                                if status.hardware_id.startswith(f'{self.ns}/'))

    def _on_hold(self, request, response):
        self.hold_times.append(time.monotonic())
        self.holds += 1
        response.success, response.message = True, 'holding'
        return response

    def _send_joints(self):
        while self._injections:  # from the test thread; published on this one, in order
            publisher, message = self._injections.pop(0)
            publisher.publish(message)
        if not self.publish_joints:
            return
        msg = JointState(name=self.names, position=list(self.positions))
        msg.header.stamp = self.stamp(self.joint_stamp_shift_s)
        self.joint_pub.publish(msg)
        self.joint_sent.append(time.monotonic())

    def joint_gap_at(self, since):
        """Return (longest pause, its start - since) of the joint states sent after `since`."""
        sent = [t for t in self.joint_sent if t > since]
        return max(((round(b - a, 3), round(a - since, 3)) for a, b in zip(sent, sent[1:])),
                   default=(0.0, 0.0))

    def stamp(self, shift_s=0.0):
        """Return now plus `shift_s` as a header stamp."""
        return _time(self.node.get_clock().now().nanoseconds + round(shift_s * 1e9))

    def inject(self, publisher, message):
        """Publish `message` once, from the joint-state timer's thread, before the next state."""
        self._injections.append((publisher, message))

    def _send_frames(self):
        if not self.publish_cameras:
            return
        q = tuple(self.positions[:7])
        if self._frames[0] != q:  # render only when the arm moved
            messages = []
            for render in (self._renderer.exterior, self._renderer.wrist):
                pixels = render(q, (0.5, 0.2))
                if self.compressed_views[len(messages)]:
                    buffer = io.BytesIO()
                    PILImage.fromarray(pixels).save(buffer, 'JPEG', quality=92)
                    messages.append(CompressedImage(format='jpeg',
                                                    data=array('B', buffer.getvalue())))
                    continue
                messages.append(raw_frame(pixels))
            self._frames = (q, messages)
        for index, (pub, msg) in enumerate(zip(self.image_pubs, self._frames[1])):
            msg = self.frame_overrides.get(index, msg)
            if self.stamp_frames:
                msg.header.stamp = self.stamp(self.frame_stamp_shift_s)
            pub.publish(msg)

    def command_list(self):
        with self._lock:
            return list(self.commands)

    def call(self, client, request, timeout=10.0):
        return call_service(client, request, timeout)

    def transition(self, transition_id, timeout=20.0):
        """Change the node's lifecycle state and return whether it took (lost replies too)."""
        return change_state(self.change_client, self.state_client, transition_id, timeout)

    def configure(self):
        return self.transition(Transition.TRANSITION_CONFIGURE)

    def activate(self):
        return self.transition(Transition.TRANSITION_ACTIVATE)

    def deactivate(self):
        return self.transition(Transition.TRANSITION_DEACTIVATE)

    def cleanup(self):
        return self.transition(Transition.TRANSITION_CLEANUP)

    def state(self):
        return self.call(self.state_client, GetState.Request()).current_state.label

    def start_episode(self):
        """Call ~/start_episode; return the Trigger response."""
        return self.call(self.start_client, Trigger.Request())

    def stop_episode(self):
        """Call ~/stop_episode; return the Trigger response."""
        return self.call(self.stop_client, Trigger.Request())

    def set_parameters(self, **values):
        """Set the node's parameters one by one; return the SetParametersResult of each."""
        request = SetParameters.Request(parameters=[
            Parameter(name=name, value=parameter_value(value)) for name, value in values.items()])
        return list(self.call(self.set_params_client, request).results)

    def get_parameter(self, name):
        """Return the ParameterValue of one of the node's parameters."""
        answer = self.call(self.get_params_client, GetParameters.Request(names=[name]))
        return answer.values[0]

    def reset(self):
        """Back to a healthy robot at HOME: every fault a test may have set is undone."""
        self.positions = [float(v) for v in arm_model.HOME] + [0.0]
        self.names = list(NAMES)
        self.publish_joints = self.publish_cameras = self.follow = True
        self.joint_stamp_shift_s = self.frame_stamp_shift_s = 0.0
        self.frame_overrides = {}
        self._frames = (None, [])


def parameter_value(value):
    """Wrap a Python value as an rcl_interfaces ParameterValue of the matching type."""
    if isinstance(value, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    if isinstance(value, int):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    if isinstance(value, float):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    if isinstance(value, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    if value and all(isinstance(v, str) for v in value):
        return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=value)
    if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER_ARRAY,
                              integer_array_value=value)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                          double_array_value=[float(v) for v in value])


def _time(nanoseconds):
    sec, nanosec = divmod(max(0, nanoseconds), 1_000_000_000)
    return Time(sec=sec, nanosec=nanosec)


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
