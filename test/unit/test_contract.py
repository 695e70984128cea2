"""The wire contract's shared rules, each with one home in sequence_ai_ros.contract."""

import ast
from pathlib import Path

from engine_sim import simulate
import pytest
from sequence_ai_ros.client import ChunkEngine, PlaybackOptions
from sequence_ai_ros.contract.action_spaces import (
    ABSOLUTE,
    DELTA,
    is_absolute_space,
    joint_space_kind,
    space_kind,
    VELOCITY,
)
from sequence_ai_ros.contract.key_masking import mask_key, redact

PACKAGE = Path(__file__).resolve().parents[2] / 'sequence_ai_ros'
# A rule's names: defined in its contract module and nowhere else in the package.
HOMES = {
    'space_kind': 'action_spaces', 'joint_space_kind': 'action_spaces',
    'is_absolute_space': 'action_spaces', 'is_velocity_space': 'action_spaces',
    'mask_key': 'key_masking', 'mask': 'key_masking', 'redact': 'key_masking',
}


@pytest.mark.parametrize(('space', 'kind'), [
    ('joint_position', ABSOLUTE), ('joint_absolute', ABSOLUTE), ('joint_pos', ABSOLUTE),
    ('joint_delta', DELTA), ('joint_velocity', VELOCITY), ('joint_vel', VELOCITY),
    ('JOINT_POSITION', ABSOLUTE), ('joint_position_delta', None), ('joint_torque', None),
    ('', None), (None, None)])
def test_the_kind_of_a_space_comes_from_its_name(space, kind):
    assert space_kind(space) == kind


def test_an_ambiguous_space_is_neither_blended_by_the_engine_nor_mapped_by_the_node():
    from sequence_ai_ros.node.commands import supported_action_space
    assert not is_absolute_space('joint_position_delta')
    assert not supported_action_space('joint_position_delta')
    assert joint_space_kind('eef_position') is None and space_kind('eef_position') == ABSOLUTE
    blended = {}
    for space in ('joint_position', 'joint_position_delta'):
        engine = ChunkEngine(PlaybackOptions(join_mode='append', smooth_seam=4, max_inflight=1,
                                             seam_blend='linear'))
        result = simulate(engine, steps=10, hz=10.0, ticks=60, latency=lambda i, t: 0.35,
                          space=space)
        exact = {v for chunk in result.produced.values() for row in chunk.steps for v in row}
        blended[space] = sum(1 for step in result.played if step.values[0] not in exact)
    assert blended['joint_position'] > 0, 'the absolute space was not blended: the check is void'
    assert blended['joint_position_delta'] == 0, 'an ambiguous space was blended as absolute'


def test_keys_are_masked_the_same_everywhere():
    assert mask_key('seq_abcdefghijkl0001') == 'seq_…0001'
    assert mask_key('seq_short', 3) == 'seq_…#3'
    assert mask_key('seq_short') == '<set>'
    assert mask_key(None) == '<none>' and mask_key('') == '<none>'


@pytest.mark.parametrize('text', [
    'bad key seq_live_secret_123', "quoted 'seq_live_secret_123'", 'Bearer abc.def.ghi',
    'authorization: bearer seq_x'])
def test_key_shaped_tokens_and_bearer_credentials_are_redacted(text):
    out = redact(text)
    assert 'secret' not in out and 'abc.def' not in out and 'seq_x' not in out
    assert '[redacted]' in out


def test_each_shared_rule_is_defined_only_in_its_contract_module():
    homes = []
    for path in PACKAGE.rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in HOMES:
                homes.append((node.name, path.relative_to(PACKAGE).as_posix()))
    strays = [(name, where) for name, where in homes
              if where != f'contract/{HOMES[name]}.py']
    assert not strays, f'a shared rule written again outside sequence_ai_ros/contract: {strays}'


def test_the_gateway_and_the_world_model_load_no_client_module():
    import subprocess
    import sys
    code = ('import sys, sequence_ai_ros.gateway.app, sequence_ai_ros.world.arm_model; '
            "print(sorted(m for m in sys.modules if m == 'httpx' "
            "or m.startswith('sequence_ai_ros.client')))")
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            check=True, timeout=60)
    assert result.stdout.strip() == '[]', result.stdout
