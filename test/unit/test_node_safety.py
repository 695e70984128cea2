"""The checks run before publishing: each failure gives a reason that names what is wrong."""

import math
from pathlib import Path
import re

import pytest
from sequence_ai_ros.node.safety import (
    check_command,
    check_joint_positions,
    input_age_problem,
    input_age_reason,
    is_stale,
    SafetyLimits,
)

NAMES = ('j1', 'j2', 'j3', 'gripper')
LIMITS = SafetyLimits(lower=(-1.0, -2.0, -3.0, 0.0), upper=(1.0, 2.0, 3.0, 1.0),
                      max_step_change=0.2)
OK = (0.5, -1.5, 2.9, 0.5)


def test_a_safe_command_passes():
    assert check_command(OK, None, LIMITS) is None
    assert check_command(OK, (0.45, -1.45, 2.8, 0.3), LIMITS, NAMES) is None
    assert check_command(LIMITS.lower, None, LIMITS) is None  # limits are inclusive
    assert check_command(LIMITS.upper, None, LIMITS) is None


@pytest.mark.parametrize('positions', [OK[:3], OK + (0.0,), ()])
def test_wrong_dimension(positions):
    reason = check_command(positions, None, LIMITS, NAMES)
    assert f'{len(positions)} values, expected 4' in reason


@pytest.mark.parametrize('bad', [math.nan, math.inf, -math.inf])
def test_non_finite_names_the_joint(bad):
    reason = check_command((0.0, bad, 0.0, 0.5), None, LIMITS, NAMES)
    assert reason == f'joint 1 (j2) command is {bad}'


def test_non_finite_without_names_uses_the_index():
    assert check_command((0.0, 0.0, math.nan, 0.5), None, LIMITS) == 'joint 2 command is nan'


def test_below_and_above_limits():
    below = check_command((0.0, -2.5, 0.0, 0.5), None, LIMITS, NAMES)
    assert below == 'joint 1 (j2) command -2.5000 is below its lower limit -2.0000'
    above = check_command((0.0, 0.0, 0.0, 1.01), None, LIMITS, NAMES)
    assert above == 'joint 3 (gripper) command 1.0100 is above its upper limit 1.0000'


def test_step_change_larger_than_allowed():
    previous = (0.5, -1.5, 2.9, 0.5)
    moved = (0.5, -1.5 + 0.25, 2.9, 0.5)
    reason = check_command(moved, previous, LIMITS, NAMES)
    assert reason.startswith('joint 1 (j2) would move 0.2500 in one step')
    assert 'max_step_change 0.2000' in reason
    # Exactly the limit passes; either direction counts.
    assert check_command((0.7, -1.5, 2.9, 0.5), previous, LIMITS, NAMES) is None
    assert 'joint 0 (j1)' in check_command((0.29, -1.5, 2.9, 0.5), previous, LIMITS, NAMES)


def test_non_finite_previous_is_not_a_pass():
    reason = check_command(OK, (math.nan, -1.5, 2.9, 0.5), LIMITS, NAMES)
    assert reason is not None and 'joint 0 (j1)' in reason


def test_previous_of_wrong_dimension():
    assert 'previous command has 3 values' in check_command(OK, OK[:3], LIMITS)


def test_limits_are_validated():
    with pytest.raises(ValueError):
        SafetyLimits((0.0,), (1.0, 2.0), 0.1)
    with pytest.raises(ValueError):
        SafetyLimits((1.0,), (0.0,), 0.1)
    with pytest.raises(ValueError):
        SafetyLimits((0.0,), (1.0,), 0.0)
    with pytest.raises(ValueError):
        SafetyLimits((0.0,), (math.inf,), 0.1)


def test_measured_positions():
    assert check_joint_positions((0.0, 1.0, -1.0, 0.5), NAMES) is None
    assert check_joint_positions((0.0, 1.0, math.nan, 0.5), NAMES) == \
        'joint 2 (j3) measured position is nan'
    assert check_joint_positions((math.inf,)) == 'joint 0 measured position is inf'
    assert check_joint_positions((0.0, 1.0), NAMES) == '2 measured positions for 4 joints'


TIMEOUTS = {'/joint_states': 0.5, '/camera/image_raw': 1.0}


def test_fresh_inputs():
    assert input_age_problem({'/joint_states': 0.01, '/camera/image_raw': 1.0}, TIMEOUTS) is None


def test_never_received_names_the_topic():
    reason = input_age_problem({'/joint_states': 0.01, '/camera/image_raw': None}, TIMEOUTS)
    assert reason == 'no message on /camera/image_raw yet'
    # Missing from ages altogether is the same as never received.
    assert input_age_problem({'/joint_states': 0.01}, TIMEOUTS) == \
        'no message on /camera/image_raw yet'


def test_stale_names_the_topic_and_age():
    reason = input_age_problem({'/joint_states': 0.82, '/camera/image_raw': 0.1}, TIMEOUTS)
    assert reason == '/joint_states is 0.820 s old (timeout 0.500 s)'


def test_every_problem_is_reported():
    reason = input_age_problem({'/joint_states': 3.0}, TIMEOUTS)
    assert '/joint_states is 3.000 s old' in reason
    assert 'no message on /camera/image_raw yet' in reason


def test_nan_age_is_stale_and_unchecked_topics_are_ignored():
    assert input_age_problem({'/joint_states': math.nan}, {'/joint_states': 0.5}) is not None
    assert input_age_problem({'/joint_states': 0.1, '/other': None}, {'/joint_states': 0.5}) \
        is None


@pytest.mark.parametrize('age,stale', [(0.0, False), (0.5, False), (0.5000001, True),
                                       (None, True), (math.nan, True), (math.inf, True)])
def test_one_staleness_rule_counts_nan_inf_and_never_as_stale(age, stale):
    assert is_stale(age, 0.5) is stale
    assert (input_age_reason('/joint_states', age, 0.5) is not None) is stale


def test_the_reason_carries_a_note_inside_the_parentheses():
    assert input_age_reason('/a', 2.0, 0.5, '; 3 dropped') == \
        '/a is 2.000 s old (timeout 0.500 s; 3 dropped)'


NODE = Path(__file__).resolve().parents[2] / 'sequence_ai_ros' / 'node'
# An input's age compared with its timeout anywhere but safety.is_stale is a second rule.
SECOND_RULE = re.compile(r'[<>]=?\s*[\w.]*(joint_state|camera|safety_gate)_timeout_s|'
                         r'(joint_state|camera|safety_gate)_timeout_s\s*[<>]')


@pytest.mark.parametrize('path', sorted(NODE.glob('*.py')), ids=lambda p: p.name)
def test_staleness_is_decided_only_in_safety(path):
    assert not SECOND_RULE.search(path.read_text()), 'compare ages through safety.is_stale'
