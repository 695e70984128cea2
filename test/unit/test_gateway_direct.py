"""
The gateway's direct protocol over plain HTTP (httpx): what the published client does not show.

The published sequence-ai 0.51.5 client runs against the same gateway in test/published; here
are the routes' own answers: the connect answer, the worker's formats and certificate, the
secret (never an API key) at the worker, numbered observations and frames_missing, seats that
expire or are released, the local stats, and every error's code-based body.
"""

import hashlib
import json
import socket
import ssl
import subprocess
import sys
import time

from direct_robot import error_of, Robot
from fixtures_gateway import (
    AUTH,
    DIRECT_ARGS,
    MAIN_KEY,
    preset_observation,
    TEST_KEYS,
    TIME_SCALE,
    TWO_CREDIT_KEY,
)
import httpx
import msgpack
import numpy as np
import pytest
from sequence_ai_ros.contract.key_masking import mask_key
from sequence_ai_ros.gateway.direct.wire import MSGPACK_TYPE, unpack
from sequence_ai_ros.gateway.process import free_port, GatewayProcess

FORMATS = {'x-seq-msgpack/1', 'x-seq-observe/1', 'x-seq-call/1'}
LINGBOT_VA = 'accounts/sequences/models/lingbot-va-5b'
ERROR_KEYS = {'detail', 'code', 'retryable', 'retry_after_s', 'request_id', 'hint', 'details'}


@pytest.fixture
def robot(direct_gateway):
    robot = Robot(direct_gateway)
    assert robot.connect().status_code == 200
    yield robot
    robot.release()
    robot.close()


def test_connect_answers_what_the_client_reads(robot, direct_gateway):
    answer = robot.answer
    assert answer['worker_url'].startswith('https://127.0.0.1:')
    assert answer['tls'] == 'pinned' and answer['params'] == {}
    assert answer['direct_secret'] and not answer['direct_secret'].startswith('seq_')
    assert set(answer['lease']) == {'epoch', 'ttl_s', 'expires_at'}
    assert answer['lease']['ttl_s'] == round(600 * TIME_SCALE)
    assert answer['keepalive'] == {'every_s': pytest.approx(20 * 100 / 60 * TIME_SCALE, abs=1e-3),
                                   'seat_ttl_s': pytest.approx(100 * TIME_SCALE)}
    # pi05-droid: 15 steps at 15 Hz of model time, asked again after 8.
    assert answer['hz'] == pytest.approx(15 / TIME_SCALE)
    assert (answer['action_chunk_valid_len'], answer['action_chunk_replan_at']) == (15, 8)
    assert answer['request_timeout_s'] == pytest.approx(300 * TIME_SCALE)
    # A renewal keeps the secret and the epoch: the client keeps its worker connection.
    again = robot.control.post('/v1/act/connect',
                               json={'model': 'pi05-droid', 'session': robot.session}).json()
    assert again['direct_secret'] == answer['direct_secret']
    assert again['lease']['epoch'] == answer['lease']['epoch']
    # The secret is the worker's bearer: never in the log or the local stats.
    assert answer['direct_secret'] not in direct_gateway.log()
    assert answer['direct_secret'] not in json.dumps(direct_gateway.stats())
    assert MAIN_KEY not in json.dumps(direct_gateway.stats())


def test_connect_names_the_certificate_it_serves(robot):
    host, port = robot.answer['worker_url'].removeprefix('https://').split(':')
    served = ssl.get_server_certificate((host, int(port)))
    der = ssl.PEM_cert_to_DER_cert(served)
    assert hashlib.sha256(der).hexdigest() == robot.answer['cert_fingerprint']


def test_the_worker_names_its_formats_on_every_answer(robot):
    assert robot.worker is not None
    ping = robot.worker.get('/ping')
    assert ping.status_code == 200
    refused = httpx.post(robot.answer['worker_url'] + '/act', verify=False, json={})
    for response in (ping, refused):
        said = {f.strip() for f in response.headers['X-Seq-Act-Formats'].split(',')}
        assert said == FORMATS
    error_of(refused, 'unauthenticated')


