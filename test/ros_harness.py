"""
Run the policy node as a real process and talk to it over DDS from the test.

The test side plays the robot: it publishes joint states and camera frames (so a test can make
them stale or NaN), records every command, offers the hold service, and drives the lifecycle.
"""

from array import array
import io
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import threading
import time

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from PIL import Image as PILImage
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros import arm_model
from sequence_ai_ros.sim.render import SceneRenderer
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
import yaml

REPO = str(Path(__file__).resolve().parents[1])
NAMES = list(arm_model.JOINT_NAMES) + [arm_model.GRIPPER_JOINT]
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


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
    }
    params.update(overrides)
    return params


class PolicyNodeProcess:
    """`python -m sequence_ai_ros.node.main` with a parameter file, in a namespace."""

    def __init__(self, namespace, params, env):
        self.namespace = namespace
        self._dir = tempfile.TemporaryDirectory()
        path = os.path.join(self._dir.name, 'params.yaml')
        with open(path, 'w') as handle:
            yaml.safe_dump({'/**': {'ros__parameters': params}}, handle)
        self.log_path = os.path.join(self._dir.name, 'node.log')
        self._log = open(self.log_path, 'wb')
        self._final_log = None
        full_env = dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED='1', **env)
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'sequence_ai_ros.node.main', '--ros-args', '-r',
             f'__ns:=/{namespace}', '--params-file', path],
            stdout=self._log, stderr=subprocess.STDOUT, env=full_env)

    def log(self):
        if self._final_log is not None:
            return self._final_log
        with open(self.log_path, 'rb') as handle:
            return handle.read().decode(errors='replace')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._final_log is None:
            self._log.close()
            self._final_log = self.log()
            self._dir.cleanup()
        return self.proc.returncode


class Robot:
    """The test's side of DDS for one namespace: sensors out, commands and diagnostics in."""

    def __init__(self, node, namespace, *, joint_rate_hz=50.0, camera_rate_hz=10.0,
                 compressed=False):
        self.node = node
        self.ns = f'/{namespace}'
        self.positions = [float(v) for v in arm_model.HOME] + [0.0]
        self.names = list(NAMES)
        self.publish_joints = True
        self.publish_cameras = True
        self.follow = True
        self.commands = []
        self.outcomes = []
        self.diagnostics = []
        self.holds = 0
        self._renderer = SceneRenderer(160, 120)
        self._frames = (None, [])
        self._lock = threading.Lock()
        self._entities = []
        keep = self._keep
        self.joint_pub = keep(node.create_publisher(JointState, f'{self.ns}/joint_states',
                                                    qos_profile_sensor_data))
        self.compressed = compressed
        kind, suffix = (CompressedImage, '/compressed') if compressed else (Image, '')
        self.image_pubs = [keep(node.create_publisher(
            kind, f'{self.ns}/camera/{view}/image_raw{suffix}', qos_profile_sensor_data))
            for view in ('exterior', 'wrist')]
        self.gate_pub = keep(node.create_publisher(Bool, f'{self.ns}/safety_gate', RELIABLE))
        keep(node.create_subscription(
            JointTrajectory, f'{self.ns}/joint_trajectory_controller/joint_trajectory',
            self._on_command, RELIABLE))
        keep(node.create_subscription(String, f'{self.ns}/policy_node/episode_outcome',
                                      lambda msg: self.outcomes.append(msg.data), RELIABLE))
        keep(node.create_service(Trigger, f'{self.ns}/robot/hold', self._on_hold))
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

    def _on_hold(self, request, response):
        self.holds += 1
        response.success, response.message = True, 'holding'
        return response

    def _send_joints(self):
        if not self.publish_joints:
            return
        msg = JointState(name=self.names, position=list(self.positions))
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.joint_pub.publish(msg)

    def _send_frames(self):
        if not self.publish_cameras:
            return
        q = tuple(self.positions[:7])
        if self._frames[0] != q:  # render only when the arm moved
            messages = []
            for render in (self._renderer.exterior, self._renderer.wrist):
                pixels = render(q, (0.5, 0.2))
                if self.compressed:
                    buffer = io.BytesIO()
                    PILImage.fromarray(pixels).save(buffer, 'JPEG', quality=92)
                    messages.append(CompressedImage(format='jpeg',
                                                    data=array('B', buffer.getvalue())))
                    continue
                messages.append(Image(height=pixels.shape[0], width=pixels.shape[1],
                                      encoding='rgb8', step=pixels.shape[1] * 3,
                                      data=array('B', pixels.tobytes())))
            self._frames = (q, messages)
        for pub, msg in zip(self.image_pubs, self._frames[1]):
            pub.publish(msg)

    def command_list(self):
        with self._lock:
            return list(self.commands)

    def call(self, client, request, timeout=10.0):
        if not client.service_is_ready():
            if not client.wait_for_service(timeout_sec=timeout):
                raise TimeoutError(f'{client.srv_name} not available')
            time.sleep(0.3)  # let the reply reader match too
        future = client.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > deadline:
                raise TimeoutError(f'{client.srv_name} did not answer')
            time.sleep(0.01)
        return future.result()

    def transition(self, transition_id, timeout=20.0):
        """
        Change the node's lifecycle state and return whether it took.

        If the answer is lost (a DDS service can drop the reply of a request sent before its
        reply reader matched), read the state to learn the result.
        """
        request = ChangeState.Request()
        request.transition = Transition(id=transition_id)
        try:
            return self.call(self.change_client, request, timeout).success
        except TimeoutError:
            goal = {Transition.TRANSITION_CONFIGURE: 'inactive',
                    Transition.TRANSITION_ACTIVATE: 'active',
                    Transition.TRANSITION_DEACTIVATE: 'inactive'}.get(transition_id)
            return self.state() == goal

    def configure(self):
        return self.transition(Transition.TRANSITION_CONFIGURE)

    def activate(self):
        return self.transition(Transition.TRANSITION_ACTIVATE)

    def deactivate(self):
        return self.transition(Transition.TRANSITION_DEACTIVATE)

    def state(self):
        return self.call(self.state_client, GetState.Request()).current_state.label


class RosSide:
    """An rclpy context and a spinning executor for the test process."""

    def __init__(self):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('test_side', context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.node)
        self._running = True
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        # A callback that raises must not end the spinning for every later test.
        while self._running and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001
                print(f'test-side callback raised: {type(exc).__name__}: {exc}')

    def close(self):
        self._running = False
        self._thread.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def wait_until(predicate, timeout, interval=0.02):
    """Poll until predicate() is truthy; return its last value."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    return value
