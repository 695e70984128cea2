"""
The policy node against the simulated stock controllers, closed loop through the camera.

The simulated controllers apply ros2_controllers' own acceptance rules per distribution
(sim/jtc_rules/, sim/forward_command.py, sim/gripper_rules.py) and log upstream's words at
ERROR on a rejection, which the demo's recorder counts from /rosout. Every output mode must be
accepted by every distribution's defaults with the arm's joints only, reach the target, and
move the gripper through its own interface.
"""

import pytest
from ros2_tools import CONTROL_MSGS_MISSING
from sequence_ai_ros.demo.controllers import default_gripper_interface
from sequence_ai_ros.gateway.catalogue import load_catalogue
from system.test_demo import demo

HAS_CONTROL_MSGS = default_gripper_interface() == 'action'
ACTION = pytest.param('action', marks=pytest.mark.skipif(
    not HAS_CONTROL_MSGS, reason=CONTROL_MSGS_MISSING))


def episode(tmp_path, model, *args, seconds=16.0):
    """Run one warm closed-loop episode of the demo; return its run and output."""
    hz = load_catalogue().get(model).control_hz
    instance, status, text = demo('--model', model, '--warm', '--no-compare', '--actions',
                                  str(round(seconds * hz)), '--out', str(tmp_path / 'd.png'),
                                  *args)
    assert status == 0, text
    (run,) = instance.runs
    return run, text


def assert_accepted_and_reached(run, text):
    assert run.data.outcome['outcome'] == 'completed', text
    assert run.data.controller_errors == [], run.data.controller_errors
    assert min(d for _, d in run.data.distances) < 0.08, text


# Every mode on some distro's defaults, every distro, both kinds of action space, every
# gripper interface; test_node_arm_output.py checks each message of every mode on every distro.
CASES = [
    ('pi05-droid', 'trajectory_stream', 'jazzy', 'trajectory'),
    ('pi05-droid', 'trajectory_plan', 'humble', 'trajectory'),
    ('pi05-droid', 'trajectory_plan', 'kilted', 'forward_position'),
    # The shipped controllers file's parallel_gripper_action_controller (ParallelGripperCommand).
    ('pi05-droid', 'trajectory_plan', 'jazzy', ACTION),
    ('pi05-droid', 'trajectory_stream', 'kilted', ACTION),
    ('pi05-droid', 'forward_velocity', 'jazzy', 'trajectory'),
    ('pi05-droid', 'forward_position', 'jazzy', 'trajectory'),
    ('cosmos3-edge-policy-droid', 'trajectory_plan', 'jazzy', 'trajectory'),
]


def _case(model, mode, distro, gripper):
    marks = gripper.marks if hasattr(gripper, 'marks') else ()
    gripper = gripper.values[0] if hasattr(gripper, 'values') else gripper
    return pytest.param(model, mode, distro, gripper, marks=marks,
                        id=f'{model}-{mode}-{distro}-gripper_{gripper}')


@pytest.mark.parametrize('model,mode,distro,gripper', [_case(*case) for case in CASES])
def test_the_stock_controllers_accept_every_command_and_the_arm_gets_there(
        tmp_path, model, mode, distro, gripper):
    """The reference policy closes the gripper over the target: the finger must follow."""
    run, text = episode(tmp_path, model, '--output-mode', mode, '--distro', distro,
                        '--gripper', gripper, seconds=20.0)
    assert_accepted_and_reached(run, text)
    finger = [positions[-1] for _, positions in run.data.joint_states]
    assert finger[0] > 0.035, 'the finger did not start open (0.04 m)'
    assert finger[-1] < 0.01, f'the finger did not close: {finger[-1]:.4f} m'
    assert 1 <= run.data.gripper_goals < 20, 'goals go on change, not at the control rate'
    assert run.data.gripper_failures == 0


# -- configure asks the controllers --------------------------------------------------------------

