"""
The node's gripper action against both simulated gripper action controllers.

gripper_interface 'action' sends GripperCommand or ParallelGripperCommand, whichever the server
on the name serves: configure reads the type from the graph. In this process: the node's
GripperOutput and the sim's controller node (its finger is test_sim_gripper_action's servo).
Then the policy node as a process against the sim_arm: a goal the finger cannot reach aborts
and the episode holds or goes on as gripper_on_failure says.
"""

import itertools
import json
import time

import pytest
from rclpy.parameter import Parameter
from ros.test_sim_gripper_action import CLOSED, Finger, hardware, needs_parallel_gripper, OPEN
from ros_harness import wait_until
from sequence_ai_ros.node.controller_check import gripper_action_type
from sequence_ai_ros.node.gripper import GripperOutput, GripperScale
from sequence_ai_ros.sim.gripper_action import (
    GRIPPER_COMMAND_TYPE,
    GripperActionController,
    PARALLEL_TYPE,
)
from spun_nodes import spun_nodes

NAMES = itertools.count()
GRIPPER_COMMAND = 'control_msgs/action/GripperCommand'
PARALLEL = 'control_msgs/action/ParallelGripperCommand'
BOTH = pytest.mark.parametrize('kind, action', [
    (PARALLEL_TYPE, 'ParallelGripperCommand'), (GRIPPER_COMMAND_TYPE, 'GripperCommand')],
    ids=['parallel', 'gripper_command'])


# -- which action: the served type, pure -------------------------------------------------------

def test_the_served_type_chooses_the_action_and_anything_else_is_named():
    assert gripper_action_type([PARALLEL], '/g', 1.0) == ('ParallelGripperCommand', '')
    assert gripper_action_type([GRIPPER_COMMAND], '/g', 1.0) == ('GripperCommand', '')
    assert gripper_action_type([], '/g', 2.5) == ('', (
        'no gripper action server (control_msgs/action/GripperCommand or '
        'control_msgs/action/ParallelGripperCommand) on /g within 2.5 s'))
    action, problem = gripper_action_type(['control_msgs/action/FollowJointTrajectory'],
                                          '/g', 1.0)
    assert action == '' and problem.startswith(
        '/g serves control_msgs/action/FollowJointTrajectory, not a gripper action')
    action, problem = gripper_action_type([GRIPPER_COMMAND, PARALLEL], '/g', 1.0)
    assert action == '' and 'several action types' in problem


# -- GripperOutput against the simulated controllers, in this process ---------------------------

@pytest.fixture
def controller(ros):
    with spun_nodes(ros) as spin:
        def make(kind, **params):
            overrides = {'type': kind, **params}
            return spin(GripperActionController(
                name=f'gripper_action_controller_{next(NAMES)}', context=ros.context,
                parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()]))
        yield make


@pytest.fixture
def output(ros):
    made = []

    def make(name, scale=GripperScale(OPEN, CLOSED), **kwargs):
        settings = {'max_effort': 20.0, 'threshold': 0.5, 'min_change': 0.05, **kwargs}
        out = GripperOutput(ros.node, 'action', f'/{name}/gripper_cmd', 'panda_finger_joint1',
                            scale, **settings)
        made.append(out)
        return out
    yield make
    for out in made:
        out.close()


@needs_parallel_gripper
@BOTH
def test_goals_go_on_change_in_joint_units_and_the_finger_follows(
        controller, output, kind, action):
    node = controller(kind)
    gripper = output(node.get_name())
    assert gripper.connect(10.0) == '' and gripper.action == action
    with hardware(node, Finger()) as finger:
        assert gripper.command(0.1, 0.1)  # open: the first goal goes whatever it is
        assert not gripper.command(0.3, 0.1)  # below the threshold: still open, no goal
        time.sleep(0.3)
        assert finger.position == pytest.approx(OPEN)
        assert gripper.command(0.8, 0.1)  # closed: 0.0 m
        assert not gripper.command(0.9, 0.1)
        assert wait_until(lambda: finger.position < 0.005, 10)
        time.sleep(0.3)  # the result arrives at action_monitor_rate
    assert gripper.goals == 2 and gripper.failures == 0 and gripper.take_failure() == ''


