"""
The simulated controllers over DDS, in sim_arm processes, one per distro.

They refuse and accept what a stock joint_trajectory_controller of their distro refuses and
accepts, and answer for their parameters as controller nodes do.

Upstream: ros-controls/ros2_controllers joint_trajectory_controller (validate_trajectory_msg,
update, on_activate; joint_trajectory_controller_parameters.yaml), see test_sim_jtc_rules.py.
"""

from builtin_interfaces.msg import Duration
from fixtures_rclpy import *  # noqa: F401,F403  (context)
import numpy as np
import pytest
from rcl_interfaces.msg import ParameterType
from ros2_tools import CONTROL_MSGS_MISSING
from sequence_ai_ros.world import arm_model
from sim_process import Probe, SimProcess, stamp
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

ARM = list(arm_model.JOINT_NAMES)
FINGER = arm_model.GRIPPER_JOINT
CONTROLLERS_YAML = """\
controller_manager:
  ros__parameters:
    update_rate: 100
    joint_trajectory_controller:
      type: joint_trajectory_controller/JointTrajectoryController
joint_trajectory_controller:
  ros__parameters:
    allow_partial_joints_goal: true
    cmd_timeout: 0.3
"""


@pytest.fixture(scope='module')
def sims(context, tmp_path_factory):
    """One sim per distro, and one at the root namespace with a controllers YAML."""
    yaml_path = tmp_path_factory.mktemp('config') / 'controllers.yaml'
    yaml_path.write_text(CONTROLLERS_YAML)
    started = {distro: SimProcess(f'/jtc_{distro}', f'controller_distro:={distro}')
               for distro in ('humble', 'jazzy', 'kilted')}
    started['yaml'] = SimProcess('/', params_file=yaml_path)
    probes = {key: Probe(context, '/' if key == 'yaml' else f'/jtc_{key}') for key in started}
    try:
        for key, probe in probes.items():
            probe.wait_for(lambda p=probe: len(p.joint_states) > 5, 30.0, f'{key} joint states')
            probe.wait_for(lambda p=probe: p.trajectory_pub.get_subscription_count() > 0, 10.0,
                           f'{key} controller subscription')
        yield {key: (probes[key], started[key]) for key in started}
    finally:
        for key, probe in probes.items():
            probe.destroy()
            code, output = started[key].stop()
            print(f'--- {key} (exit {code}) ---\n{output}')


def arm_point(positions, seconds, velocities=()):
    return JointTrajectoryPoint(positions=list(positions), velocities=list(velocities),
                                time_from_start=Duration(sec=int(seconds),
                                                         nanosec=int(seconds % 1 * 1e9)))


def wait_logged(probe, sim, text, timeout=5.0):
    probe.wait_for(lambda: text in sim.output(), timeout, f'log line {text!r}')


def test_controller_nodes_answer_for_their_parameters(sims):
    probe, _ = sims['jazzy']
    got = probe.get_parameters('joint_trajectory_controller', 'joints', 'command_interfaces',
                               'state_interfaces', 'allow_nonzero_velocity_at_trajectory_end',
                               'allow_partial_joints_goal', 'cmd_timeout',
                               'interpolation_method', 'constraints.goal_time')
    assert list(got['joints'].string_array_value) == ARM
    assert list(got['command_interfaces'].string_array_value) == ['position']
    assert list(got['state_interfaces'].string_array_value) == ['position', 'velocity']
    assert got['allow_nonzero_velocity_at_trajectory_end'].type == ParameterType.PARAMETER_BOOL
    assert got['allow_nonzero_velocity_at_trajectory_end'].bool_value is False
    assert got['allow_partial_joints_goal'].bool_value is False
    assert got['cmd_timeout'].double_value == 0.0
    assert got['interpolation_method'].string_value == 'splines'
    assert got['constraints.goal_time'].type == ParameterType.PARAMETER_DOUBLE
    gripper = probe.get_parameters('gripper_trajectory_controller', 'joints')
    assert list(gripper['joints'].string_array_value) == [FINGER]
    humble, _ = sims['humble']
    assert humble.get_parameters('joint_trajectory_controller', 'allow_nonzero_velocity_at_'
                                 'trajectory_end')[
        'allow_nonzero_velocity_at_trajectory_end'].bool_value is True


