"""
Every launch file under the real `ros2 launch`, and test_launch.py under launch_testing's runner.

The package is built with colcon into a temporary workspace and found through the ament index,
as on a robot after `colcon build && source install/setup.bash`. Each launch is ended the way an
operator ends it, Ctrl-C to the terminal's process group, and must exit 0 with none of its
processes left. Where launch, launch_ros and ros2launch are not installed (they are not on
PyPI), each test skips naming what is missing.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from ros2_tools import (
    colcon_install,
    COMMANDS,
    ends_cleanly_on_ctrl_c,
    LAUNCH,
    LAUNCH_TESTING,
    overlay_env,
    PACKAGE,
    PLACEHOLDER_KEY,
    REPO,
    require,
    Ros2Process,
    SCALE,
    sim_arm,
    start,
    UP_S,
)
import yaml

NODE = 'policy_node'


@pytest.fixture(scope='module')
def install(tmp_path_factory):
    """Build the package with colcon in a fresh workspace; return install/sequence_ai_ros."""
    require(*LAUNCH)
    return colcon_install(tmp_path_factory.mktemp('ws'))


@pytest.fixture(scope='module')
def env(install, tmp_path_factory):
    """Return the overlay's environment, with the key nodes send to the keyless gateway."""
    made = overlay_env(install, tmp_path_factory.mktemp('ros_log'))
    made['SEQUENCES_API_KEY'] = PLACEHOLDER_KEY
    return made


@pytest.fixture(scope='module')
def gateway(install):
    """Run a warm keyless local gateway at the launch tests' time scale."""
    from sequence_ai_ros.gateway.process import GatewayProcess
    with GatewayProcess(['--time-scale', SCALE, '--start-warm']) as started:
        yield started


@pytest.fixture
def processes():
    """Collect Ros2Process objects; kill whatever of them is left after the test."""
    started = []
    yield started
    for proc in reversed(started):
        proc.close()


class Probe:
    """The test side: a node's lifecycle state and parameters, and what a topic carried."""

    def __init__(self, ros):
        self.ros = ros
        self.received = {}

    def record(self, msg_type, topic, depth=50):
        """Keep every message on `topic` (reliable, as the node publishes commands)."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        messages = self.received.setdefault(topic, [])
        self.ros.node.create_subscription(
            msg_type, topic, messages.append,
            QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE))
        return messages

    def states(self, node, until, timeout_s=UP_S):
        """Poll `node`'s lifecycle state until it is `until`; return every state seen."""
        from lifecycle_msgs.srv import GetState
        from ros_harness import wait_until
        from sequence_ai_ros.harness.service_calls import lifecycle_state
        client = self.ros.node.create_client(GetState, f'{node}/get_state')
        seen = []

        def reached():
            seen.append(lifecycle_state(client, 5.0))
            return seen[-1] == until

        wait_until(reached, timeout_s, interval=0.5)
        return seen

    def parameters(self, node, *names):
        """Return the values of `names` on `node`, read through its get_parameters service."""
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python
        from sequence_ai_ros.harness.service_calls import call_service
        client = self.ros.node.create_client(GetParameters, f'{node}/get_parameters')
        answer = call_service(client, GetParameters.Request(names=list(names)), 10.0)
        return [parameter_value_to_python(value) for value in answer.values]

    def wait(self, topic, count=1, timeout_s=UP_S):
        """Wait for `count` messages on a recorded topic; return them."""
        from ros_harness import wait_until
        wait_until(lambda: len(self.received[topic]) >= count, timeout_s)
        return self.received[topic]


@pytest.fixture
def probe(ros):
    return Probe(ros)


def arm_joint_names():
    """Return the arm controller's joints: the gripper has a controller of its own."""
    from sequence_ai_ros.world import arm_model
    return list(arm_model.JOINT_NAMES)


# -- policy.launch.py ----------------------------------------------------------------------------

