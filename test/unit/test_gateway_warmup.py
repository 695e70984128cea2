"""
Cold workers: 503 warming_up at once, warm after the cold start, cold again after idling.

The cold gateway runs at --time-scale 0.01 with a 50 model-second cold start (0.5 s) and a
40 model-second idle timeout (0.4 s).
"""

import time

from fixtures_gateway import act_body, AUTH, MAIN_KEY, PREFIX
import httpx
from sequence_ai_ros.contract.key_masking import mask_key
from sequence_ai_ros.gateway.errors import WarmingUp
from sequence_ai_ros.gateway.warmth import Warmth

COLD_START_S = 0.5
IDLE_COLD_S = 0.4


def _warming(response: httpx.Response) -> dict:
    assert response.status_code == 503, response.text
    detail = response.json()['detail']
    assert set(detail) == {'status', 'retry_after_s', 'warming_job_id', 'message'}
    assert detail['status'] == 'warming_up'
    assert detail['warming_job_id'].startswith('warm_')
    assert isinstance(detail['retry_after_s'], float) and isinstance(detail['message'], str)
    assert response.headers['retry-after'] == '1'  # ceil of < 1 s, never 0
    return detail


def test_cold_model_timeline(cold_gateway):
    name = 'lingbot-va-5b'
    with httpx.Client(base_url=cold_gateway.base_url, headers=AUTH) as client:
        started = time.monotonic()
        first = client.post('/v1/act', json=act_body(name))
        assert time.monotonic() - started < 0.25  # answered at once, not after loading
        detail = _warming(first)
        assert 0.3 < detail['retry_after_s'] <= COLD_START_S
        assert cold_gateway.stats()['models'][PREFIX + name]['state'] == 'warming'

        time.sleep(0.1)
        again = _warming(client.post('/v1/act', json=act_body(name)))
        assert again['warming_job_id'] == detail['warming_job_id']
        assert again['retry_after_s'] < detail['retry_after_s'] - 0.05

        # Other models stay cold until asked for.
        assert cold_gateway.stats()['models'][PREFIX + 'pi05-droid']['state'] == 'cold'

        time.sleep(again['retry_after_s'] + 0.05)
        assert client.post('/v1/act', json=act_body(name)).status_code == 200
        assert cold_gateway.stats()['models'][PREFIX + name]['state'] == 'warm'

        # Busy for longer than the idle timeout: stays warm.
        for _ in range(6):
            time.sleep(IDLE_COLD_S / 4)
            assert client.post('/v1/act', json=act_body(name)).status_code == 200

        time.sleep(IDLE_COLD_S + 0.15)
        assert cold_gateway.stats()['models'][PREFIX + name]['state'] == 'cold'
        rewarm = _warming(client.post('/v1/act', json=act_body(name)))
        assert rewarm['warming_job_id'] != detail['warming_job_id']
    stats = cold_gateway.stats()
    assert stats['models'][PREFIX + name]['warmups'] == 2
    assert stats['acts'][PREFIX + name] == {'503': 3, '200': 7}
    # 503s are free: only the seven answered calls were charged.
    assert stats['keys'][mask_key(MAIN_KEY, 1)] == {'acts': 7, 'credit_left': 993}


def test_invalid_request_does_not_wake_a_cold_model(cold_gateway):
    body = act_body('cosmos3-edge-policy-droid')
    body['observation']['proprioception']['joint_positions'] = [0.0]
    response = httpx.post(cold_gateway.base_url + '/v1/act', json=body, headers=AUTH)
    assert response.status_code == 422
    state = cold_gateway.stats()['models'][PREFIX + 'cosmos3-edge-policy-droid']
    assert state['state'] == 'cold' and state['warmups'] == 0


def test_retry_after_header_is_whole_seconds_rounded_up():
    assert WarmingUp('m', 2.2, 'warm_x').headers['Retry-After'] == '3'
    assert WarmingUp('m', 0.01, 'warm_x').headers['Retry-After'] == '1'
    assert WarmingUp('m', 118.0, 'warm_x').headers['Retry-After'] == '118'


def test_warmth_with_a_fake_clock():
    now = [0.0]
    warmth = Warmth({'m': 100.0}, idle_cold_s=900.0, start_warm=False, clock=lambda: now[0])
    try:
        warmth.admit('m')
        raise AssertionError('a cold model must not be admitted')
    except WarmingUp as warming:
        assert warming.retry_after_s == 100.0
    now[0] = 100.0
    warmth.admit('m')
    warmth.begin('m')
    now[0] = 2000.0  # a call in flight for ages is not idling
    warmth.admit('m')
    warmth.end('m')
    now[0] = 2900.5
    assert warmth.snapshot()['m']['state'] == 'cold'
