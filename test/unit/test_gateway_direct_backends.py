"""
The direct worker's acts run through the same policy core as /v1/act.

A --policy plug-in and an openpi server serve it as they serve /v1/act, and a failing policy is
the direct protocol's `policy_error`.
"""

from direct_robot import error_of, Robot
from fixtures_gateway import AUTH, MAIN_KEY, preset_observation, TEST_DIR, TEST_KEYS, TIME_SCALE
import httpx
import numpy as np
from openpi_process import OpenpiServerProcess
from openpi_server import HZ, reach_chunk
import pytest
from sequence_ai_ros.gateway.process import GatewayProcess

START = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])


@pytest.fixture(scope='module')
def plugin_direct():
    with GatewayProcess(['--time-scale', str(TIME_SCALE), '--start-warm', '--protocol', 'both',
                         '--policy', 'fixtures_gateway:make_plugin_policy'],
                        keys=TEST_KEYS, import_paths=[TEST_DIR]) as gateway:
        yield gateway


def test_a_plugin_serves_the_direct_front_and_its_failure_is_a_policy_error(plugin_direct):
    robot = Robot(plugin_direct, 'lingbot-va-5b')
    try:
        assert robot.connect().status_code == 200
        robot.observe('ep', preset_observation())
        answer = robot.act('ep').json()
        # PluginPolicy's last column is the exterior frame's width; it names the views it saw.
        assert [s['values'][-1] for s in answer['outputs']['steps']] == [224] * 16
        assert "plug-in saw ['exterior_1', 'wrist']" in answer['warnings']
        robot.observe('ep', preset_observation(instruction='raise'))
        failed = error_of(robot.act('ep'), 'policy_error')
        assert 'plug-in exploded' in failed['detail']
    finally:
        robot.release()
        robot.close()
    # The same plug-in still answers /v1/act beside it (--protocol both).
    stats = plugin_direct.stats()
    assert stats['protocol'] == 'both' and stats['policy'] == 'fixtures_gateway:make_plugin_policy'


def test_an_openpi_server_serves_the_direct_front():
    with OpenpiServerProcess() as server, \
            GatewayProcess(['--openpi', server.url, '--protocol', 'direct'],
                           keys={MAIN_KEY: 100}) as gateway:
        robot = Robot(gateway)
        try:
            assert robot.connect().status_code == 200
            assert robot.answer['hz'] == HZ
            inputs = preset_observation(q=START)
            robot.observe('ep', inputs)
            answer = robot.act('ep')
            assert answer.status_code == 200, answer.text
            rows = [s['values'] for s in answer.json()['outputs']['steps']]
            assert np.allclose(rows, reach_chunk(START), atol=1e-6)
        finally:
            robot.release()
            robot.close()


def test_the_same_observation_and_seed_give_the_same_chunk_on_both_fronts():
    with GatewayProcess(['--time-scale', str(TIME_SCALE), '--start-warm', '--protocol', 'both'],
                        keys=TEST_KEYS) as gateway:
        inputs = preset_observation(q=START)
        v1 = httpx.post(gateway.base_url + '/v1/act', headers=AUTH, timeout=30, json={
            'model': 'accounts/sequences/models/cosmos3-edge-policy-droid', 'seed': 11,
            'observation': {**inputs, 'proprioception': {'joint_positions': list(START),
                                                         'gripper': 0.0}}})
        robot = Robot(gateway, 'cosmos3-edge-policy-droid')
        try:
            robot.connect()
            robot.observe('ep', inputs)
            direct = robot.act('ep', seed=11).json()['outputs']
        finally:
            robot.release()
            robot.close()
        assert v1.json()['action_chunk'] == direct
        stats = gateway.stats()
        assert stats['acts']['accounts/sequences/models/cosmos3-edge-policy-droid'] == \
            {'200': 1}
        assert stats['direct']['worker']['acts'] == \
            {'accounts/sequences/models/cosmos3-edge-policy-droid': {'200': 1}}