def test_policy_launch_applies_every_argument_and_commands_the_remapped_topic(
        env, gateway, probe, processes, tmp_path):
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory
    params = yaml.safe_load((REPO / 'config/pi05_droid.yaml').read_text())
    params['/**']['ros__parameters'].update(max_actions=45, hardware_id='arm-under-test')
    params_file = tmp_path / 'my_arm.yaml'
    params_file.write_text(yaml.safe_dump(params))
    remapped = '/la/arm_controller/joint_trajectory'
    commands = probe.record(JointTrajectory, remapped, depth=500)
    unmapped = probe.record(JointTrajectory, f'/la/{COMMANDS}')
    outcomes = probe.record(String, f'/la/{NODE}/episode_outcome')
    sim_arm(processes, env, tmp_path, 'la', remapped)

    launch = start(processes, [
        'launch', PACKAGE, 'policy.launch.py', 'namespace:=la', f'params_file:={params_file}',
        'instruction:=put the cube in the bowl', f'base_url:={gateway.base_url}',
        'hold_service:=sim_arm/hold', f'command_topic:={remapped}'], env, tmp_path)

    # Configured and activated by the launch file's own lifecycle events: nothing here asks.
    states = probe.states(f'/la/{NODE}', 'active')
    assert states[-1] == 'active', f'{states}\n{launch.tail()}'
    assert probe.wait(remapped), launch.tail()
    assert list(commands[0].joint_names) == arm_joint_names()
    assert probe.wait(f'/la/{NODE}/episode_outcome'), launch.tail()
    outcome = json.loads(outcomes[0].data)
    assert (outcome['outcome'], outcome['actions']) == ('completed', 45), outcome
    assert probe.parameters(f'/la/{NODE}', 'instruction', 'hardware_id', 'model',
                            'output_mode', 'gripper_interface') == [
        'put the cube in the bowl', 'arm-under-test', 'pi05-droid', 'trajectory_plan', 'action']
    assert not unmapped, 'a command went to the topic command_topic replaces'
    ends_cleanly_on_ctrl_c(launch)


def test_policy_launch_with_autostart_false_leaves_the_node_unconfigured(
        env, probe, processes, tmp_path):
    launch = start(processes, ['launch', PACKAGE, 'policy.launch.py', 'namespace:=idle',
                               'model:=lingbot_va_5b', 'autostart:=false'], env, tmp_path)
    states = probe.states(f'/idle/{NODE}', 'unconfigured')
    assert states[-1] == 'unconfigured', f'{states}\n{launch.tail()}'
    assert probe.parameters(f'/idle/{NODE}', 'model') == ['lingbot-va-5b']
    # Long enough for a configure event to have been answered if one had been sent.
    later = probe.states(f'/idle/{NODE}', 'inactive', timeout_s=3.0)
    assert set(later) == {'unconfigured'}, later
    ends_cleanly_on_ctrl_c(launch)


# -- two_arms.launch.py --------------------------------------------------------------------------

def test_two_arms_launch_brings_both_nodes_up_each_on_its_own_topic(
        env, gateway, probe, processes, tmp_path):
    from trajectory_msgs.msg import JointTrajectory
    right_topic = '/right/arm_controller/joint_trajectory'
    left = probe.record(JointTrajectory, f'/left/{COMMANDS}')
    right = probe.record(JointTrajectory, right_topic)
    sim_arm(processes, env, tmp_path, 'left')
    sim_arm(processes, env, tmp_path, 'right', right_topic)

    launch = start(processes, [
        'launch', PACKAGE, 'two_arms.launch.py', f'base_url:={gateway.base_url}',
        'right_model:=cosmos3_edge_policy_droid', f'right_command_topic:={right_topic}',
        'left_hold_service:=sim_arm/hold', 'right_hold_service:=sim_arm/hold'], env, tmp_path)

    for side in ('left', 'right'):
        states = probe.states(f'/{side}/{NODE}', 'active')
        assert states[-1] == 'active', f'{side}: {states}\n{launch.tail()}'
    assert probe.wait(f'/left/{COMMANDS}') and probe.wait(right_topic), launch.tail()
    assert list(left[0].joint_names) == list(right[0].joint_names) == arm_joint_names()
    assert probe.parameters(f'/left/{NODE}', 'model') == ['pi05-droid']
    assert probe.parameters(f'/right/{NODE}', 'model') == ['cosmos3-edge-policy-droid']
    ends_cleanly_on_ctrl_c(launch)