def test_the_gripper_named_on_the_arm_controller_is_refused_and_the_arm_stays(sims):
    probe, sim = sims['jazzy']
    here = probe.latest(*ARM, FINGER)
    moved = here.copy()
    moved[:7] += 0.3
    moved[7] = 0.0
    probe.trajectory_pub.publish(JointTrajectory(joint_names=[*ARM, FINGER],
                                                 points=[arm_point(moved, 0.5)]))
    wait_logged(probe, sim, '[jtc_jazzy.joint_trajectory_controller]: Joints on incoming '
                            "trajectory don't match the controller joints.")
    probe.spin_for(0.8)
    np.testing.assert_allclose(probe.latest(*ARM, FINGER), here, atol=1e-9)


def test_a_positions_only_one_point_message_moves_the_arm(sims):
    probe, _ = sims['jazzy']
    goal = probe.latest(*ARM) + np.array([0.2, -0.1, 0.1, 0.1, 0.0, 0.1, -0.2])
    probe.trajectory_pub.publish(JointTrajectory(joint_names=ARM,
                                                 points=[arm_point(goal, 0.5)]))
    probe.wait_for(lambda: np.allclose(probe.latest(*ARM), goal, atol=1e-6), 5.0,
                   'the arm at the goal')


@pytest.mark.parametrize('distro, accepted', [('humble', True), ('jazzy', False),
                                              ('kilted', False)])
def test_a_moving_final_velocity_is_refused_on_jazzy_and_kilted(sims, distro, accepted):
    probe, sim = sims[distro]
    here = probe.latest(*ARM)
    goal = here + 0.15
    velocities = [0.05] + [0.0] * 6
    probe.trajectory_pub.publish(JointTrajectory(joint_names=ARM,
                                                 points=[arm_point(goal, 0.4, velocities)]))
    if accepted:
        probe.wait_for(lambda: np.allclose(probe.latest(*ARM), goal, atol=1e-6), 5.0,
                       'the arm at the goal')
    else:
        wait_logged(probe, sim, 'Velocity of last trajectory point of joint panda_joint1 is '
                                'not zero: 0.050000000000000')
        probe.spin_for(0.6)
        # Unmoved: a servo still settling from an earlier goal creeps by micro-radians, the
        # refused goal is 0.15 rad away.
        np.testing.assert_allclose(probe.latest(*ARM), here, atol=1e-4)


def test_the_gripper_controller_moves_the_finger_in_metres(sims):
    probe, _ = sims['kilted']
    gripper = probe.trajectory_publisher('gripper_trajectory_controller')
    probe.wait_for(lambda: gripper.get_subscription_count() > 0, 10.0, 'gripper controller')
    assert probe.latest(FINGER)[0] == pytest.approx(arm_model.FINGER_OPEN_M)
    start = len(probe.joint_states)
    close = JointTrajectory(joint_names=[FINGER], points=[arm_point([0.0], 0.1)])
    # Sent again until the finger moves: the controller may not have discovered this new
    # publisher yet (a busy machine), and the same goal again changes nothing.
    for _ in range(10):
        gripper.publish(close)
        if probe.wait_until(lambda: probe.latest(FINGER)[0] < arm_model.FINGER_OPEN_M, 1.0):
            break
    probe.wait_for(lambda: probe.latest(FINGER)[0] < 1e-9, 10.0, 'fingers closed')
    # At the finger's own speed, whatever was asked (0.1 s): 0.04 m at 0.05 m/s take 0.8 s or
    # more of the states' stamps (the wall clock would count the delivery, late when busy).
    states = probe.joint_states[start:]
    times = np.array([stamp(s) for s in states])
    finger = np.array([s.position[list(s.name).index(FINGER)] for s in states])
    closing = np.diff(finger) < 0
    speeds = -np.diff(finger)[closing] / np.diff(times)[closing]
    # Never faster (stamps: ns, rounded); slower only where a busy machine delayed a tick.
    assert speeds.max() <= arm_model.FINGER_SPEED_MPS * 1.001
    moving = times[1:][closing]
    assert moving[-1] - moving[0] >= 0.9 * arm_model.FINGER_OPEN_M / arm_model.FINGER_SPEED_MPS


