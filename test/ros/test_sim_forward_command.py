"""
The simulated forward_command_controller: its rules with no DDS, then its node over DDS.

Upstream: ros-controls/ros2_controllers. Each test names its rule's lines as
`<path> @ <commit> (<branch>), lines A-B`; how far each branch was established is in
sequence_ai_ros/sim/forward_command.py. What follows an update error is ros2_control's
controller_manager (PR #1499), cited without lines: its stored versions come without a
commit.
"""

import itertools
import subprocess
import sys
import time

import numpy as np
import pytest
from rcl_interfaces.msg import Log
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_system_default
from ros_harness import wait_until
from sequence_ai_ros.harness.service_calls import call_service
from sequence_ai_ros.runtime.log_level import ERROR, log_level
from sequence_ai_ros.sim.forward_command import (
    DEACTIVATED,
    ForwardCommand,
    ForwardCommandController,
    HAS_MESSAGE_INFO,
    NON_FINITE,
    SIZE_MISMATCH,
)
from spun_nodes import spun_nodes
from std_msgs.msg import Float64MultiArray

JOINTS = ('panda_joint1', 'panda_joint2')
NAMES = itertools.count()


def cycle(core):
    """Run one update; return (the interfaces' values as a list or None, the error line)."""
    values, error = core.update()
    return (None if values is None else values.tolist()), error


def integrate(controller, position, dt, steps, now=0.0):
    """Step a velocity-commanded pair of joints `steps` times; return the positions."""
    q = np.array(position, dtype=float)
    for k in range(steps):
        v = controller.update(now + k * dt, q, np.zeros_like(q))
        if v is not None:
            q = q + v * dt
    return q


# -- the rules, with no DDS -----------------------------------------------------------------

def test_nothing_is_written_before_the_first_command():
    # update(), no command received yet -> the interfaces are left alone:
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 137-141.
    core = ForwardCommand(JOINTS, 'velocity')
    assert cycle(core) == (None, '')


def test_the_last_command_is_written_every_cycle_with_no_timeout():
    # update() has no clock in it: a velocity controller keeps moving when commands stop.
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 132-166.
    core = ForwardCommand(JOINTS, 'velocity')
    assert core.receive([0.1, -0.2]) == ''
    for _ in range(100_000):
        values, error = core.update()
    np.testing.assert_array_equal(values, [0.1, -0.2])
    assert error == ''


def test_a_newer_command_replaces_the_kept_one():
    # The subscription keeps the latest message (writeFromNonRT):
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 59-75.
    core = ForwardCommand(JOINTS, 'position')
    core.receive([0.1, 0.2])
    core.receive([0.3, 0.4])
    np.testing.assert_array_equal(core.update()[0], [0.3, 0.4])


def test_a_non_finite_command_is_dropped_with_upstreams_text_and_the_last_one_stays():
    # on_configure's subscription callback (#1817; its jazzy release was not re-checked):
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 63-73.
    core = ForwardCommand(JOINTS, 'velocity')
    core.receive([0.1, 0.2])
    assert core.receive([float('nan'), 0.0]) == NON_FINITE
    assert core.receive([0.0, float('inf')]) == 'Non-finite value received. Dropping message'
    np.testing.assert_array_equal(core.update()[0], [0.1, 0.2])


def test_a_wrong_size_command_writes_nothing_and_says_upstreams_text():
    # update(): forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 143-150; Humble's controller_manager leaves the controller active.
    core = ForwardCommand(JOINTS, 'velocity', deactivate_on_error=False)
    core.receive([0.1, 0.2])
    core.update()
    core.receive([0.5, 0.5, 0.5])
    values, error = core.update()
    assert error == 'command size (3) does not match number of interfaces (2)'
    np.testing.assert_array_equal(values, [0.1, 0.2])  # the interfaces keep what they held
    assert core.update()[1] == error  # kept, so every cycle fails until a good one comes
    assert core.active and core.errors == 2
    core.receive([0.0, 0.0])
    assert cycle(core) == ([0.0, 0.0], '')


def test_a_wrong_size_command_deactivates_the_controller_on_jazzy_and_later():
    # controller_manager (PR #1499; no lines, see the module docstring) takes it down;
    # JointGroupVelocityController's on_deactivate then writes zeros:
    # velocity_controllers/src/joint_group_velocity_controller.cpp @ 1044e677 (branch
    # unverified), lines 54-70; nothing plays until an activation, whose reset of the kept
    # command is forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 117-118.
    core = ForwardCommand(JOINTS, 'velocity')
    core.receive([0.1, 0.2])
    core.update()
    core.receive([0.5])
    values, error = core.update()
    assert error == SIZE_MISMATCH.format(1, 2)
    assert not core.active
    np.testing.assert_array_equal(values, [0.0, 0.0])
    core.receive([0.3, 0.3])
    assert cycle(core) == ([0.0, 0.0], '')
    core.activate()
    assert cycle(core) == ([0.0, 0.0], '')  # activation dropped the kept command
    core.receive([0.3, 0.3])
    assert cycle(core) == ([0.3, 0.3], '')