def test_an_api_key_is_refused_at_the_worker(robot):
    for key in (MAIN_KEY, 'not-the-secret'):
        response = httpx.post(robot.answer['worker_url'] + '/act', verify=False,
                              headers={'Authorization': f'Bearer {key}'},
                              json={'model': 'pi05-droid', 'episode_id': 'e', 'call': 'act',
                                    'seq': 1})
        body = error_of(response, 'unauthenticated')
        assert MAIN_KEY not in response.text
    assert 'never accepted at the worker' in body['detail'] or 'unknown' in body['detail']


def test_an_episode_of_observations_and_acts_in_json_and_msgpack(robot):
    assert robot.observe('ep-1', preset_observation()).json() == {'through': 0}
    answer = robot.act('ep-1')
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {'outputs', 'perf', 'usage', 'warnings', 'request_id'}
    chunk = body['outputs']
    assert (chunk['robot'], chunk['action_space'], chunk['action_dim']) == \
        ('droid', 'joint_velocity', 8)
    assert len(chunk['steps']) == 15
    assert chunk['covers_seconds'] == pytest.approx(15 / chunk['control_frequency_hz'])
    # msgpack both ways: numpy proprioception in, the chunk back as msgpack.
    inputs = preset_observation()
    inputs['proprioception']['joint_positions'] = np.zeros(7, np.float32)
    assert robot.observe('ep-1', inputs).json() == {'through': 1}
    assert robot.worker is not None
    packed = robot.worker.post(
        '/act', content=msgpack.packb({'model': 'pi05-droid', 'episode_id': 'ep-1',
                                       'call': 'act', 'seq': 2}),
        headers={'Content-Type': MSGPACK_TYPE, 'Accept': MSGPACK_TYPE})
    assert packed.headers['content-type'] == MSGPACK_TYPE
    assert len(unpack(packed.content)['outputs']['steps']) == 15
    ended = robot.worker.post('/act/episode_end', json={'episode_id': 'ep-1'})
    assert ended.json() == {'ended': True}
    after = robot.act('ep-1', 3)
    assert error_of(after, 'invalid_request')['detail'].startswith('this episode ended')


def test_an_act_with_nothing_observed_or_a_skipped_number_is_refused(robot):
    error_of(robot.act('ep-empty', 0), 'invalid_request')
    robot.observe('ep-gap', preset_observation(), 0)
    robot.observe('ep-gap', preset_observation(), 2)
    missing = error_of(robot.act('ep-gap', 3), 'conflict', 'frames_missing')
    assert missing['details']['from'] == 1
    robot.observe('ep-gap', preset_observation(), 1)
    assert robot.act('ep-gap', 3).status_code == 200


def test_a_robot_never_reads_another_robots_episode(robot, direct_gateway):
    robot.observe('ep-shared', preset_observation())
    other = Robot(direct_gateway)
    try:
        other.connect()
        error_of(other.act('ep-shared', 1), 'conflict', 'episode_lost')
        # That took the 2 s an act waits for observations: the seat's whole seat_ttl_s.
        assert robot.connect().status_code == 200
        robot.observe('ep-shared', preset_observation(), 0)
        assert robot.act('ep-shared', 1).status_code == 200
    finally:
        other.release()
        other.close()


def test_the_preset_is_checked_as_it_declares(robot):
    small = preset_observation(size=160)
    robot.observe('ep-small', small)
    refused = error_of(robot.act('ep-small'), 'invalid_request')
    assert refused['details']['sizes'] == {'exterior_1': '160x160', 'wrist': '160x160'}
    assert 'resize_image(frame, 224, 224' in refused['hint']
    wrong = preset_observation()
    wrong['proprioception']['gripper'] = 0.0  # the preset's gripper is a list
    robot.observe('ep-gripper', wrong)
    assert 'gripper' in error_of(robot.act('ep-gripper'), 'invalid_request')['detail']
    extra = dict(preset_observation(), action_horizon=4)
    robot.observe('ep-extra', extra)
    assert 'action_horizon' in error_of(robot.act('ep-extra'), 'invalid_request')['detail']


