"""The node's parameter table: one declaration each, and everything derived from it agrees."""

# Each check runs the real declaration and read on an rclpy LifecycleNode, as the node does.

from dataclasses import dataclass, fields, replace
import json
from pathlib import Path
import re

from fixtures_rclpy import *  # noqa: F401,F403  (context)
import pytest
from rclpy.lifecycle import LifecycleNode
from rclpy.parameter import Parameter
from ros_harness import node_parameters
from sequence_ai_ros.client import PlaybackOptions
from sequence_ai_ros.node import param_docs, params
from sequence_ai_ros.node.param_spec import param, parameter_table

REPO = Path(__file__).resolve().parents[2]
PLAYBACK = {name: spec for name, spec in params.PARAMETERS.items() if spec.playback}


def read(context, **overrides) -> params.NodeConfig:
    """Declare the parameters over a valid set changed by `overrides`; read the config."""
    values = node_parameters(**overrides)
    node = LifecycleNode('policy_node', context=context, parameter_overrides=[
        Parameter(name, value=value) for name, value in values.items() if value is not None])
    try:
        assert params.declare_parameters(node) == {}
        return params.read_config(node)
    finally:
        node.destroy_node()


def refusal(context, **overrides) -> str:
    with pytest.raises(params.ConfigError) as caught:
        read(context, **overrides)
    return str(caught.value)


def test_every_field_is_one_declared_parameter():
    assert [spec.field for spec in params.PARAMETERS.values()] == \
        [f.name for f in fields(params.NodeConfig)]
    assert params.CONFIGURE_PARAMETERS == set(params.PARAMETERS) - {'instruction', 'label_notes'}


def test_a_default_that_is_not_its_fields_type_fails_at_import():
    @dataclass(frozen=True)
    class Wrong:
        rate: float = param(1, 'an int where a double is declared')

    with pytest.raises(TypeError, match='rate'):
        parameter_table(Wrong)


def test_playback_parameters_take_defaults_from_playback_options_but_the_startup_wait():
    defaults = PlaybackOptions()
    node = {spec.playback: spec.default for spec in PLAYBACK.values()}
    assert set(node) == {f.name for f in fields(PlaybackOptions)}
    assert {name for name, value in node.items() if getattr(defaults, name) != value} == \
        {'startup_timeout_s'}
    assert params.NodeConfig().playback == replace(
        defaults, startup_timeout_s=node['startup_timeout_s'])


def test_the_default_startup_wait_outlasts_every_models_cold_start():
    # A robot's first episode waits out a cold hosted model instead of failing at once.
    catalogue = json.loads((REPO / 'sequence_ai_ros/gateway/catalogue.json').read_text())
    assert params.NodeConfig().startup_timeout_s > max(
        model['cold_start_s'] for model in catalogue['models'])


@pytest.mark.parametrize('name', [n for n, s in PLAYBACK.items() if s.bounds], ids=str)
def test_a_playback_range_starts_where_playback_options_does(name):
    # The descriptor's range caps what a robot may ask; its floor is PlaybackOptions' own.
    spec = PLAYBACK[name]
    low = spec.bounds[0]
    below = low - (1 if spec.ros_type == 'integer' else 1e-9)
    PlaybackOptions(**{spec.playback: type(spec.default)(low)})
    with pytest.raises(ValueError):
        PlaybackOptions(**{spec.playback: type(spec.default)(below)})


def test_the_stream_gets_the_playback_the_parameters_say(context):
    config = read(context, join_mode='aligned', max_inflight=3, smooth_seam=4,
                  seam_blend='linear', request_retries=0, retry_backoff_s=0.5,
                  startup_timeout_s=90.0, prefetch=False)
    assert config.playback == PlaybackOptions(
        join_mode='aligned', max_inflight=3, smooth_seam=4, seam_blend='linear',
        request_retries=0,
        retry_backoff_s=0.5, startup_timeout_s=90.0, prefetch=False)


@pytest.mark.parametrize('name', [n for n, s in params.PARAMETERS.items() if s.required])
def test_a_required_parameter_left_at_its_default_fails_configure_naming_it(context, name):
    assert f'parameter {name}' in refusal(context, **{name: None})


