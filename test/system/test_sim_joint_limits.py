"""
The simulated controller_manager's joint-limit enforcement: its rule, then over DDS.

The rule is ros2_control's saturation limiter (joint_limits/src/joint_limits_helpers.cpp,
compute_position_limits / compute_velocity_limits); the numbers of the first test are the ones
Kilted's controller_manager logged for a forward_position step of the node.
"""

import time

import numpy as np
import pytest
from rcl_interfaces.msg import Log
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_harness import wait_until
from sensor_msgs.msg import JointState
from sequence_ai_ros.demo.configs import find_config
from sequence_ai_ros.runtime.log_level import ERROR, log_level
from sequence_ai_ros.sim.arm import SimArm
from sequence_ai_ros.sim.hardware import HardwareLoop
from sequence_ai_ros.sim.joint_limits import JointLimiter
from sequence_ai_ros.world import arm_model
from sim_process import SimProcess
from std_msgs.msg import Float64MultiArray

ONE = np.array([0])
V = np.array([2.175])
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
CONTROLLERS = find_config('ros2_control/panda_controllers.yaml')


def limiter(period=0.001):
    return JointLimiter(np.array([-2.8973]), np.array([2.8973]), period)


def clamp_position(core, value, actual, period=0.001):
    """Limit one update's position command on joint 1."""
    return core.position(ONE, np.array([value]), np.array([actual]), np.array([0.0]), V, period)


class Held:
    """A forward position controller: the last message that arrived by each update, held."""

    command_interface = 'position'
    claimed_joints = ('panda_joint1',)

    def __init__(self, arrivals):
        self.arrivals = list(arrivals)  # (time, value), in order

    def update(self, now, position, velocity):
        values = [value for at, value in self.arrivals if at <= now]
        return np.array([values[-1]]) if values else None


def loop_of(controller, step_period=0.005):
    arm = SimArm(arm_model.HOME)
    lower, upper = arm.position_limits
    limits = JointLimiter(lower, upper, 0.001)
    return arm, limits, HardwareLoop(arm, [controller], limiter=limits, step_period=step_period)


def test_a_forward_step_is_clamped_as_kilted_clamped_it():
    core = limiter()
    position, clamp = clamp_position(core, -0.003692, 0.0)
    assert position.tolist() == pytest.approx([-0.002175])
    assert clamp.line(('panda_joint1',)) == (
        'Command of at least one joint is out of limits (throttled log). Joint: '
        "'panda_joint1', (actual: [position: 0.000000, velocity: 0.000000], command: "
        '[position: -0.003692], limited: [position: -0.002175]) with desired period : '
        '0.001000 sec.')
    # The next update goes on from the limited command, not from the arm.
    position, clamp = clamp_position(core, -0.003692, 0.0)
    assert position.tolist() == pytest.approx([-0.003692]) and clamp is None


def test_the_reach_of_an_update_is_its_measured_period():
    # compute_position_limits: max_velocity x dt, dt the update's (measured) period.
    position, clamp = clamp_position(limiter(), 0.01, 0.0, period=0.003)
    assert position.tolist() == pytest.approx([3 * 0.002175]) and clamp is not None


def test_a_held_step_is_spread_over_the_updates_of_a_physics_step():
    home = arm_model.HOME[0]
    arm, limits, loop = loop_of(Held([(0.0, home + 0.02)]))
    clamps = []
    loop._on_clamp = clamps.append
    # 20 mrad written at once, a 5 ms physics step = 5 updates of at most 2.175 mrad; the
    # state read lags the last one written by an update.
    loop.step(1.0, 0.005)
    assert arm.position[0] - home == pytest.approx(4 * 0.002175) and len(clamps) == 1


