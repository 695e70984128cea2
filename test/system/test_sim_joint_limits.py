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


def held(core, value, actual, dt, arrivals=None):
    """Run one physics step on a forward controller's held `value`."""
    commands = core.schedule(ONE, np.array([value]), np.array([actual]), 0.0, dt,
                             [] if arrivals is None else arrivals)
    return core.positions(ONE, commands, np.array([actual]), np.array([0.0]), V)


def test_a_forward_step_is_clamped_as_kilted_clamped_it():
    core = limiter()
    position, clamp = held(core, -0.003692, 0.0, 0.001)
    assert position.tolist() == pytest.approx([-0.002175])
    assert clamp.line(('panda_joint1',)) == (
        'Command of at least one joint is out of limits (throttled log). Joint: '
        "'panda_joint1', (actual: [position: 0.000000, velocity: 0.000000], command: "
        '[position: -0.003692], limited: [position: -0.002175]) with desired period : '
        '0.001000 sec.')
    # The next update goes on from the limited command, not from the arm.
    position, clamp = held(core, -0.003692, 0.0, 0.001)
    assert position.tolist() == pytest.approx([-0.003692]) and clamp is None


def test_a_held_step_is_spread_over_the_updates_of_a_physics_step():
    core = limiter()
    # 20 mrad written at once, a 5 ms physics step = 5 updates of at most 2.175 mrad.
    position, clamp = held(core, 0.02, 0.0, 0.005)
    assert position.tolist() == pytest.approx([5 * 0.002175]) and clamp is not None


def test_messages_arriving_within_a_physics_step_are_written_update_by_update():
    core = limiter()
    held(core, 0.0, 0.0, 0.005)
    # A line at 1 kHz: 1 mrad a message, one message per update: nothing to clamp.
    arrivals = [(0.001 * k - 0.0005, np.array([0.001 * k])) for k in range(1, 6)]
    position, clamp = held(core, 0.005, 0.0, 0.005, arrivals)
    assert clamp is None and position.tolist() == pytest.approx([0.005])
    # The same 5 mrad as one message: clamped, 2 updates to get there.
    position, clamp = held(core, 0.010, 0.005, 0.005, [(0.0005, np.array([0.010]))])
    assert clamp is not None and position.tolist() == pytest.approx([0.010])


def test_a_sampled_trajectory_within_the_limit_is_not_clamped():
    core = limiter()
    # A trajectory controller's 5 ms of motion at 2 rad/s: 1 mrad per 1 ms update... ramped.
    q = 0.0
    for k in range(1, 50):
        commands = core.schedule(ONE, np.array([k * 0.01]), np.array([q]), 0.0, 0.005,
                                 None)
        position, clamp = core.positions(ONE, commands, np.array([q]), np.array([2.0]), V)
        assert clamp is None, k
        q = float(position[0])
    assert q == pytest.approx(0.49)


def test_a_velocity_is_clamped_to_the_limit_and_integrated_one_update_behind():
    core = limiter()
    position, clamp = core.velocities(ONE, np.array([3.0]), np.array([0.0]), V, 0.005)
    # GenericSystem: the first update moves by the old state (0), the next four by 2.175.
    assert position.tolist() == pytest.approx([4 * 0.001 * 2.175])
    assert clamp.kind == 'velocity' and clamp.limited == pytest.approx(2.175)
    position, clamp = core.velocities(ONE, np.array([1.0]), position, V, 0.005)
    assert position.tolist() == pytest.approx([4 * 0.001 * 2.175 + 0.001 * 2.175 + 0.004])


def test_a_velocity_stops_at_the_position_limit():
    core = limiter()
    position = np.array([2.89])
    for _ in range(20):
        position, _ = core.velocities(ONE, np.array([2.0]), position, V, 0.005)
    assert position[0] <= 2.8973 + 1e-9


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
    speed = np.abs(np.diff(q)) / np.diff(t)
    assert speed.max() <= 2.175 * 1.02, 'a step beyond the speed limit reached the joint'
    assert speed.max() >= 2.175 * 0.9, 'the step was not taken at the speed limit'


def test_jazzy_does_not_enforce_limits_by_default(ros):
    errors, _ = step_against_sim(ros, 'jazzy', '/jl_jazzy')
    assert errors == []
