"""
The openpi adapter: openpi's wire format, and a real gateway in front of a real openpi server.

The server (openpi_server.py) follows openpi's websocket_policy_server.py and runs as its own
process; the gateway runs `--openpi ws://...` as its own process; this project's client and
raw HTTP talk to the gateway as a robot would.
"""

import httpx
import msgpack
import numpy as np
from observations import observation
from openpi_process import OpenpiServerProcess
from openpi_server import HZ, reach_chunk, TARGET
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.gateway.openpi.codec import CodecError, packb, unpackb
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.world import arm_model

KEY = 'seq_openpi_tests_key_000000000001'
AUTH = {'Authorization': f'Bearer {KEY}'}
START = arm_model.HOME


# -- the codec ------------------------------------------------------------------------------

def test_an_array_is_openpis_ndarray_map_byte_for_byte():
    # openpi, main, packages/openpi-client/src/openpi_client/msgpack_numpy.py, pack_array:
    # {b'__ndarray__': True, b'data': tobytes(), b'dtype': dtype.str, b'shape': shape}.
    array = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)
    openpi = msgpack.packb({b'__ndarray__': True, b'data': array.tobytes(), b'dtype': '<f4',
                            b'shape': [2, 2]}, use_bin_type=True)
    assert packb(array) == openpi
    scalar = msgpack.packb({b'__npgeneric__': True, b'data': 7, b'dtype': '<i8'})
    assert packb(np.int64(7)) == scalar
    decoded = unpackb(openpi)
    assert decoded.dtype == np.float32 and np.array_equal(decoded, array)
    # openpi's unpack_array also takes the str-keyed form.
    assert np.array_equal(unpackb(msgpack.packb({'__ndarray__': True, 'data': array.tobytes(),
                                                 'dtype': '<f4', 'shape': [2, 2]})), array)


# The cases of openpi's own msgpack_numpy_test.py (main, test_pack_unpack).
@pytest.mark.parametrize('value', [
    1, 1.0, 'hello', np.bool_(True), np.array([1, 2, 3])[0], np.str_('asdf'), [1, 2, 3],
    {'key': 'value'}, {'key': [1, 2, 3]}, np.array(1.0), np.array([1, 2, 3], dtype=np.int32),
    np.array(['asdf', 'qwer']), np.array([True, False]),
    np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32),
    np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], dtype=np.int16),
    np.array([np.nan, np.inf, -np.inf]),
    {'arr': np.array([1, 2, 3]), 'nested': {'arr': np.array([4, 5, 6])}},
    [np.array([1, 2]), np.array([3, 4])], np.zeros((3, 4, 5), dtype=np.float32),
])
def test_round_trips_openpis_test_cases(value):
    def same(expected, actual):
        if isinstance(expected, dict):
            assert expected.keys() == actual.keys()
            return all(same(expected[k], actual[k]) for k in expected)
        if isinstance(expected, list):
            return all(same(e, a) for e, a in zip(expected, actual, strict=True))
        if isinstance(expected, np.ndarray):
            assert expected.shape == actual.shape and expected.dtype == actual.dtype
            assert np.array_equal(expected, actual, equal_nan=expected.dtype.kind == 'f')
            return True
        assert expected == actual and type(np.asarray(expected).dtype) is type(
            np.asarray(actual).dtype)
        return True
    assert same(value, unpackb(packb(value)))


@pytest.mark.parametrize('data', [
    b'\xc1',  # never used in msgpack
    msgpack.packb({b'__ndarray__': True, b'data': b'abc', b'dtype': '<f4', b'shape': [1]}),
    msgpack.packb({b'__ndarray__': True, b'data': b'12345678', b'dtype': '|O', b'shape': [1]}),
    msgpack.packb({b'__ndarray__': True, b'data': b'', b'dtype': 'nonsense', b'shape': [0]}),
])
def test_bytes_that_are_not_openpis_format_are_refused(data):
    with pytest.raises(CodecError):
        unpackb(data)


def test_object_and_complex_arrays_are_never_sent():
    for value in (np.array([object()]), np.array([1j])):
        with pytest.raises(CodecError):
            packb(value)


# -- through a real gateway -----------------------------------------------------------------

@pytest.fixture(scope='module')
def server():
    with OpenpiServerProcess() as process:
        yield process


@pytest.fixture(scope='module')
def gateway(server):
    with GatewayProcess(['--openpi', server.url], keys={KEY: 1000}) as gw:
        yield gw


