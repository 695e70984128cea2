"""/diagnostics content: levels tell an operator whether to act, messages say what to do."""

from dataclasses import fields, replace
import re

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
import pytest
from sequence_ai_ros.client import (
    AuthError,
    InvalidRequest,
    MalformedResponse,
    OutOfCredit,
    SequencesError,
    Unavailable,
)
from sequence_ai_ros.node.diagnostics import (
    build_statuses,
    diagnostic_array,
    error_kind,
    Health,
)

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR
NODE = 'policy_node'
HW = 'droid_arm'
KEY_LIKE = re.compile(r'seq_[A-Za-z0-9_\-]{4,}|bearer\s+\S', re.IGNORECASE)

RUNNING = Health(
    node_state='active', episode_state='running', model='pi05-droid',
    base_url='https://api.generalsequences.com', gateway_reachable=True,
    latency_p50_s=0.793, latency_p95_s=0.951, server_inference_p50_ms=640.0, requests=12,
    buffered_s=0.533, action_space='joint_velocity', join_mode='append', actions=120, chunks=8,
    max_actions=300, input_ages={'/joint_states': 0.012, '/camera/exterior_1': 0.04},
    input_timeouts={'/joint_states': 0.5, '/camera/exterior_1': 1.0}, gate_open=True)


def statuses(health):
    return {s.name.split(': ', 1)[1]: s for s in build_statuses(health, NODE, HW)}


def values(status):
    return {kv.key: kv.value for kv in status.values}


def test_four_named_statuses_with_hardware_id_and_string_values():
    result = build_statuses(RUNNING, NODE, HW)
    assert [s.name for s in result] == [f'{NODE}: gateway', f'{NODE}: buffer',
                                        f'{NODE}: inputs', f'{NODE}: episode']
    for status in result:
        assert status.hardware_id == HW
        assert status.values and all(isinstance(kv.value, str) for kv in status.values)


def test_healthy_running_node_is_all_ok():
    s = statuses(RUNNING)
    assert {name: st.level for name, st in s.items()} == dict.fromkeys(s, OK)
    assert s['gateway'].message == 'answering: latency p50 0.793 s, p95 0.951 s'
    assert s['episode'].message == 'running: 120/300 actions'
    assert s['buffer'].message == '0.53 s buffered, no underruns'
    assert s['inputs'].message == 'all inputs fresh'


def test_numbers_are_formatted_and_none_is_na():
    s = statuses(RUNNING)
    gateway = values(s['gateway'])
    assert gateway['latency p50 (s)'] == '0.793'
    assert gateway['server inference p50 (ms)'] == '640.0'
    assert gateway['warming ETA (s)'] == 'n/a'
    assert gateway['requests'] == '12'
    assert gateway['reachable'] == 'yes'
    assert values(s['buffer'])['max seam jump'] == 'n/a'
    assert values(s['buffer'])['buffered (s)'] == '0.533'
    assert values(s['inputs'])['/joint_states'] == '0.012 s old (timeout 0.500 s)'
    assert values(s['episode'])['actions'] == '120'
    jump = values(statuses(replace(RUNNING, max_seam_jump=0.01234))['buffer'])['max seam jump']
    assert jump == '0.0123'


@pytest.mark.parametrize('kind, text', [('auth', 'check the API key'),
                                        ('credit', 'top up credit'),
                                        ('invalid', 'check model and cameras')])
def test_gateway_error_kinds_that_need_a_person(kind, text):
    health = replace(RUNNING, last_error='401 key revoked', last_error_kind=kind)
    gateway = statuses(health)['gateway']
    assert gateway.level == ERROR
    assert text in gateway.message and '401 key revoked' in gateway.message
    assert values(gateway)['last error kind'] == kind


