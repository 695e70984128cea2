"""The shipped parameter files: ROS reads them, the node accepts them, and they hold no key."""

# Each file is read by rcl's own parser (`--params-file`, as `ros2 launch` passes it), so a value
# written `180` where the node declares a double fails here as it would on the robot. A file
# gives only what is model- or arm-specific; the node's declared defaults give the rest, so a
# value equal to its default is there only under a `# restated: why` comment (on its line or
# the line above).

import json
import math
from pathlib import Path
import re

from fixtures_rclpy import *  # noqa: F401,F403  (context)
import pytest
from rclpy.lifecycle import LifecycleNode
from rclpy.node import Node
from sequence_ai_ros.contract.action_spaces import is_absolute_space
from sequence_ai_ros.node import params
from sequence_ai_ros.world import arm_model

REPO = Path(__file__).resolve().parents[2]
# The model parameter files (diagnostic_analyzers.yaml is diagnostic_aggregator's).
CONFIGS = sorted(p for p in (REPO / 'config').glob('*.yaml')
                 if p.name != 'diagnostic_analyzers.yaml')
CATALOGUE = json.loads((REPO / 'sequence_ai_ros/gateway/catalogue.json').read_text())
MODELS = {entry['name']: entry for entry in CATALOGUE['models']}
REQUIRED = {name for name, spec in params.PARAMETERS.items() if spec.required}
# A hosted key looks like seq_ and then letters, digits or underscores.
KEY_PATTERN = re.compile(r'seq_\w+')
P99_Z = 2.3263  # standard normal quantile at 0.99: the catalogue's latency is lognormal
RESTATED = '# restated:'
KEY_LINE = re.compile(r'^( +)([\w.]+):')


def stem(model: str) -> str:
    return model.replace('-', '_')


def ros_args(path: Path) -> list[str]:
    return ['--ros-args', '--params-file', str(path)]


def loaded(context, path: Path) -> dict:
    """Return the parameters rcl reads from `path`, typed as rcl types them, by name."""
    bare = Node('bare', context=context)
    builtin = set(bare.get_parameters_by_prefix(''))
    bare.destroy_node()
    node = Node('policy_node', context=context, cli_args=ros_args(path),
                automatically_declare_parameters_from_overrides=True)
    try:
        found = node.get_parameters_by_prefix('')
    finally:
        node.destroy_node()
    return {name: p for name, p in found.items() if name not in builtin}


def read_through_node(context, namespace: str = '', **kwargs) -> params.NodeConfig:
    """Declare the node's parameters on a lifecycle node built with `kwargs`; read them back."""
    node = LifecycleNode('policy_node', namespace=namespace, context=context, **kwargs)
    try:
        # As the node does: a value rclpy refused at declaration fails the read, naming it.
        return params.read_config(node, params.declare_parameters(node))
    finally:
        node.destroy_node()


def effective(context, path: Path) -> params.NodeConfig:
    """Return what the node runs with from `path`: its values, the defaults for the rest."""
    return read_through_node(context, cli_args=ros_args(path))


def restated(path: Path) -> set:
    """Return the parameters marked `# restated: why` on their line or on the line above."""
    found, keys, above = set(), [], ''
    for line in path.read_text().splitlines():
        match = KEY_LINE.match(line)
        if match:
            indent = len(match.group(1))
            keys = [(i, k) for i, k in keys if i < indent] + [(indent, match.group(2))]
            if RESTATED in line or above.lstrip().startswith(RESTATED):
                found.add('.'.join(k for _, k in keys[1:]))  # below ros__parameters
        above = line
    return found


def restating_problems(context, path: Path) -> list:
    """Return each value that changes nothing unmarked, and each marked one that does change."""
    given = loaded(context, path)
    whole = read_through_node(context, parameter_overrides=list(given.values()))
    marked = restated(path)
    problems = []
    for name in sorted(set(given) - REQUIRED):
        without = [p for n, p in given.items() if n != name]
        try:
            same = read_through_node(context, parameter_overrides=without) == whole
        except params.ConfigError:  # the node needs it (e.g. one topic per camera view)
            same = False
        if same and name not in marked:
            problems.append(f'{name}: the default; drop it or say why ({RESTATED} ...)')
        elif not same and name in marked:
            problems.append(f'{name}: not the default, so not restated: drop the marker')
    return problems + [f'{name}: marked restated, not in the file' for name in marked - set(given)]


def test_one_file_per_catalogue_model():
    assert [p.stem for p in CONFIGS] == sorted(stem(m) for m in MODELS)


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_shape_applies_to_any_node_name_and_namespace(path):
    lines = [ln for ln in path.read_text().splitlines() if ln.strip() and
             not ln.lstrip().startswith('#')]
    assert [ln for ln in lines if not ln.startswith(' ')] == ['/**:']
    assert [ln for ln in lines if re.match(r' {2}\S', ln)] == ['  ros__parameters:']


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_keys_are_the_nodes_parameters_and_every_required_one(context, path):
    keys = set(loaded(context, path))
    assert not keys - set(params.PARAMETERS), 'not parameters of the node'
    assert not REQUIRED - keys, 'required parameters missing'


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_a_value_equal_to_the_default_says_why_it_is_restated(context, path):
    assert restating_problems(context, path) == []


def test_the_restating_check_finds_a_bare_default_and_a_wrong_marker(context, tmp_path):
    text = CONFIGS[0].read_text()
    bare = tmp_path / 'bare.yaml'
    bare.write_text(text + '    jpeg_quality: 92\n    camera_transports: [raw, raw]\n')
    assert [p.split(':')[0] for p in restating_problems(context, bare)] == [
        'camera_transports', 'jpeg_quality']
    said = tmp_path / 'said.yaml'
    said.write_text(text + f'    {RESTATED} why\n    jpeg_quality: 92\n'
                    f'    max_inflight: 4  {RESTATED} it is not\n')
    assert restating_problems(context, said) == [
        'max_inflight: not the default, so not restated: drop the marker']