def predict(gateway, obs, **kwargs):
    with sai.connect('pi05-droid', api_key=KEY, base_url=gateway.base_url) as policy:
        return policy.predict(obs, **kwargs)


def act(gateway, instruction, **proprioception):
    obs = observation(START, instruction=instruction).to_wire()
    obs['proprioception'].update(proprioception)
    return httpx.post(f'{gateway.base_url}/v1/act', headers=AUTH, timeout=30,
                      json={'model': 'pi05-droid', 'observation': obs})


def test_the_client_gets_the_chunk_the_openpi_server_computed(gateway):
    prediction = predict(gateway, observation(START))
    chunk = prediction.action_chunk
    assert (chunk.action_space, chunk.control_frequency_hz, chunk.action_dim) == \
        ('joint_velocity', HZ, 8)
    expected = reach_chunk(START)
    assert np.allclose(np.array(chunk.steps), expected, atol=1e-6)
    # Played at 15 Hz, the velocities take the arm toward the server's target.
    end = START + np.cumsum(np.array(chunk.steps)[:, :7] / HZ, axis=0)[-1]
    assert np.linalg.norm(TARGET - end) < np.linalg.norm(TARGET - START) - 0.3
    models = httpx.get(f'{gateway.base_url}/v1/models').json()['data']
    assert [m['id'].rsplit('/', 1)[-1] for m in models] == ['pi05-droid']


def test_a_shorter_horizon_is_the_servers_first_rows(gateway):
    with sai.connect('pi05-droid', api_key=KEY, base_url=gateway.base_url) as policy:
        chunk = policy.predict(observation(START), action_horizon=6).action_chunk
    assert np.allclose(np.array(chunk.steps), reach_chunk(START)[:6], atol=1e-6)


def test_a_model_the_server_is_not_is_404(gateway):
    response = httpx.post(f'{gateway.base_url}/v1/act', headers=AUTH, timeout=30, json={
        'model': 'lingbot-va-5b', 'observation': observation(START).to_wire()})
    assert response.status_code == 404, response.text


@pytest.mark.parametrize('fault,says', [
    ('raise', 'RuntimeError: the model fell over'),  # the traceback openpi sends, then 1011
    ('no-actions', "without 'actions'"),
    ('short', 'of shape (4, 8)'),
    ('nan', 'non-finite'),
])
def test_a_bad_or_failed_answer_is_502_and_the_next_call_is_served(gateway, fault, says):
    before = httpx.get(f'{gateway.base_url}/v1/_local/stats').json()['keys']
    response = act(gateway, f'fault:{fault}')
    assert response.status_code == 502, response.text
    assert says in response.json()['detail']
    assert httpx.get(f'{gateway.base_url}/v1/_local/stats').json()['keys'] == before
    assert act(gateway, 'reach').status_code == 200


def test_a_part_the_model_needs_and_the_request_lacks_is_422(gateway):
    obs = observation(START).to_wire()
    del obs['proprioception']['gripper']
    response = httpx.post(f'{gateway.base_url}/v1/act', headers=AUTH, timeout=30,
                          json={'model': 'pi05-droid', 'observation': obs})
    assert response.status_code == 422
    assert 'observation.proprioception.gripper' in response.json()['detail']


def test_a_lost_server_is_a_typed_transient_error_then_it_recovers(server, gateway):
    assert act(gateway, 'reach').status_code == 200
    pid = gateway.pid
    server.kill()
    with pytest.raises(sai.Unavailable) as lost:
        predict(gateway, observation(START))
    assert lost.value.status == 503 and not lost.value.warming
    assert 'openpi server ws://127.0.0.1' in str(lost.value)
    server.start()
    chunk = predict(gateway, observation(START)).action_chunk
    assert np.allclose(np.array(chunk.steps), reach_chunk(START), atol=1e-6)
    assert gateway.pid == pid and gateway.running()


def test_a_bad_url_or_a_simulated_clock_is_refused_at_start():
    from sequence_ai_ros.gateway.config import GatewayConfig
    from sequence_ai_ros.gateway.openpi.policy import openpi_factory
    with pytest.raises(ValueError, match='ws://host:port'):
        openpi_factory('http://gpu-box:8000')
    with pytest.raises(ValueError, match='real time'):
        GatewayConfig(openpi='ws://gpu-box:8000', time_scale=0.5)
    served = GatewayConfig(openpi='ws://gpu-box:8000')
    assert (served.start_warm, served.latency_median_s, served.cold_start_s) == (True, 0.0, 0.0)