def test_deactivating_a_position_controller_leaves_its_last_position():
    # on_deactivate only drops the kept command:
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 124-130 (reset at 127-128); the position interfaces are not written.
    core = ForwardCommand(JOINTS, 'position')
    core.receive([0.1, 0.2])
    core.update()
    core.deactivate()
    np.testing.assert_array_equal(core.update()[0], [0.1, 0.2])


def test_a_command_from_before_an_activation_does_not_play():
    # on_activate: "reset command buffer if a command came through callback when controller
    # was inactive": forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 117-118.
    core = ForwardCommand(JOINTS, 'position')
    core.deactivate()
    core.receive([0.1, 0.2])
    core.activate()
    assert cycle(core) == (None, '')


@pytest.mark.parametrize('joints, interface, reason', [
    ((), 'velocity', "'joints' parameter was empty"),
    (JOINTS, '', "'interface_name' parameter was empty"),
    (JOINTS, 'effort', "interface_name 'effort'"),
    (('a', 'a'), 'position', 'distinct'),
])
def test_a_controller_that_cannot_claim_its_interfaces_is_refused(joints, interface, reason):
    # "'joints' parameter was empty", "'interface_name' parameter was empty":
    # forward_command_controller/src/forward_command_controller.cpp @ 81f35b0c (branch
    # unverified), lines 62-66 and 74-78; 'effort' and repeated joints are the sim's refusals.
    with pytest.raises(ValueError, match=reason):
        ForwardCommand(joints, interface)


# -- the node, over DDS in this process -------------------------------------------------------

@pytest.fixture
def controller(ros):
    with spun_nodes(ros) as spin:
        def make(interface='velocity', **kwargs):
            # A fresh name each time: a destroyed node's name leaves /rosout only once the
            # executor lets go of it, and takes a successor's log publisher along.
            kwargs.setdefault('name', f'forward_{interface}_controller_{next(NAMES)}')
            return spin(ForwardCommandController(JOINTS, interface, context=ros.context,
                                                 **kwargs))
        yield make


def publisher_for(ros, node):
    pub = ros.node.create_publisher(Float64MultiArray, f'/{node.get_name()}/commands',
                                    qos_profile_system_default)
    assert wait_until(lambda: pub.get_subscription_count() > 0, 10)
    return pub


def received(node, expected):
    """Wait until the node's interfaces hold `expected` (the update runs on this thread)."""
    q = np.zeros(len(JOINTS))
    return wait_until(lambda: np.array_equal(node.update(0.0, q, q), expected), 10)


def test_a_velocity_command_over_dds_integrates(ros, controller):
    # ~/commands at the system-default QoS, written every cycle:
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 59-75 and 132-166.
    node = controller()
    assert (node.claimed_joints, node.command_interface) == (JOINTS, 'velocity')
    pub = publisher_for(ros, node)
    pub.publish(Float64MultiArray(data=[0.5, -0.25]))
    assert received(node, [0.5, -0.25])
    q = integrate(node, [0.0, 1.0], dt=0.01, steps=200)
    np.testing.assert_allclose(q, [1.0, 0.5])  # 2 s at the last velocity: nothing stops it


# A peer in a process of its own: Fast DDS hands a sample to a reader in the same process
# without stamping its reception.
PEER = """
import sys, time
import rclpy
from std_msgs.msg import Float64MultiArray
rclpy.init()
node = rclpy.create_node('reception_peer')
pub = node.create_publisher(Float64MultiArray, sys.argv[1], 10)
while pub.get_subscription_count() == 0:
    time.sleep(0.01)
print('ready', flush=True)
sys.stdin.readline()
sent = time.time()
pub.publish(Float64MultiArray(data=[0.1, 0.2]))
print(sent, flush=True)
time.sleep(2.0)
"""


@pytest.mark.skipif(not HAS_MESSAGE_INFO, reason='this rclpy (7.1, Jazzy) passes no message '
                    'info to a callback: commands are timed by their callback there')