def test_gateway_warming_warns_with_eta():
    health = replace(RUNNING, episode_state='warming', warming_eta_s=118.0,
                     last_error='warming up', last_error_kind='warming', latency_p50_s=None)
    s = statuses(health)
    assert s['gateway'].level == WARN
    assert s['gateway'].message == 'model pi05-droid is warming up: ready in ~118 s'
    assert values(s['gateway'])['warming ETA (s)'] == '118'
    assert s['episode'].level == OK  # the gateway status carries the warning
    no_eta = replace(health, warming_eta_s=None)
    assert 'no ETA given' in statuses(no_eta)['gateway'].message


@pytest.mark.parametrize('kind', ['unavailable', 'malformed', 'other'])
def test_gateway_transient_errors_warn(kind):
    gateway = statuses(replace(RUNNING, last_error='504 timeout', last_error_kind=kind))['gateway']
    assert gateway.level == WARN
    assert kind in gateway.message and '504 timeout' in gateway.message


def test_gateway_unreachable_and_not_yet_contacted():
    assert statuses(replace(RUNNING, gateway_reachable=False))['gateway'].level == WARN
    fresh = statuses(Health())['gateway']
    assert (fresh.level, fresh.message) == (OK, 'not configured')
    inactive = statuses(Health(node_state='inactive'))['gateway']
    assert (inactive.level, inactive.message) == (OK, 'no request yet')


def test_buffer_warns_on_underruns_with_count_and_seconds():
    health = replace(RUNNING, underruns=3, underrun_s=1.2, longest_underrun_s=0.6)
    buffer = statuses(health)['buffer']
    assert buffer.level == WARN
    assert '3 underruns, 1.20 s without actions (longest 0.60 s)' in buffer.message
    assert values(buffer)['underruns'] == '3'
    current = statuses(replace(RUNNING, episode_state='underrun', underruns=1))
    assert current['buffer'].message.startswith('in an underrun now')
    assert current['episode'].level == WARN


def test_stale_input_is_an_error_naming_the_topic():
    health = replace(RUNNING, input_ages={'/joint_states': 0.9, '/camera/exterior_1': 0.04})
    inputs = statuses(health)['inputs']
    assert inputs.level == ERROR
    assert '/joint_states is 0.900 s old (timeout 0.500 s)' in inputs.message


def test_never_received_input_is_an_error():
    health = replace(RUNNING, input_ages={'/joint_states': 0.01})
    inputs = statuses(health)['inputs']
    assert inputs.level == ERROR
    assert 'no message on /camera/exterior_1 yet' in inputs.message
    assert values(inputs)['/camera/exterior_1'] == 'never received (timeout 1.000 s)'


def test_inputs_are_ok_when_not_active():
    health = replace(RUNNING, node_state='inactive', episode_state='idle', input_ages={})
    inputs = statuses(health)['inputs']
    assert (inputs.level, inputs.message) == (OK, 'inactive: inputs not checked')


def test_closed_safety_gate_warns():
    inputs = statuses(replace(RUNNING, gate_open=False))['inputs']
    assert inputs.level == WARN and 'safety gate closed' in inputs.message
    assert values(inputs)['safety gate open'] == 'no'


@pytest.mark.parametrize('outcome, level, text', [
    ('completed', OK, 'completed: max_actions reached'),
    ('stopped', OK, 'stopped: max_actions reached'),
    ('safety', ERROR, 'ended by a safety check: max_actions reached'),
    ('error', ERROR, 'ended by an error: max_actions reached'),
])
def test_episode_end_levels(outcome, level, text):
    health = replace(RUNNING, episode_state='ended', episode_outcome=outcome,
                     episode_reason='max_actions reached')
    episode = statuses(health)['episode']
    assert (episode.level, episode.message) == (level, text)
    assert values(episode)['outcome'] == outcome


def test_episode_ended_by_a_safety_failure_explains():
    reason = 'joint 1 (j2) would move 0.2500 in one step'
    health = replace(RUNNING, episode_state='ended', episode_outcome='safety',
                     episode_reason=reason, holds=1, last_hold_reason=reason)
    episode = statuses(health)['episode']
    assert episode.level == ERROR and reason in episode.message
    assert values(episode)['holds'] == '1'