def test_a_value_of_the_wrong_type_fails_as_on_the_robot(context, tmp_path):
    wrong = tmp_path / 'wrong.yaml'
    wrong.write_text(CONFIGS[0].read_text() + '    startup_timeout_s: 180\n')
    with pytest.raises(params.ConfigError, match='startup_timeout_s'):
        effective(context, wrong)


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_the_node_accepts_the_values(context, path):
    overrides = list(loaded(context, path).values())
    config = read_through_node(context, parameter_overrides=overrides)
    assert stem(config.model) == path.stem
    assert len(config.position_lower) == len(config.joint_names) + 1
    assert len(config.position_upper) == len(config.joint_names) + 1


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_the_file_applies_under_a_namespace_as_launch_passes_it(context, path):
    config = read_through_node(context, namespace='left', cli_args=ros_args(path))
    assert stem(config.model) == path.stem
    assert config.camera_topics == ('camera/exterior/image_raw', 'camera/wrist/image_raw')


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_values_fit_the_model_and_the_arm(context, path):
    got = effective(context, path)
    model = MODELS[got.model]
    assert got.joint_names == arm_model.JOINT_NAMES
    assert got.gripper_joint == arm_model.GRIPPER_JOINT
    assert len(got.joint_names) + 1 == model['action_dim']
    assert list(got.camera_views) == model['camera_views']
    assert list(got.image_size) == model['image_size']
    assert got.jpeg_quality == 92
    assert got.position_lower == pytest.approx(
        [*arm_model.LOWER_LIMITS, arm_model.GRIPPER_RANGE[0]])
    assert got.position_upper == pytest.approx(
        [*arm_model.UPPER_LIMITS, arm_model.GRIPPER_RANGE[1]])
    # A step the arm could follow at its slowest joint's speed limit, at the model's rate.
    assert got.max_step_change <= min(arm_model.VELOCITY_LIMITS) / model['control_hz']
    assert got.startup_timeout_s > model['cold_start_s']
    # Left to the launch file or the environment, so one file serves hosted and local.
    assert got.base_url == ''


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_timing_keeps_up_with_the_models_latency(context, path):
    got = effective(context, path)
    model = MODELS[got.model]
    latency = model['latency']
    p99 = latency['median_s'] * math.exp(P99_Z * latency['sigma'])
    chunk_s = model['action_horizon'] / model['control_hz']
    inflight = got.max_inflight
    # The chunk engine's own rule (it warns otherwise): each request yields a whole chunk
    # when appending, only chunk - latency when time-aligned.
    if got.join_mode == 'append':
        assert p99 <= inflight * chunk_s
    else:
        assert p99 < chunk_s, 'an aligned chunk would arrive with nothing left to play'
        assert p99 <= inflight * chunk_s / 2
    if is_absolute_space(model['action_space']):
        assert 0 < got.smooth_seam < model['action_horizon']
    else:
        assert got.smooth_seam == 0, 'ignored for increments and velocities: misleading'


@pytest.mark.parametrize('path', [*CONFIGS, *sorted((REPO / 'launch').glob('*.py'))],
                         ids=lambda p: p.name)
def test_no_api_key_in_shipped_files(path):
    text = path.read_text()
    assert not KEY_PATTERN.search(text)
    assert not re.search(r'^\s*api_key\s*:', text, re.M), 'the key is never a parameter'


# -- the controllers file: the gripper controller a current install has -------------------------

CONTROLLERS = REPO / 'config/ros2_control/panda_controllers.yaml'


def test_the_controllers_file_names_the_parallel_gripper_controller_and_the_sim_serves_it(
        context):
    from sequence_ai_ros.sim.gripper_action import (
        controller_manager_type,
        GripperActionController,
        PARALLEL_TYPE,
    )
    # gripper_controllers (position_controllers/...) is gone from Kilted on; the deprecation
    # warning's 'parallel_gripper_controllers/...' is no plugin's name.
    assert controller_manager_type(ros_args(CONTROLLERS), 'gripper_action_controller') == \
        PARALLEL_TYPE
    assert '#   type: position_controllers/GripperActionController' in CONTROLLERS.read_text()
    try:
        from control_msgs.action import ParallelGripperCommand  # noqa: F401
    except ImportError:
        pytest.skip('control_msgs with ParallelGripperCommand (not on PyPI) is not installed')
    node = GripperActionController(name='gripper_action_controller', context=context,
                                   cli_args=ros_args(CONTROLLERS), use_global_arguments=False)
    try:
        assert node.controller_type == PARALLEL_TYPE
        assert [node.get_parameter(n).value for n in ('joint', 'goal_tolerance', 'max_effort',
                                                      'allow_stalling', 'max_velocity')] == [
            arm_model.GRIPPER_JOINT, 0.002, 20.0, True, 0.1]
    finally:
        node.destroy_node()


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.stem)
def test_the_arm_and_the_gripper_go_to_controllers_of_the_controllers_file(context, path):
    got = effective(context, path)
    assert got.output_mode == 'trajectory_plan'
    assert f'/**/{got.controller_name}:' in CONTROLLERS.read_text()
    assert got.gripper_interface == 'action'
    assert f'/**/{got.gripper_controller}:' in CONTROLLERS.read_text()
    assert (got.gripper_open_position, got.gripper_closed_position) == (
        arm_model.FINGER_OPEN_M, arm_model.FINGER_CLOSED_M)
