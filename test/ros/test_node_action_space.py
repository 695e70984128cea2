"""Configure's action-space rule: stated by the deployment or the parameter, never guessed."""

from dataclasses import replace

import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.node.configure_checks import check_action_space
from sequence_ai_ros.node.params import ConfigError, NodeConfig

CONFIG = replace(NodeConfig(), model='robot-7')


def entry(**fields):
    return sai.Model.from_wire({'id': 'accounts/sequences/models/robot-7', **fields})


def test_a_deployment_and_a_yaml_that_say_nothing_fail_configure_on_direct():
    with pytest.raises(ConfigError, match='parameter action_space: robot-7 does not state'):
        check_action_space(None, CONFIG, 'direct')
    with pytest.raises(ConfigError, match='parameter action_space'):
        check_action_space(entry(), CONFIG, 'direct')


def test_v1_answers_state_their_space_so_the_parameter_is_not_needed():
    assert check_action_space(None, CONFIG, 'v1') == ''


def test_the_space_comes_from_the_deployment_or_the_parameter():
    assert check_action_space(entry(action_space='joint_velocity'), CONFIG,
                              'direct') == 'joint_velocity'
    stated = replace(CONFIG, action_space='joint_delta')
    assert check_action_space(None, stated, 'direct') == 'joint_delta'
    assert check_action_space(entry(action_space='joint_delta'), stated, 'direct') == \
        'joint_delta'


def test_a_parameter_that_contradicts_the_deployment_fails_configure():
    stated = replace(CONFIG, action_space='joint_position')
    with pytest.raises(ConfigError, match="'joint_position', but the deployment robot-7 "
                                          "states 'joint_velocity'"):
        check_action_space(entry(action_space='joint_velocity'), stated, 'v1')


def test_a_space_the_node_cannot_command_fails_configure():
    with pytest.raises(ConfigError, match="'ee_absolute' cannot be commanded"):
        check_action_space(entry(action_space='ee_absolute'), CONFIG, 'direct')