def test_messages_arriving_within_a_physics_step_are_written_update_by_update():
    home = arm_model.HOME[0]
    # A line at 1 kHz: 1 mrad a message, one message per update: nothing to clamp.
    arrivals = [(0.995 + 0.001 * k - 0.0005, home + 0.001 * k) for k in range(1, 11)]
    arm, limits, loop = loop_of(Held(arrivals))
    loop.step(1.0, 0.005)
    loop.step(1.005, 0.005)
    assert limits.clamped_updates == 0
    assert [q[0] - home for _, q, _ in loop.samples] == pytest.approx(
        [0.005, 0.006, 0.007, 0.008, 0.009])


def test_a_velocity_is_clamped_to_the_limit():
    core = limiter()
    limited, clamp = core.velocity(ONE, np.array([3.0]), np.array([0.0]), np.array([0.0]), V,
                                   0.001)
    assert limited.tolist() == pytest.approx([2.175])
    assert clamp.kind == 'velocity' and clamp.limited == pytest.approx(2.175)


def test_a_velocity_stops_at_the_position_limit():
    core = limiter()
    limited, clamp = core.velocity(ONE, np.array([2.0]), np.array([2.8963]), np.array([2.0]),
                                   V, 0.001)
    assert limited.tolist() == pytest.approx([1.0]) and clamp is not None


# -- over DDS: a forward step against the sim ------------------------------------------------

def step_against_sim(ros, distro, namespace):
    """Send one 20 mrad forward_position step to joint1; return (error lines, joint1 series)."""
    sim = SimProcess(namespace, 'arm_controller:=forward_position_controller',
                     f'controller_distro:={distro}', 'joint_state_rate_hz:=200.0',
                     'joint_states_every_update:=true',  # Kilted: each update's, stamped
                     params_file=CONTROLLERS)
    node = ros.node
    errors, states = [], []
    prefix = namespace.strip('/') + '.controller_manager'

    def on_log(msg):
        if msg.name == prefix and log_level(msg) >= ERROR:
            errors.append(msg.msg)

    subs = [node.create_subscription(Log, '/rosout', on_log, RELIABLE),
            node.create_subscription(
                JointState, f'{namespace}/joint_states',
                lambda m: states.append((m.header.stamp.sec + m.header.stamp.nanosec * 1e-9,
                                         m.position[0])), RELIABLE)]
    pub = node.create_publisher(Float64MultiArray, f'{namespace}/forward_position_controller/'
                                'commands', 10)
    try:
        assert wait_until(lambda: len(states) > 20 and pub.get_subscription_count() > 0, 20), \
            sim.output()
        home = [float(v) for v in arm_model.HOME]
        pub.publish(Float64MultiArray(data=home))  # the first command: where the arm is
        time.sleep(0.3)
        pub.publish(Float64MultiArray(data=[home[0] + 0.02] + home[1:]))
        assert wait_until(lambda: states and abs(states[-1][1] - home[0] - 0.02) < 1e-9, 10)
        time.sleep(0.5)
        return list(errors), list(states)
    finally:
        for sub in subs:
            node.destroy_subscription(sub)
        node.destroy_publisher(pub)
        sim.stop()


def test_kilted_clamps_a_forward_step_to_the_speed_limit_and_says_so(ros):
    errors, states = step_against_sim(ros, 'kilted', '/jl_kilted')
    assert any("out of limits (throttled log). Joint: 'panda_joint1'" in e and
               'with desired period : 0.001000 sec.' in e for e in errors), errors
    t = np.array([s[0] for s in states])
    q = np.array([s[1] for s in states])
    # Each state shows what the update before wrote, limited over that update's measured
    # period (the stamps before it): after a late update the step looks faster than the limit.
    speed = np.abs(np.diff(q))[1:] / np.diff(t)[:-1]
    assert speed.max() <= 2.175 * 1.02, 'a step beyond the speed limit reached the joint'
    assert speed.max() >= 2.175 * 0.9, 'the step was not taken at the speed limit'


def test_jazzy_does_not_enforce_limits_by_default(ros):
    errors, _ = step_against_sim(ros, 'jazzy', '/jl_jazzy')
    assert errors == []