def test_a_controllers_yaml_overrides_the_defaults(sims):
    probe, sim = sims['yaml']
    got = probe.get_parameters('joint_trajectory_controller', 'allow_partial_joints_goal',
                               'cmd_timeout')
    assert got['allow_partial_joints_goal'].bool_value is True
    assert got['cmd_timeout'].double_value == pytest.approx(0.3)
    # A partial goal is accepted; the joints it omits hold.
    here = probe.latest(*ARM)
    probe.trajectory_pub.publish(JointTrajectory(joint_names=['panda_joint2'],
                                                 points=[arm_point([here[1] + 0.2], 0.3)]))
    probe.wait_for(lambda: abs(probe.latest('panda_joint2')[0] - here[1] - 0.2) < 1e-6, 5.0,
                   'panda_joint2 at its goal')
    np.testing.assert_allclose(np.delete(probe.latest(*ARM), 1), np.delete(here, 1), atol=1e-9)
    # cmd_timeout 0.3 s after the last point: upstream's warning, then it holds.
    wait_logged(probe, sim, '[joint_trajectory_controller]: Aborted due to command timeout')


def send_goal(probe, action_type, names, points, timeout=10.0):
    """Send one FollowJointTrajectory goal; return (accepted, result or None, feedbacks)."""
    from rclpy.action import ActionClient
    client = ActionClient(probe.node, action_type,
                          f'{probe.ns}/joint_trajectory_controller/follow_joint_trajectory')
    try:
        assert client.wait_for_server(timeout_sec=timeout)
        feedbacks = []
        goal = action_type.Goal(trajectory=JointTrajectory(joint_names=names, points=points))
        sent = client.send_goal_async(goal, feedback_callback=feedbacks.append)
        probe.wait_for(sent.done, timeout, 'goal response')
        handle = sent.result()
        if not handle.accepted:
            return False, None, feedbacks
        result = handle.get_result_async()
        probe.wait_for(result.done, timeout, 'goal result')
        return True, result.result().result, feedbacks
    finally:
        client.destroy()


def test_follow_joint_trajectory_goals_are_checked_and_executed(sims):
    action = pytest.importorskip('control_msgs.action',
                                 reason=CONTROL_MSGS_MISSING).FollowJointTrajectory
    probe, sim = sims['jazzy']
    here = probe.latest(*ARM)
    accepted, _, _ = send_goal(probe, action, [*ARM, FINGER],
                               [arm_point([*here, 0.0], 0.5)])
    assert not accepted
    wait_logged(probe, sim, "Joints on incoming trajectory don't match the controller joints.")
    moving = [arm_point(here + 0.1, 0.5, [0.2] + [0.0] * 6)]
    assert not send_goal(probe, action, ARM, moving)[0]
    goal = here + np.array([-0.1, 0.1, -0.1, -0.1, 0.1, 0.1, 0.1])
    accepted, result, feedbacks = send_goal(probe, action, ARM, [arm_point(goal, 0.6)])
    assert accepted and result.error_code == action.Result.SUCCESSFUL
    assert result.error_string == 'Goal successfully reached!'
    assert feedbacks and list(feedbacks[-1].feedback.joint_names) == ARM
    probe.spin_for(0.2)
    np.testing.assert_allclose(probe.latest(*ARM), goal, atol=1e-6)


def test_two_controllers_claiming_one_joint_stop_the_sim_at_start_up(tmp_path):
    # Under a namespace a controllers YAML names the node with a wildcard, as for rcl anywhere.
    clash = tmp_path / 'clash.yaml'
    clash.write_text('/**/gripper_trajectory_controller:\n  ros__parameters:\n'
                     f'    joints: [panda_joint7, {FINGER}]\n')
    sim = SimProcess('/jtc_clash', params_file=clash)
    try:
        sim.proc.wait(timeout=30)
    finally:
        code, output = sim.stop()
    assert code == 2, output
    assert ("joint 'panda_joint7' is claimed by both joint_trajectory_controller and "
            'gripper_trajectory_controller') in output


def test_a_launch_files_node_name_renames_only_the_sim_arm_node(context):
    # launch_ros Node(name='sim_arm') passes a global `-r __node:=sim_arm`; the controllers
    # keep their own names, as ros2_control's controller_manager keeps its controllers'.
    sim = SimProcess('/jtc_named', ros_args=['-r', '__node:=sim_arm'])
    probe = Probe(context, '/jtc_named')
    try:
        probe.wait_for(lambda: len(probe.joint_states) > 5, 30.0, 'joint states')
        got = probe.get_parameters('joint_trajectory_controller', 'joints')
        assert list(got['joints'].string_array_value) == ARM
        # Discovery reaches each node in its own time (late on a busy machine): wait for both.
        named = {('sim_arm', '/jtc_named'), ('gripper_trajectory_controller', '/jtc_named')}
        probe.wait_for(lambda: named <= set(probe.node.get_node_names_and_namespaces()), 10.0,
                       f'the nodes {sorted(named)}')
    finally:
        probe.destroy()
        sim.stop()