def test_a_command_is_timed_by_its_dds_reception_not_by_the_executor(ros, controller):
    # The real controller_manager writes a command in the update it arrives in; the sim's
    # executor may reach the callback milliseconds later (a physics step, a camera frame).
    node = controller('position', reception_times=True)
    peer = subprocess.Popen([sys.executable, '-c', PEER, f'/{node.get_name()}/commands'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send_then_keep_the_executor_busy():
        timer.cancel()
        peer.stdin.write('go\n')
        peer.stdin.flush()
        time.sleep(0.3)  # the subscription's callback runs after this

    try:
        assert peer.stdout.readline().strip() == 'ready'
        timer = ros.node.create_timer(0.01, send_then_keep_the_executor_busy)
        assert received(node, [0.1, 0.2])
        sent = float(peer.stdout.readline())
        ros.node.destroy_timer(timer)
    finally:
        peer.kill()
        peer.wait()
    (arrived, values), = node.arrivals() or [(None, None)]
    assert values.tolist() == [0.1, 0.2]
    assert sent <= arrived < sent + 0.1, arrived - sent


def test_a_wrong_size_command_over_dds_is_ignored_with_upstreams_text(ros, controller):
    # RCLCPP_ERROR_THROTTLE, once a second:
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 143-150.
    node = controller(deactivate_on_error=False)
    logs = []
    sub = ros.node.create_subscription(
        Log, '/rosout', lambda m: logs.append(m) if m.name == node.get_name() else None, 100)
    try:
        pub = publisher_for(ros, node)
        pub.publish(Float64MultiArray(data=[0.1, 0.2]))
        assert received(node, [0.1, 0.2])
        pub.publish(Float64MultiArray(data=[1.0, 2.0, 3.0]))
        text = 'command size (3) does not match number of interfaces (2)'
        q = np.zeros(2)

        def logged():
            np.testing.assert_array_equal(node.update(0.0, q, q), [0.1, 0.2])
            return any(text in m.msg and log_level(m) == ERROR for m in logs)
        assert wait_until(logged, 10), [m.msg for m in logs]
        assert node.active
    finally:
        ros.node.destroy_subscription(sub)


def test_a_wrong_size_command_over_dds_stops_a_velocity_controller_on_jazzy(ros, controller):
    # forward_command_controller/src/forward_controllers_base.cpp @ c8511bb2 (branch
    # unverified), lines 143-150, then controller_manager (PR #1499, no lines) and
    # velocity_controllers/src/joint_group_velocity_controller.cpp @ 1044e677 (branch
    # unverified), lines 54-70.
    node = controller()
    logs = []
    sub = ros.node.create_subscription(
        Log, '/rosout', lambda m: logs.append(m.msg) if m.name == node.get_name() else None, 100)
    try:
        pub = publisher_for(ros, node)
        pub.publish(Float64MultiArray(data=[0.1, 0.2]))
        assert received(node, [0.1, 0.2])
        pub.publish(Float64MultiArray(data=[1.0]))
        assert received(node, [0.0, 0.0])
        assert not node.active
        assert wait_until(lambda: DEACTIVATED.format(node.get_name()) in logs, 10), logs
    finally:
        ros.node.destroy_subscription(sub)


def test_get_parameters_answers_joints_and_interface_name(ros, controller):
    # forward_command_controller/src/forward_command_controller_parameters.yaml @ 47414ab9
    # (branch unverified), lines 2-9 and 10-17: both read_only.
    node = controller('position', name='forward_position_controller',
                      parameter_overrides=[Parameter('joints', value=['panda_joint7'])])
    assert node.claimed_joints == ('panda_joint7',)  # the parameter file wins, as upstream
    client = ros.node.create_client(GetParameters, '/forward_position_controller/get_parameters')
    setter = ros.node.create_client(SetParameters, '/forward_position_controller/set_parameters')
    try:
        answer = call_service(client, GetParameters.Request(names=['joints', 'interface_name']),
                              10)
        assert answer.values[0].string_array_value == ['panda_joint7']
        assert answer.values[1].string_value == 'position'
        change = SetParameters.Request(parameters=[
            Parameter('joints', value=['x']).to_parameter_msg()])
        result = call_service(setter, change, 10).results[0]
        assert not result.successful and 'read-only' in result.reason
    finally:
        ros.node.destroy_client(client)
        ros.node.destroy_client(setter)


def test_the_interface_cannot_be_overridden_by_a_parameter(ros, controller):
    # JointGroupVelocityController::on_init sets interface_name itself:
    # velocity_controllers/src/joint_group_velocity_controller.cpp @ 1044e677 (branch
    # unverified), lines 30-52.
    node = controller(parameter_overrides=[Parameter('interface_name', value='position')])
    assert node.get_parameter('interface_name').value == 'velocity'
    assert node.command_interface == 'velocity'


def test_the_sim_spins_single_threaded_only_where_a_forward_command_is_timed():
    from sequence_ai_ros.sim.controllers import needs_single_threaded
    # Kilted's limiter reads each command's arrival: rclpy 9.1's EventsExecutor gives none.
    assert needs_single_threaded('forward_position_controller', 'gripper_trajectory_controller',
                                 timed_arrivals=True)
    assert not needs_single_threaded('forward_position_controller',
                                     'gripper_trajectory_controller', timed_arrivals=False)
    assert not needs_single_threaded('joint_trajectory_controller',
                                     'gripper_trajectory_controller', timed_arrivals=True)
    assert needs_single_threaded('joint_trajectory_controller', 'gripper_action_controller',
                                 timed_arrivals=False)