# -- demo.launch.py ------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def demo_run(env, ros, tmp_path_factory):
    """Run demo.launch.py until commands flow, then Ctrl-C it; return what was seen."""
    from sequence_ai_ros.gateway.process import free_port
    from std_msgs.msg import Float64
    from trajectory_msgs.msg import JointTrajectory
    probe = Probe(ros)
    commands = probe.record(JointTrajectory, f'/demo/{COMMANDS}', depth=500)
    distances = probe.record(Float64, '/demo/sim_arm/task_distance', depth=500)
    cwd = tmp_path_factory.mktemp('demo')
    launch = Ros2Process(['launch', PACKAGE, 'demo.launch.py', 'namespace:=demo',
                          f'time_scale:={SCALE}', f'port:={free_port()}',
                          'instruction:=reach above the red disc'], env, cwd)
    try:
        states = probe.states(f'/demo/{NODE}', 'active')
        probe.wait(f'/demo/{COMMANDS}', count=20)
        probe.wait('/demo/sim_arm/task_distance')
        code = launch.ctrl_c()
        yield {'states': states, 'commands': list(commands), 'distances': list(distances),
               'code': code, 'launch': launch, 'left': launch.left_behind()}
    finally:
        launch.close()


def test_demo_launch_runs_the_whole_loop(demo_run):
    tail = demo_run['launch'].tail()
    assert demo_run['states'][-1] == 'active', f"{demo_run['states']}\n{tail}"
    assert len(demo_run['commands']) >= 20, tail
    assert list(demo_run['commands'][0].joint_names) == arm_joint_names()
    assert demo_run['distances'], 'the sim arm published no task distance'


def test_demo_launch_ends_with_exit_0_on_ctrl_c(demo_run):
    # The gateway's exit on Ctrl-C used to send a second Shutdown: launch_ros then raised
    # 'Cannot shutdown a ROS adapter that is not running' and ros2 launch exited 1.
    launch = demo_run['launch']
    assert demo_run['code'] == 0, launch.tail()
    assert 'Caught exception' not in launch.output, launch.tail()
    assert not demo_run['left'], f"left running: {demo_run['left']}"
    assert 'process has finished cleanly' in launch.output


def test_demo_launch_every_process_finishes_cleanly_on_ctrl_c(demo_run):
    assert 'process has died' not in demo_run['launch'].output, demo_run['launch'].tail()


# -- test_launch.py under launch_testing ---------------------------------------------------------

def launch_test_runner(env):
    """Return the launch_test command on `env`'s PATH: the venv's bin, then a sourced prefix's."""
    runner = shutil.which('launch_test', path=env['PATH'])
    assert runner, f'launch_testing is importable but no launch_test on {env["PATH"]}'
    return runner


def test_launch_test_is_found_where_a_sourced_install_puts_it(tmp_path):
    # A sourced Humble has launch_test in /opt/ros/<distro>/bin, on PATH, not in the venv's bin.
    venv_bin, ros_bin = tmp_path / 'venv' / 'bin', tmp_path / 'opt' / 'bin'
    for folder in (venv_bin, ros_bin):
        folder.mkdir(parents=True)
    (ros_bin / 'launch_test').write_text('#!/bin/sh\n')
    (ros_bin / 'launch_test').chmod(0o755)
    path = os.pathsep.join([str(venv_bin), str(ros_bin)])
    assert launch_test_runner({'PATH': path}) == str(ros_bin / 'launch_test')
    (venv_bin / 'launch_test').write_text('#!/bin/sh\n')
    (venv_bin / 'launch_test').chmod(0o755)
    assert launch_test_runner({'PATH': path}) == str(venv_bin / 'launch_test')