@pytest.fixture(scope='module')
def arm_and_gateway():
    """Yield a jazzy-default simulated arm in /cfg and a warm gateway for the nodes."""
    from fixtures_gateway import start_node_gateway
    from sim_process import SimProcess
    gateway = start_node_gateway()
    sim = SimProcess('/cfg', 'controller_distro:=jazzy')
    yield sim, gateway
    sim.stop()
    gateway.close()


def configure(ros, arm_and_gateway, **params):
    """Start a node in /cfg with `params`, ask it to configure; return (success, its log)."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState, GetState
    from ros_harness import NODE_ENV, node_parameters, PolicyNodeProcess, wait_until
    from sequence_ai_ros.harness.service_calls import change_state
    _, gateway = arm_and_gateway
    process = PolicyNodeProcess('cfg', node_parameters(base_url=gateway.base_url, **params),
                                NODE_ENV)
    change = ros.node.create_client(ChangeState, '/cfg/policy_node/change_state')
    state = ros.node.create_client(GetState, '/cfg/policy_node/get_state')
    try:
        assert wait_until(change.service_is_ready, 20), process.log()
        done = change_state(change, state, Transition.TRANSITION_CONFIGURE, 30.0)
    finally:
        ros.node.destroy_client(change)
        ros.node.destroy_client(state)
        process.stop()
    return done, process.log()


GRIPPER_TRAJECTORY = {'gripper_interface': 'trajectory',
                      'gripper_controller': 'gripper_trajectory_controller',
                      'gripper_open_position': 0.04, 'gripper_closed_position': 0.0}


def test_matching_controllers_let_configure_pass(ros, arm_and_gateway):
    done, log = configure(ros, arm_and_gateway, output_mode='trajectory_plan',
                          **GRIPPER_TRAJECTORY)
    assert done, log[-3000:]
    assert 'cmd_timeout 0' in log, 'the stock default cmd_timeout is worth a warning'


@pytest.mark.parametrize('params,named', [
    ({'gripper_interface': 'with_arm'},
     'controller /cfg/joint_trajectory_controller has no joint panda_finger_joint1'),
    ({'output_mode': 'forward_velocity', 'velocity_limits': [2.0] * 7,
      'max_acceleration': 50.0, **GRIPPER_TRAJECTORY},
     '/cfg/joint_trajectory_controller has no interface_name parameter: it is not a '
     'forward_command_controller'),
    ({'joint_names': [f'panda_joint{i}' for i in (1, 2, 3, 4, 5, 7, 6)], **GRIPPER_TRAJECTORY},
     None),
    ({**GRIPPER_TRAJECTORY, 'gripper_controller': 'no_such_gripper'},
     'controller /cfg/no_such_gripper did not answer get_parameters'),
], ids=['gripper-in-the-arm', 'velocity-to-a-jtc', 'order-does-not-matter-to-a-jtc',
        'an-absent-controller-warns'])
def test_a_mismatch_fails_configure_naming_it(ros, arm_and_gateway, params, named):
    done, log = configure(ros, arm_and_gateway, configure_timeout_s=5.0, **params)
    if named is None or 'did not answer' in (named or ''):
        assert done, log[-3000:]
        assert named is None or named in log, log[-3000:]
    else:
        assert not done and named in log, log[-3000:]


@pytest.mark.skipif(not HAS_CONTROL_MSGS, reason=CONTROL_MSGS_MISSING)
def test_a_missing_gripper_server_fails_configure_naming_it(ros, arm_and_gateway):
    done, log = configure(ros, arm_and_gateway, configure_timeout_s=3.0,
                          gripper_interface='action')
    assert not done
    assert ('gripper_interface action: no gripper action server (control_msgs/action/'
            'GripperCommand or control_msgs/action/ParallelGripperCommand) on '
            '/cfg/gripper_action_controller/gripper_cmd within 3.0 s') in log, log[-3000:]
