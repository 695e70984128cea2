"""Keys and credit: 401, 402, free failures, masking, and keys never echoed."""

from fixtures_gateway import act_body, AUTH, MAIN_KEY, TEST_KEYS, TWO_CREDIT_KEY
import httpx
import pytest
from sequence_ai_ros.contract.key_masking import mask_key
from sequence_ai_ros.gateway.errors import ApiError
from sequence_ai_ros.gateway.keys import KeyLedger, load_keys, load_robot_keys


@pytest.mark.parametrize('headers, fragment', [
    ({}, 'missing API key'),
    ({'Authorization': 'Bearer seq_not_a_configured_key_999'}, 'invalid API key'),
    ({'Authorization': f'Token {MAIN_KEY}'}, 'malformed'),
    ({'Authorization': 'Bearer'}, 'malformed'),
    ({'Authorization': f'Bearer {MAIN_KEY} extra'}, 'malformed'),
])
def test_401_with_a_string_detail_and_no_key_echo(gateway, headers, fragment):
    response = httpx.post(gateway.base_url + '/v1/act', json=act_body(), headers=headers)
    assert response.status_code == 401
    detail = response.json()['detail']
    assert isinstance(detail, str) and fragment in detail
    assert response.headers['www-authenticate'].startswith('Bearer')
    for secret in (MAIN_KEY, 'seq_not_a_configured_key_999'):
        assert secret not in response.text


def test_bearer_scheme_is_case_insensitive(gateway):
    response = httpx.post(gateway.base_url + '/v1/act', json=act_body(),
                          headers={'Authorization': f'bearer {MAIN_KEY}'})
    assert response.status_code == 200


def test_credit_runs_out_and_failures_are_free(gateway):
    headers = {'Authorization': f'Bearer {TWO_CREDIT_KEY}'}
    with httpx.Client(base_url=gateway.base_url, headers=headers) as client:
        bad = act_body()
        bad['observation']['proprioception']['joint_positions'] = [0.0] * 6
        assert client.post('/v1/act', json=bad).status_code == 422
        assert client.post('/v1/act', json={'model': 'no-such-model'}).status_code == 404
        assert [client.post('/v1/act', json=act_body()).status_code for _ in range(2)] == [
            200, 200]
        refused = client.post('/v1/act', json=act_body())
    assert refused.status_code == 402
    assert isinstance(refused.json()['detail'], str)
    assert 'credit' in refused.json()['detail'] and TWO_CREDIT_KEY not in refused.text
    assert gateway.stats()['keys'][mask_key(TWO_CREDIT_KEY, 2)] == {'acts': 2, 'credit_left': 0}


def test_stats_mask_keys_and_logs_never_hold_them(gateway, http):
    assert http.post('/v1/act', json=act_body()).status_code == 200
    stats = gateway.stats()
    masked = mask_key(MAIN_KEY, 1)
    assert masked == 'seq_…0001'
    assert stats['keys'][masked]['acts'] >= 1
    text = str(stats) + gateway.log()
    for key in TEST_KEYS:
        assert key not in text


def test_auth_disabled_accepts_any_or_no_header(open_gateway):
    for headers in ({}, AUTH, {'Authorization': 'garbage'}):
        response = httpx.post(open_gateway.base_url + '/v1/act', json=act_body(),
                              headers=headers)
        assert response.status_code == 200


def test_load_keys_from_file_and_environment(tmp_path):
    keys_file = tmp_path / 'keys'
    keys_file.write_text('# robots\nseq_alpha_1 100\n\nseq_beta_2 5  # lab arm\n')
    env = {'SEQUENCE_AI_ROS_GATEWAY_KEYS': 'seq_beta_2=7, seq_gamma_3=0'}
    assert load_keys(str(keys_file), env) == {'seq_alpha_1': 100, 'seq_beta_2': 7,
                                              'seq_gamma_3': 0}
    assert load_keys(None, {}) == {}


def test_a_robot_key_names_its_deployment_in_the_file_and_the_environment(tmp_path):
    keys_file = tmp_path / 'keys'
    keys_file.write_text('seq_robot_arm_1 100 pi05-droid\nseq_alpha_1 5\n')
    env = {'SEQUENCE_AI_ROS_GATEWAY_KEYS': 'seq_robot_arm_2=3@lingbot-va-5b'}
    assert load_keys(str(keys_file), env) == {'seq_robot_arm_1': 100, 'seq_alpha_1': 5,
                                              'seq_robot_arm_2': 3}
    assert load_robot_keys(str(keys_file), env) == {'seq_robot_arm_1': 'pi05-droid',
                                                    'seq_robot_arm_2': 'lingbot-va-5b'}
    for spec in ('seq_robot_arm_3=3', 'seq_alpha_2=3@pi05-droid'):
        with pytest.raises(ValueError, match='entry 1'):
            load_keys(None, {'SEQUENCE_AI_ROS_GATEWAY_KEYS': spec})
    ledger = KeyLedger({'seq_robot_arm_1': 1}, {'seq_robot_arm_1': 'pi05-droid'})
    ledger.check_deployment('seq_robot_arm_1', 'pi05-droid')
    ledger.check_deployment(None, 'lingbot-va-5b')
    with pytest.raises(ApiError) as refused:
        ledger.check_deployment('seq_robot_arm_1', 'lingbot-va-5b')
    assert refused.value.status == 403 and 'seq_robot' not in refused.value.detail


@pytest.mark.parametrize('text', ['seq_ok 1 2\n', 'seq_robot_ok 1\n', 'nokey 5\n',
                                  'seq_ok many\n', 'seq_ok -1\n', '# only a comment\n'])
def test_bad_keys_file_names_the_line_not_the_key(tmp_path, text):
    keys_file = tmp_path / 'keys'
    keys_file.write_text(text)
    with pytest.raises(ValueError) as caught:
        load_keys(str(keys_file), {})
    assert str(keys_file) in str(caught.value)
    assert 'nokey' not in str(caught.value) and 'seq_ok' not in str(caught.value)


def test_ledger_reserves_commits_and_refunds():
    ledger = KeyLedger({'seq_only_key_000001': 1})
    key = ledger.authenticate('Bearer seq_only_key_000001')
    held = ledger.reserve(key)
    with pytest.raises(Exception) as caught:
        ledger.reserve(key)  # the only unit is held by the call in flight
    assert getattr(caught.value, 'status', None) == 402
    ledger.refund(held)
    ledger.commit(ledger.reserve(key))
    assert ledger.snapshot() == {'seq_…0001': {'acts': 1, 'credit_left': 0}}