def test_control_plane_errors_are_code_based(direct_gateway):
    base = direct_gateway.base_url
    body = {'model': 'pi05-droid', 'session': 'session-errors-1'}
    error_of(httpx.post(base + '/v1/act/connect', json=body), 'unauthenticated')
    missing = httpx.post(base + '/v1/act/connect', headers=AUTH,
                         json={**body, 'model': 'no-such-policy'})
    assert 'pi05-droid' in error_of(missing, 'not_found')['detail']
    error_of(httpx.post(base + '/v1/act/connect', headers=AUTH, json={'model': 'pi05-droid'}),
             'invalid_request')
    # Protocol v1's own route is not served by a direct-only gateway.
    assert httpx.post(base + '/v1/act', headers=AUTH, json={}).status_code == 404


def test_seats_are_held_released_and_expire_and_the_stats_say_so(direct_gateway):
    robots = [Robot(direct_gateway, 'lingbot-va-5b') for _ in range(3)]
    try:
        assert [r.connect().status_code for r in robots[:2]] == [200, 200]
        busy = error_of(robots[2].connect(), 'busy')
        assert busy['retry_after_s'] > 0
        seats = direct_gateway.stats()['direct']['seats'][LINGBOT_VA]
        assert (seats['held'], seats['seats']) == (2, 2)
        assert robots[0].release().json() == {'released': True}
        assert robots[0].keepalive().json()['held'] is False
        assert robots[2].connect().status_code == 200
        # robots[1] stops keeping alive; robots[2] keeps alive past its seat_ttl_s (2 s).
        ttl = robots[2].answer['keepalive']['seat_ttl_s']
        for _ in range(6):
            assert robots[2].keepalive().json()['held'] is True
            time.sleep(ttl / 3)
        assert robots[1].keepalive().json()['held'] is False
        assert robots[1].act('e', 1).status_code == 401  # its secret went with its seat
        seats = direct_gateway.stats()['direct']['seats'][LINGBOT_VA]
        assert seats['held'] == 1 and seats['released'] >= 1 and seats['expired'] >= 1
    finally:
        for r in robots:
            r.release()
            r.close()


def test_labels_and_credit(direct_gateway):
    label = httpx.post(direct_gateway.base_url + '/v1/deployments/pi05-droid/episodes/ep-9/label',
                       headers=AUTH, json={'success': True, 'notes': 'cup held'})
    assert label.json() == {'labelled': True, 'episode_id': 'ep-9'}
    labels = direct_gateway.stats()['direct']['episodes']['labels']
    assert {'model': 'pi05-droid', 'episode_id': 'ep-9', 'success': True,
            'notes': 'cup held'}.items() <= labels[-1].items()
    # Acts at the worker are charged to the key that connected: 2 credits, 2 acts.
    robot = Robot(direct_gateway, 'cosmos3-edge-policy-droid', key=TWO_CREDIT_KEY)
    try:
        robot.connect()
        for _ in range(2):
            robot.observe('ep-credit', preset_observation())
            assert robot.act('ep-credit').status_code == 200
        robot.observe('ep-credit', preset_observation())
        error_of(robot.act('ep-credit'), 'insufficient_credit')
    finally:
        robot.release()
        robot.close()


def test_draining_is_said_on_both_planes():
    with GatewayProcess(DIRECT_ARGS, keys=TEST_KEYS) as gateway:
        robot = Robot(gateway)
        robot.connect()
        robot.observe('ep', preset_observation())
        httpx.post(gateway.base_url + '/v1/_local/drain')
        error_of(robot.act('ep'), 'unavailable', 'draining')
        error_of(robot.connect(), 'unavailable', 'draining')
        robot.close()


def test_an_episode_is_lost_when_the_gateway_restarts_under_it():
    with GatewayProcess(DIRECT_ARGS, keys=TEST_KEYS) as gateway:
        robot = Robot(gateway, session='session-restarted')
        robot.connect()
        robot.observe('ep-long', preset_observation())
        assert robot.act('ep-long').status_code == 200
        old_secret = robot.answer['direct_secret']
        gateway.restart()
        robot.connect()
        assert robot.answer['direct_secret'] != old_secret
        # The client sends again what it kept since its last served act, then the act.
        robot.observe('ep-long', preset_observation(), 1)
        error_of(robot.act('ep-long', 2), 'conflict', 'episode_lost')
        assert gateway.stats()['direct']['episodes']['lost'] == 1
        robot.release()
        robot.close()