@needs_parallel_gripper
@BOTH
def test_a_goal_beyond_the_travel_aborts_stalled_and_is_reported_once(
        controller, output, kind, action):
    node = controller(kind, stall_timeout=0.3, allow_stalling=False)
    gripper = output(node.get_name(), GripperScale(OPEN, -0.02))  # closed past the finger's end
    assert gripper.connect(10.0) == ''
    with hardware(node, Finger()):
        assert gripper.command(1.0, 0.1)
        assert wait_until(lambda: gripper.failures == 1, 10)
    failure = gripper.take_failure()
    assert failure == f'gripper /{node.get_name()}/gripper_cmd aborted the goal (stalled) at ' \
        '0.0000', failure
    assert gripper.take_failure() == ''  # acted on once


@needs_parallel_gripper
@BOTH
def test_allow_stalling_makes_the_same_goal_no_failure(controller, output, kind, action):
    node = controller(kind, stall_timeout=0.3, allow_stalling=True)
    gripper = output(node.get_name(), GripperScale(OPEN, -0.02))
    assert gripper.connect(10.0) == ''
    with hardware(node, Finger()) as finger:
        assert gripper.command(1.0, 0.1)
        assert wait_until(lambda: finger.position == CLOSED, 10)
        time.sleep(0.3 + 0.3)  # the stall timeout, then the monitor
    assert gripper.failures == 0


@needs_parallel_gripper
def test_a_server_of_another_type_or_none_fails_connect_naming_it(ros, output):
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionServer
    server = ActionServer(ros.node, FollowJointTrajectory, '/not_a_gripper/gripper_cmd',
                          execute_callback=lambda handle: FollowJointTrajectory.Result())
    try:
        problem = output('not_a_gripper').connect(5.0)
    finally:
        server.destroy()
    assert problem.startswith('/not_a_gripper/gripper_cmd serves '
                              'control_msgs/action/FollowJointTrajectory, not a gripper action')
    problem = output('nobody').connect(0.5)
    assert problem.startswith('no gripper action server') and 'within 0.5 s' in problem


@needs_parallel_gripper
def test_the_sim_refuses_a_type_no_plugin_provides_and_an_interface_it_lacks(ros):
    # The deprecation warning of gripper_controllers names this type; no package provides it.
    with pytest.raises(ValueError, match="Loader for controller 'g' .type "
                       "'parallel_gripper_controllers/GripperActionController'. not available"):
        GripperActionController(name='g', context=ros.context, parameter_overrides=[
            Parameter('type', value='parallel_gripper_controllers/GripperActionController')])
    with pytest.raises(ValueError, match="command interface 'panda_finger_joint1/max_effort'"):
        GripperActionController(name='g', context=ros.context, parameter_overrides=[
            Parameter('type', value=PARALLEL_TYPE),
            Parameter('max_effort_interface', value='panda_finger_joint1/max_effort')])


# -- the policy node and the sim_arm, as processes --------------------------------------------

