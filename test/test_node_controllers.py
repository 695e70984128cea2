"""
The policy node against the simulated stock controllers, closed loop through the camera.

The simulated controllers apply ros2_controllers' own acceptance rules per distribution
(sim/jtc_rules.py, sim/forward_command.py, sim/gripper_action.py) and log upstream's words at
ERROR on a rejection, which the demo's recorder counts from /rosout. Every output mode must be
accepted by every distribution's defaults with the arm's joints only, reach the target, and
move the gripper through its own interface.
"""

import pytest
from sequence_ai_ros.demo.controllers import default_gripper_interface
from sequence_ai_ros.gateway.catalogue import load_catalogue
from test_demo import demo

HAS_CONTROL_MSGS = default_gripper_interface() == 'action'
ACTION = pytest.param('action', marks=pytest.mark.skipif(
    not HAS_CONTROL_MSGS, reason='control_msgs is not installed (ros-wheels)'))


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


@pytest.mark.parametrize('distro', ['humble', 'jazzy', 'kilted'])
@pytest.mark.parametrize('mode', ['trajectory_stream', 'trajectory_plan'])
def test_trajectory_modes_are_accepted_by_every_distro(tmp_path, distro, mode):
    run, text = episode(tmp_path, 'pi05-droid', '--output-mode', mode, '--distro', distro,
                        '--gripper', 'trajectory')
    assert_accepted_and_reached(run, text)


@pytest.mark.parametrize('model,mode', [
    ('pi05-droid', 'forward_velocity'), ('pi05-droid', 'forward_position'),
    ('cosmos3-edge-policy-droid', 'forward_position'),
    ('cosmos3-edge-policy-droid', 'trajectory_plan')])
def test_forward_modes_and_an_absolute_model(tmp_path, model, mode):
    run, text = episode(tmp_path, model, '--output-mode', mode, '--gripper', 'trajectory')
    assert_accepted_and_reached(run, text)


@pytest.mark.parametrize('gripper', [ACTION, 'trajectory', 'forward_position'])
def test_the_gripper_closes_through_its_own_interface(tmp_path, gripper):
    """The reference policy closes the gripper over the target: the finger joint must follow."""
    run, text = episode(tmp_path, 'pi05-droid', '--gripper', gripper, seconds=20.0)
    assert_accepted_and_reached(run, text)
    finger = [positions[-1] for _, positions in run.data.joint_states]
    assert finger[0] > 0.035, 'the finger did not start open (0.04 m)'
    assert finger[-1] < 0.01, f'the finger did not close: {finger[-1]:.4f} m'
    assert 1 <= run.data.gripper_goals < 20, 'goals go on change, not at the control rate'
    assert run.data.gripper_failures == 0
