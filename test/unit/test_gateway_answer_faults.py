"""
Canned answers from the gateway itself (POST /v1/_local/faults), on both fronts.

What a proxy can do to plain HTTP but never to the worker's pinned TLS: the next n acts (v1
/v1/act, or the worker's /act) or connects answered with a given status and body instead of
being served. Checked with plain httpx and with the project's client, against a real gateway.
"""

import base64
import json

from fixtures_gateway import act_body, AUTH, MAIN_KEY, TEST_KEYS, TIME_SCALE
import httpx
from observations import observation
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.contract.key_masking import mask_key
from sequence_ai_ros.gateway.process import GatewayProcess

OBS = observation()
UPSTREAM = {'detail': 'upstream worker lost', 'code': 'upstream_error', 'retryable': True,
            'retry_after_s': None, 'request_id': 'r-canned01', 'hint': None, 'details': {}}


@pytest.fixture(scope='module')
def gateway():
    with GatewayProcess(['--time-scale', str(TIME_SCALE), '--start-warm'],
                        keys=TEST_KEYS) as served:
        yield served


@pytest.fixture
def faults(gateway):
    """Yield a function arming one fault; nothing stays armed after the test."""
    def arm(**fault):
        answer = httpx.post(gateway.base_url + '/v1/_local/faults', json=fault, timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()
    yield arm
    httpx.delete(gateway.base_url + '/v1/_local/faults', timeout=10).raise_for_status()


def sent(gateway, kind='act'):
    return gateway.stats()['answer_faults']['sent'][kind]


def test_the_next_v1_acts_get_the_canned_answer_on_the_same_connection(gateway, faults):
    before, credit = gateway.stats(), gateway.stats()['keys'][mask_key(MAIN_KEY)]['acts']
    armed = faults(next=2, status=502, body='{"detail": "bad gateway"}')
    assert armed['armed']['act'] == 2
    with httpx.Client(base_url=gateway.base_url, headers=AUTH, timeout=10) as client:
        answers = [client.post('/v1/act', json=act_body()) for _ in range(3)]
    assert [a.status_code for a in answers] == [502, 502, 200]
    assert answers[0].json() == {'detail': 'bad gateway'}
    assert answers[2].json()['action_chunk']['steps']
    after = gateway.stats()
    # One kept-alive connection carried all three: the canned answers read the request body.
    assert after['connections'] == before['connections'] + 1
    assert after['requests']['/v1/act'].get('502', 0) == \
        before['requests'].get('/v1/act', {}).get('502', 0) + 2
    assert after['answer_faults'] == {'armed': {'act': 0, 'connect': 0},
                                      'sent': {'act': before['answer_faults']['sent']['act'] + 2,
                                               'connect': 0}}
    # Not served, so not charged.
    assert after['keys'][mask_key(MAIN_KEY)]['acts'] == credit + 1


def connect(gateway):
    return sai.connect('pi05-droid', base_url=gateway.base_url, api_key=MAIN_KEY,
                       protocol='direct')


@pytest.fixture
def policy(gateway):
    with connect(gateway) as opened:
        opened.predict(OBS)  # connected: the faults below reach the worker's /act
        yield opened


def test_a_worker_act_gets_the_canned_coded_error_then_is_served(gateway, faults, policy):
    seen = sent(gateway)
    faults(next=1, status=502, body=json.dumps(UPSTREAM))
    with pytest.raises(sai.SequencesError) as refused:
        policy.predict(OBS)
    assert refused.value.status == 502 and refused.value.code == 'upstream_error'
    assert refused.value.request_id == 'r-canned01'
    assert len(policy.predict(OBS).action_chunk) > 0
    assert sent(gateway) == seen + 1
    assert gateway.stats()['direct']['worker']['requests']['/act'].get('502', 0) >= 1


def test_raw_bytes_make_a_malformed_worker_answer(gateway, faults, policy):
    page = b'<html>captive portal</html>'
    faults(status=200, body_base64=base64.b64encode(page).decode(), content_type='text/html')
    with pytest.raises(sai.MalformedResponse, match='text/html, not JSON'):
        policy.predict(OBS)
    assert len(policy.predict(OBS).action_chunk) > 0


def test_a_canned_connect_refusal_reaches_the_client(gateway, faults):
    refusal = {**UPSTREAM, 'detail': 'API key revoked', 'code': 'unauthenticated',
               'retryable': False}
    faults(on='connect', status=401, body=json.dumps(refusal))
    with connect(gateway) as policy:
        with pytest.raises(sai.AuthError, match='API key revoked'):
            policy.predict(OBS)
        assert policy.direct.connects == 0
        assert len(policy.predict(OBS).action_chunk) > 0  # the next connect is served
    assert sent(gateway, 'connect') >= 1


@pytest.mark.parametrize('fault, says', [
    ({'status': 99}, 'status'), ({'status': 502, 'next': 0}, 'next'),
    ({'status': 502, 'on': 'observe'}, 'on: one of act, connect'),
    ({'status': 502, 'body': {'a': 1}}, 'body'), ({'status': 502, 'body_base64': '%%'},
                                                  'body_base64'),
    ({'status': 502, 'content_type': 'a\nb'}, 'content_type'), ([], 'must be a JSON object')])
def test_a_bad_fault_is_refused_and_nothing_is_armed(gateway, fault, says):
    answer = httpx.post(gateway.base_url + '/v1/_local/faults', json=fault, timeout=10)
    assert answer.status_code == 400 and says in answer.json()['detail'], answer.text
    assert gateway.stats()['answer_faults']['armed'] == {'act': 0, 'connect': 0}


def test_delete_drops_what_is_armed(gateway, faults):
    faults(next=5, status=503)
    cleared = httpx.delete(gateway.base_url + '/v1/_local/faults', timeout=10).json()
    assert cleared['armed'] == {'act': 0, 'connect': 0}
    answer = httpx.post(gateway.base_url + '/v1/act', json=act_body(), headers=AUTH, timeout=10)
    assert answer.status_code == 200