def test_episode_holding_warns_with_the_hold_reason():
    health = replace(RUNNING, episode_state='holding', last_hold_reason='safety gate closed')
    episode = statuses(health)['episode']
    assert (episode.level, episode.message) == (WARN, 'holding: safety gate closed')


@pytest.mark.parametrize('state', ['idle', 'starting', 'warming'])
def test_episode_waiting_states_are_ok(state):
    assert statuses(replace(RUNNING, episode_state=state))['episode'].level == OK


def test_unknown_episode_state_warns():
    assert statuses(replace(RUNNING, episode_state='dancing'))['episode'].level == WARN


def test_no_value_looks_like_an_api_key():
    # Health never holds the key; with ordinary values nothing key-shaped may appear.
    scenarios = [RUNNING, Health(), replace(RUNNING, last_error_kind='auth',
                                            last_error='invalid API key')]
    for health in scenarios:
        for status in build_statuses(health, NODE, HW):
            texts = [status.message] + [kv.key + kv.value for kv in status.values]
            assert not any(KEY_LIKE.search(text) for text in texts), status


def test_key_shaped_strings_are_redacted_anyway():
    secret = 'seq_live_abcdefghijklmnop1234'
    health = replace(RUNNING, last_error_kind='auth',
                     last_error=f'rejected {secret}; Authorization: Bearer tok_987654321',
                     base_url='https://user:hunter2@gw.example.com:8443/api?key=abc')
    for status in build_statuses(health, NODE, HW):
        texts = [status.message] + [kv.value for kv in status.values]
        assert not any(secret in t or 'tok_987654321' in t or 'hunter2' in t or 'key=abc' in t
                       for t in texts), status
    assert values(statuses(health)['gateway'])['base_url'] == 'https://gw.example.com:8443/api'


def test_health_has_no_key_field():
    assert not [f.name for f in fields(Health) if 'key' in f.name or 'token' in f.name]


@pytest.mark.parametrize('error, kind', [
    (AuthError('no'), 'auth'),
    (OutOfCredit('no'), 'credit'),
    (InvalidRequest('no'), 'invalid'),
    (Unavailable('no', warming=True, retry_after_s=5.0), 'warming'),
    (Unavailable('no'), 'unavailable'),
    (MalformedResponse('no'), 'malformed'),
    (SequencesError('500'), 'other'),
    (RuntimeError('boom'), 'other'),
])
def test_error_kind(error, kind):
    assert error_kind(error) == kind


def test_diagnostic_array_is_stamped():
    stamp = Time(sec=1732900000, nanosec=5)
    array = diagnostic_array(build_statuses(RUNNING, NODE, HW), stamp)
    assert array.header.stamp == stamp
    assert [s.name for s in array.status][0] == f'{NODE}: gateway'
    assert len(array.status) == 4


def test_the_protocol_the_worker_readiness_and_a_lost_seat_are_shown():
    waiting = statuses(replace(RUNNING, episode_state='idle', node_state='unconfigured',
                               latency_p50_s=None, protocol='direct',
                               readiness='waiting: status queued, place in line 2'))['gateway']
    values = {kv.key: kv.value for kv in waiting.values}
    assert waiting.level == WARN and 'place in line 2' in waiting.message
    assert values['protocol'] == 'direct' and values['seat'] == 'held'
    lost = statuses(replace(RUNNING, protocol='direct', readiness='ready',
                            seat_lost=True))['gateway']
    assert lost.level == ERROR and 'seat' in lost.message and 'holds' in lost.message
    v1 = statuses(replace(RUNNING, protocol='v1'))['gateway']
    assert v1.level == OK and {kv.key: kv.value for kv in v1.values}['seat'] == 'n/a'