def test_a_cold_deployment_warms_and_a_full_one_queues():
    args = ['--time-scale', '0.01', '--protocol', 'direct', '--cold-start-s', '100',
            '--seats', '1', '--seat-queue', '--seat-ttl-s', '500']
    with GatewayProcess(args, keys=TEST_KEYS) as gateway:
        first, second = Robot(gateway), Robot(gateway)
        warming = error_of(first.connect(), 'warming')
        assert 0 < warming['retry_after_s'] <= 1.0
        assert warming['details']['start_deadline_in_s'] >= warming['retry_after_s']
        ready = first.control.get('/v1/act/ready',
                                  params={'model': 'pi05-droid', 'session': first.session})
        assert ready.json()['status'] == 'starting'
        time.sleep(warming['retry_after_s'] + 0.1)
        assert first.connect().status_code == 200
        queued = error_of(second.connect(), 'unavailable', 'queued')
        assert queued['details']['queue_position'] == 1
        said = second.control.get('/v1/act/ready',
                                  params={'model': 'pi05-droid', 'session': second.session})
        assert (said.json()['status'], said.json()['queue_position']) == ('queued', 1)
        first.release()
        assert second.connect().status_code == 200
        for r in (first, second):
            r.release()
            r.close()


def test_a_robot_key_connects_to_its_own_deployment_only():
    spec = f'{MAIN_KEY}=100,seq_robot_unit_arm_01=100@pi05-droid'
    with GatewayProcess(DIRECT_ARGS, env={'SEQUENCE_AI_ROS_GATEWAY_KEYS': spec}) as gateway:
        own = Robot(gateway, 'pi05-droid', key='seq_robot_unit_arm_01')
        other = Robot(gateway, 'lingbot-va-5b', key='seq_robot_unit_arm_01')
        try:
            assert own.connect().status_code == 200
            refused = error_of(other.connect(), 'forbidden')
            assert 'pi05-droid' in refused['detail'] and 'seq_robot' not in refused['detail']
            label = other.control.post('/v1/deployments/lingbot-va-5b/episodes/e/label',
                                       json={'success': True})
            error_of(label, 'forbidden')
        finally:
            own.release()
            own.close()
            other.close()


def test_an_act_refused_while_its_model_warms_again_is_served_when_sent_again():
    # Cold start 50 model s (1 s here); idle 20 model s (0.4 s) and the model is cold again.
    args = ['--time-scale', str(TIME_SCALE), '--protocol', 'direct', '--cold-start-s', '50',
            '--idle-cold-s', '20', '--seat-ttl-s', '1000']
    with GatewayProcess(args, keys=TEST_KEYS) as gateway:
        robot = Robot(gateway, key=TWO_CREDIT_KEY)
        try:
            time.sleep(error_of(robot.connect(), 'warming')['retry_after_s'])
            assert robot.connect().status_code == 200
            robot.observe('ep', preset_observation())
            assert robot.act('ep').status_code == 200
            time.sleep(0.6)
            robot.observe('ep', preset_observation())
            refused = error_of(robot.act('ep'), 'warming')
            time.sleep(refused['retry_after_s'])
            # The same act, the same number: it reads the observation it was refused with.
            assert robot.act('ep').status_code == 200
            credit = gateway.stats()['keys'][mask_key(TWO_CREDIT_KEY)]
            assert credit == {'acts': 2, 'credit_left': 0}  # the refused act was not charged
        finally:
            robot.release()
            robot.close()


def test_a_taken_worker_port_is_a_one_line_error():
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        done = subprocess.run([sys.executable, '-m', 'sequence_ai_ros.gateway', '--port',
                               str(free_port()), '--worker-port',
                               str(taken.getsockname()[1])],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith('gateway: error: direct worker:')


def test_the_direct_protocol_is_refused_on_ray():
    done = subprocess.run([sys.executable, '-m', 'sequence_ai_ros.gateway', '--ray',
                           '--protocol', 'direct'], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert '--ray serves v1 only' in done.stderr