def test_launch_testing_runs_test_launch(env, tmp_path):
    require(*LAUNCH_TESTING)
    runner = launch_test_runner(env)
    result = subprocess.run([runner, str(REPO / 'test/system/test_launch.py')], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert not re.search(r'^(FAIL|ERROR):', output, re.M), output[-6000:]
    for test in ('test_node_reaches_active', 'test_commands_reach_the_controller_topic',
                 'test_gateway_exit_code', 'test_the_four_launch_files_are_there'):
        assert f'{test} (' in output, f'{test} did not run:\n{output[-6000:]}'
    # The tests run while the launch is up, then the post-shutdown ones: two unittest runs.
    runs = [int(n) for n in re.findall(r'^Ran (\d+) tests? in', output, re.M)]
    assert len(runs) == 2 and runs[1] == 1 and runs[0] >= 10, runs
    assert len(re.findall(r'^OK$', output, re.M)) == 2, output[-6000:]


def test_pytest_starts_where_launch_testing_plugins_are_installed():
    require(*LAUNCH_TESTING)
    import importlib.metadata
    plugins = {ep.name for ep in importlib.metadata.entry_points(group='pytest11')}
    assert {'launch_testing', 'launch_ros'} <= plugins, plugins
    # setup.cfg keeps these plugins off: with them pytest >= 9.1 exits 3 before collecting.
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         'test/unit/test_package.py'],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r'^\d+ passed in', result.stdout, re.M), result.stdout


# -- diagnostic_aggregator.launch.py and aggregator:=true -----------------------------------------

# Where diagnostic_aggregator is installed: a stand-in for its aggregator_node, which takes its
# parameters the way upstream's Aggregator does (a node named 'analyzers' that declares every
# parameter it is given: ros/diagnostics, diagnostic_aggregator/src/aggregator.cpp) and says
# what it got. Under test is the launch file's wiring, not the aggregator.
STAND_IN = """#!{python}
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

rclpy.init()
node = Node('analyzers', allow_undeclared_parameters=True,
            automatically_declare_parameters_from_overrides=True)
names = sorted(node.get_parameters_by_prefix(''))
print('stand-in aggregator', node.get_fully_qualified_name(), 'read', ' '.join(names),
      flush=True)
try:
    rclpy.spin(node)
except (KeyboardInterrupt, ExternalShutdownException):
    pass
"""


def stand_in_aggregator(root):
    """Return a prefix holding a diagnostic_aggregator package with a stand-in aggregator_node."""
    prefix = root / 'aggregator_prefix'
    index = prefix / 'share/ament_index/resource_index/packages'
    index.mkdir(parents=True)
    (index / 'diagnostic_aggregator').write_text('')
    executable = prefix / 'lib/diagnostic_aggregator/aggregator_node'
    executable.parent.mkdir(parents=True)
    executable.write_text(STAND_IN.format(python=sys.executable))
    executable.chmod(0o755)
    return prefix


def test_aggregator_launch_says_in_one_line_that_it_is_not_installed(
        env, processes, tmp_path, monkeypatch):
    from ament_index_python.packages import get_package_prefix, PackageNotFoundError
    monkeypatch.setenv('AMENT_PREFIX_PATH', env['AMENT_PREFIX_PATH'])  # what launch searches
    try:
        get_package_prefix('diagnostic_aggregator')
        pytest.skip('diagnostic_aggregator is installed here')
    except PackageNotFoundError:
        pass
    launch = start(processes, ['launch', PACKAGE, 'diagnostic_aggregator.launch.py'], env,
                   tmp_path)
    assert launch.proc.wait(timeout=60) == 0, launch.tail()  # nothing to run: it ends
    launch.wait_for('diagnostic_aggregator is not installed: not starting it', 5.0)
    assert 'process started' not in launch.output


def test_two_arms_with_aggregator_starts_one_aggregator_with_the_analyzers(
        env, probe, processes, tmp_path):
    prefix = stand_in_aggregator(tmp_path)
    env = dict(env, AMENT_PREFIX_PATH=os.pathsep.join([str(prefix), env['AMENT_PREFIX_PATH']]))
    launch = start(processes, ['launch', PACKAGE, 'two_arms.launch.py', 'aggregator:=true',
                               'autostart:=false'], env, tmp_path)
    found = launch.wait_for(r'stand-in aggregator (\S+) read (.*)', UP_S)
    assert found.group(1) == '/analyzers'
    assert {'path', 'policy.startswith', 'policy.remove_prefix', 'policy.expected'} <= \
        set(found.group(2).split()), found.group(2)
    for side in ('left', 'right'):  # both sides are up: neither started a second aggregator
        assert probe.states(f'/{side}/{NODE}', 'unconfigured')[-1] == 'unconfigured'
    assert launch.output.count('stand-in aggregator') == 1, launch.tail()
    ends_cleanly_on_ctrl_c(launch)