def _episode(ros, namespace, sim_params, node_params, timeout_s=60.0):
    """Run one episode of a policy node against a sim_arm; return (outcome, node log, sim log)."""
    from fixtures_gateway import start_node_gateway
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState, GetState
    from ros_harness import NODE_ENV, node_parameters, PolicyNodeProcess
    from sequence_ai_ros.demo.configs import find_config
    from sequence_ai_ros.harness.service_calls import change_state
    from sim_process import SimProcess
    from std_msgs.msg import String
    outcomes = []
    subscription = ros.node.create_subscription(
        String, f'/{namespace}/policy_node/episode_outcome',
        lambda m: outcomes.append(json.loads(m.data)), 10)
    gateway = start_node_gateway()
    sim = SimProcess(f'/{namespace}', 'gripper_controller:=gripper_action_controller',
                     'time_scale:=0.2', *sim_params,
                     params_file=find_config('ros2_control/panda_controllers.yaml'))
    params = node_parameters(
        base_url=gateway.base_url, hold_service='sim_arm/hold', output_mode='trajectory_plan',
        gripper_interface='action', gripper_controller='gripper_action_controller',
        max_actions=150, max_step_change=1.0, **node_params)
    node = PolicyNodeProcess(namespace, params, NODE_ENV)
    change = ros.node.create_client(ChangeState, f'/{namespace}/policy_node/change_state')
    state = ros.node.create_client(GetState, f'/{namespace}/policy_node/get_state')
    try:
        assert wait_until(change.service_is_ready, 30), node.log()
        for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            assert change_state(change, state, transition, 30.0), node.log()[-3000:]
        wait_until(lambda: outcomes, timeout_s)
    finally:
        node.stop()
        sim_log = sim.stop()[1]
        gateway.close()
        ros.node.destroy_client(change)
        ros.node.destroy_client(state)
        ros.node.destroy_subscription(subscription)
    return (outcomes[0] if outcomes else None), node.log(), sim_log


@needs_parallel_gripper
@pytest.mark.parametrize('kind', [PARALLEL_TYPE, GRIPPER_COMMAND_TYPE],
                         ids=['parallel', 'gripper_command'])
def test_a_gripper_goal_the_finger_cannot_reach_holds_the_episode(ros, kind):
    # Open is 0.06 m and closed -0.02 m, both past the finger's travel (0.04 .. 0.0 m): the
    # first goal, open or closed, stalls and aborts.
    outcome, log, sim_log = _episode(
        ros, f'gripper_hold_{next(NAMES)}',
        ['allow_stalling:=false', 'stall_timeout:=0.3', f'type:={kind}'],
        {'gripper_open_position': 0.06, 'gripper_closed_position': -0.02,
         'gripper_threshold': 0.5, 'gripper_on_failure': 'hold'})
    action = 'ParallelGripperCommand' if kind == PARALLEL_TYPE else 'GripperCommand'
    assert f'gripper: control_msgs/action/{action} on ' in log, log[-3000:]
    assert outcome is not None, log[-3000:]
    assert outcome['outcome'] == 'error', (outcome, sim_log[-4000:])
    assert 'gripper_action_controller/gripper_cmd aborted the goal (stalled) at 0.0' in \
        outcome['reason'], outcome
    assert outcome['actions'] < 150
    assert 'hold requested' in sim_log, sim_log[-3000:]


@needs_parallel_gripper
def test_with_gripper_on_failure_continue_the_episode_completes_and_says_so(ros, tmp_path):
    outcome, log, _ = _episode(
        ros, f'gripper_continue_{next(NAMES)}', ['allow_stalling:=false', 'stall_timeout:=0.3'],
        {'gripper_open_position': 0.06, 'gripper_closed_position': -0.02,
         'gripper_threshold': 0.5, 'gripper_on_failure': 'continue', 'record': True,
         'record_dir': str(tmp_path)})
    assert outcome is not None and outcome['outcome'] == 'completed', (outcome, log[-3000:])
    assert 'aborted the goal (stalled) at 0.0' in log
    assert '(gripper_on_failure: continue)' in log
    # The episode's file holds every goal sent, in the joint's units, as the node sent them.
    from sequence_ai_ros.record.reader import read_episode
    from sequence_ai_ros.record.schemas import GRIPPER_COMMAND
    (path,) = tmp_path.glob('*.mcap')
    goals = [json.loads(m.message.data) for m in read_episode(path).on(GRIPPER_COMMAND)]
    assert goals, 'no gripper goal recorded'
    assert all(g['goal'].startswith('control_msgs/action/') for g in goals), goals
    assert {round(g['position'][0], 9) for g in goals} <= {0.06, -0.02}, goals