@pytest.mark.parametrize('overrides,named', [
    ({'join_mode': 'nearest'}, 'join_mode: must be one of'),
    ({'seam_blend': 'cubic'}, 'seam_blend: must be one of'),
    ({'protocol': 'grpc'}, 'protocol: must be one of'),
    ({'action_space': 'ee_pose'}, 'action_space: must be one of'),
    ({'output_mode': 'effort'}, 'output_mode: must be one of'),
    ({'gripper_interface': 'magic'}, 'gripper_interface: must be one of'),
    ({'gripper_on_failure': 'retry'}, 'gripper_on_failure: must be one of'),
    ({'camera_transports': ['raw', 'theora']}, 'camera_transports: entries must be one of'),
    ({'image_size': [224, 224, 3]}, 'image_size: needs [width, height]'),
    ({'image_size': [4, 224]}, 'image_size: each must be 8..4096'),
    ({'joint_names': ['a', 'a']}, 'joint_names: has a duplicate name'),
    ({'controller_name': '/'}, 'controller_name: is required'),
    ({'position_limits.lower': [float('nan')] * 8}, 'position_limits.lower: must be finite'),
    ({'gripper_joint': 'panda_joint1'}, 'gripper_joint: is also listed in joint_names'),
    ({'camera_topics': ['only/one']}, 'camera_topics: needs one topic per camera view (2)'),
    ({'camera_transports': ['raw']}, 'camera_transports: needs one entry per camera view'),
    ({'position_limits.upper': [1.0]}, 'position_limits.upper: needs 8 values'),
    ({'position_limits.upper': [-9.0] * 8}, 'position_limits: each lower limit'),
    ({'gripper_closed_position': 0.0}, 'gripper_closed_position: must differ'),
    ({'output_mode': 'forward_velocity'}, 'gripper_interface: '),
    ({'output_mode': 'forward_velocity', 'gripper_interface': 'action'},
     'velocity_limits: needs 7 positive values'),
    ({'output_mode': 'forward_velocity', 'gripper_interface': 'action',
      'velocity_limits': [1.0] * 7}, 'max_acceleration: is required'),
], ids=lambda v: ','.join(v) if isinstance(v, dict) else None)
def test_a_bad_value_fails_configure_naming_the_parameter(context, overrides, named):
    assert named in refusal(context, **overrides)


def test_derived_values(context):
    config = read(context, camera_transports=[''], hardware_id='', controller_name='/arm/')
    assert config.camera_transports == ('raw', 'raw')
    assert config.hardware_id == '/policy_node'
    assert config.controller_name == 'arm'


def test_the_reference_is_written_from_the_table():
    assert (REPO / 'docs/PARAMETERS.md').read_text() == param_docs.markdown(), \
        'run: python -m sequence_ai_ros.node.param_docs > docs/PARAMETERS.md'


def documented_parameters() -> str:
    text = (REPO / 'docs/OPERATING.md').read_text()
    return text.split('\n## Parameters\n', 1)[1].split('\n## ', 1)[0]


def test_the_operating_page_names_only_parameters_and_their_values():
    choices = [spec for spec in params.PARAMETERS.values() if spec.validators and
               spec.ros_type == 'string']
    named = set()
    for token in re.findall(r'`([a-z][a-z0-9_./]*)`', documented_parameters()):
        head, _, tails = token.rpartition('.') if '/' in token else (token, '', '')
        names = [f'{head}.{tail}' for tail in tails.split('/')] if tails else [token]
        for name in names:
            if name in params.PARAMETERS:
                named.add(name)
            else:
                assert any(spec.problem(name) is None for spec in choices), \
                    f"{name!r} is neither a parameter nor one of a parameter's values"
    assert {'model', 'max_actions', 'join_mode', 'instruction'} <= named
    for name, default in re.findall(r'`(\w+)` \(default ([^,)]+)', documented_parameters()):
        assert param_docs.default_text(params.PARAMETERS[name]) == default, name
