"""
One episode of a real policy node against a real sim_arm in a forward mode, recorded.

The gateway runs at real time (the sim's speed limits are then the joints' own) with a short
latency; the sim reads the shipped controllers file, as a robot's controller_manager would
(update_rate 1000), with the controller rules of `distro`. Recorded: the joint states at their
stamps, every message on the arm controller's `commands` topic, the controller_manager's and
the controllers' ERROR lines, the node's ~/chunks events, the episode's outcome and the node's
log.
"""

from dataclasses import dataclass, field
import json
import threading
import time

import numpy as np
from rcl_interfaces.msg import Log
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from sequence_ai_ros.demo.configs import config_file, find_config
from sequence_ai_ros.demo.controllers import controller_setup
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.child_processes import ChildProcess, ros_environment
from sequence_ai_ros.harness.ros_side import RosSide
from sequence_ai_ros.harness.service_calls import change_state, lifecycle_state
from sequence_ai_ros.runtime.log_level import ERROR, log_level
from sequence_ai_ros.world import arm_model
from std_msgs.msg import Float64MultiArray, String

RELIABLE = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)
KEY = 'seq_forward_tests_key_000000000001'
JOINT_STATE_HZ = 200.0
ARM = 7


@dataclass
class Episode:
    """What one episode left behind."""

    states: list = field(default_factory=list)  # (stamp, 7 arm positions)
    commands: list = field(default_factory=list)  # (receipt, values)
    manager_errors: list = field(default_factory=list)
    controller_errors: list = field(default_factory=list)
    chunks: list = field(default_factory=list)  # the node's ~/chunks events, in join order
    outcome: dict | None = None
    node_log: str = ''
    sim_log: str = ''

    def arrays(self):
        """Return (stamps, positions) of the arm joints, in stamp order."""
        states = sorted(self.states)
        return np.array([s[0] for s in states]), np.array([s[1] for s in states])


GATEWAY_OPTIONS = {'keys': {KEY: 10**6}, 'startup_timeout_s': 30.0}


def gateway_args(*args, time_scale=1.0):
    """Return the flags of a warm gateway (real time, 0.3 s median latency unless told)."""
    return ['--time-scale', repr(time_scale), '--start-warm',
            *(args or ('--latency-median-s', '0.3'))]


def start_gateway(*args, time_scale=1.0):
    """Start the gateway of gateway_args(*args); the caller closes it."""
    return GatewayProcess(gateway_args(*args, time_scale=time_scale), **GATEWAY_OPTIONS).start()


def run(tmp_path, domain, gateway, mode, distro, actions=45, time_scale=1.0, **node_params):
    """Run one episode of `actions` in `mode` against `distro`'s controllers; return it."""
    ns = f'/fw_{mode}_{distro}_{int(time.monotonic() * 1e3) % 100000}'
    sim_args, params = controller_setup(mode, 'trajectory', distro)
    env = ros_environment(domain)
    sim = ChildProcess('sim_arm', 'sequence_ai_ros.sim.node', [
        '--ros-args', '-r', f'__ns:={ns}', '-p', f'joint_state_rate_hz:={JOINT_STATE_HZ!r}',
        '-p', 'target_xy:=[0.55, -0.2]', '-p', f'time_scale:={time_scale!r}', *sim_args,
        '--params-file', str(find_config('ros2_control/panda_controllers.yaml'))],
        env, tmp_path / 'sim.log')
    params.update(model='pi05-droid', base_url=gateway.base_url, max_actions=actions,
                  hold_service=f'{ns}/sim_arm/hold', **node_params)
    node = ChildProcess('policy_node', 'sequence_ai_ros.node.main', [
        '--ros-args', '-r', f'__ns:={ns}', '--params-file', str(config_file('pi05-droid')),
        *[a for k, v in params.items() for a in ('-p', f'{k}:={_value(v)}')]],
        dict(env, SEQUENCES_API_KEY=KEY), tmp_path / 'node.log')
    ros = RosSide('forward_episode', domain)
    episode = Episode()
    recorder = _Recorder(ros, ns, params['controller_name'], episode)
    try:
        _drive(recorder, episode, actions)
    finally:
        node.stop()
        sim.stop()
        recorder.close()
        ros.close()
        episode.node_log = node.log_path.read_text(errors='replace')
        episode.sim_log = sim.log_path.read_text(errors='replace')
    return episode


def _value(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, list):
        return '[' + ', '.join(repr(float(x)) for x in v) + ']'
    return str(v)


def _drive(recorder, episode, actions):
    from lifecycle_msgs.msg import Transition
    deadline = time.monotonic() + 30.0
    while not lifecycle_state(recorder.get, 1.0):
        assert time.monotonic() < deadline, 'the policy node did not come up'
    for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
        assert change_state(recorder.change, recorder.get, transition, 30.0), \
            'the policy node did not configure and activate'
    deadline = time.monotonic() + 30.0 + actions / 15.0 * 3  # at most real time
    while episode.outcome is None:
        assert time.monotonic() < deadline, 'the episode did not end'
        time.sleep(0.05)
    time.sleep(0.5)  # the end-at-rest message and the arm's last steps


class _Recorder:

    def __init__(self, ros, ns, controller, episode):
        from lifecycle_msgs.srv import ChangeState, GetState
        self.ros, self.ns, self.episode = ros, ns, episode
        self.lock = threading.Lock()
        self.node = rclpy.create_node('forward_recorder', context=ros.context)
        node = self.node
        node.create_subscription(JointState, f'{ns}/joint_states', self._on_state, RELIABLE)
        node.create_subscription(Float64MultiArray, f'{ns}/{controller}/commands',
                                 self._on_command, RELIABLE)
        node.create_subscription(String, f'{ns}/policy_node/episode_outcome',
                                 self._on_outcome, RELIABLE)
        node.create_subscription(String, f'{ns}/policy_node/chunks',
                                 lambda msg: episode.chunks.append(json.loads(msg.data)),
                                 RELIABLE)
        node.create_subscription(Log, '/rosout', self._on_log, RELIABLE)
        self.change = node.create_client(ChangeState, f'{ns}/policy_node/change_state')
        self.get = node.create_client(GetState, f'{ns}/policy_node/get_state')
        self._index = None
        ros.executor.add_node(node)

    def close(self):
        self.ros.executor.remove_node(self.node)
        self.node.destroy_node()

    def _on_state(self, msg):
        if self._index is None:
            self._index = [list(msg.name).index(n) for n in arm_model.JOINT_NAMES]
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.episode.states.append((stamp, [msg.position[i] for i in self._index]))

    def _on_command(self, msg):
        self.episode.commands.append((time.time(), list(msg.data)))

    def _on_outcome(self, msg):
        if self.episode.outcome is None:
            self.episode.outcome = json.loads(msg.data)

    def _on_log(self, msg):
        prefix = self.ns.strip('/').replace('/', '.') + '.'
        if log_level(msg) < ERROR or not msg.name.startswith(prefix):
            return
        if msg.name.endswith('controller_manager'):
            self.episode.manager_errors.append(msg.msg)
        elif msg.name.endswith('controller'):
            self.episode.controller_errors.append(msg.msg)


def steps_past_the_limit(episode, update_period=0.001):
    """Return the share of messages that step further than one update at the speed limit."""
    values = [np.array(c[1][:ARM]) for c in episode.commands]
    if len(values) < 2:
        return 0.0
    steps = np.abs(np.diff(np.array(values), axis=0))
    over = (steps > arm_model.VELOCITY_LIMITS * update_period).any(axis=1)
    return float(np.mean(over))
