"""
Real-time chunking against the local gateway as a real server: its options, its policies.

The gateway checks the RTC options of /v1/act (422 naming the field), passes them to the
policy plug-in, and reports the prefix used only when the policy honours it; the reference
policies return the prefix's frozen rows within a tenth of their noise and plan the rest from
where it ends, ramping into their plan under RTC's exponential soft mask. The client's
run(join_mode='rtc') through it is test/realtime/test_client_rtc.py.
"""

from fixtures_gateway import (
    act_body,
    gateway_fixture,
    integrate,
    MODELS,
    raw_json,
    TEST_DIR,
    TIME_SCALE,
)
import httpx
import numpy as np
import pytest
from sequence_ai_ros.client import PREFIX_TOLERANCE
from sequence_ai_ros.gateway.catalogue import load_catalogue
from sequence_ai_ros.gateway.prefix import prefix_weights
from sequence_ai_ros.world import arm_model

HOME = arm_model.HOME
PROFILES = {p.name: p for p in load_catalogue().profiles}
RUN_KEY = 'seq_rtc_run_key_for_tests_000001'


def _detail(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    return response.json()['detail']


def _prefix(rows: int = 3, dim: int = 8, value: float = 0.0) -> list[list[float]]:
    return [[value] * dim for _ in range(rows)]


# -- validation --------------------------------------------------------------------------------

@pytest.mark.parametrize('options, fragment', [
    ({'action_prefix': 'x', 'inference_delay_steps': 1},
     'action_prefix: expected 1 to 15 rows (action_horizon) of 8 numbers, got a string'),
    ({'action_prefix': [], 'inference_delay_steps': 0}, 'action_prefix: expected 1 to 15 rows'),
    ({'action_prefix': _prefix(16), 'inference_delay_steps': 1}, 'got 16 rows'),
    ({'action_prefix': [[0.0] * 7], 'inference_delay_steps': 1},
     'action_prefix[0]: expected 8 numbers, got 7'),
    ({'action_prefix': ['x'], 'inference_delay_steps': 1},
     'action_prefix[0]: expected 8 numbers, got a string'),
    ({'action_prefix': [[0.0] * 7 + [True]], 'inference_delay_steps': 1},
     'action_prefix[0][7]: expected a finite number, got a boolean'),
    ({'action_prefix': _prefix()}, 'inference_delay_steps: required with action_prefix'),
    ({'action_prefix': _prefix(), 'inference_delay_steps': -1},
     'inference_delay_steps: expected an integer between 0 and 14, got -1'),
    ({'action_prefix': _prefix(), 'inference_delay_steps': 15},
     'inference_delay_steps: expected an integer between 0 and 14, got 15'),
    ({'action_prefix': _prefix(), 'inference_delay_steps': 1.5},
     'inference_delay_steps: expected an integer between 0 and 14, got a number'),
    ({'action_prefix': _prefix(), 'inference_delay_steps': True}, 'got a boolean'),
    ({'inference_delay_steps': 3}, 'inference_delay_steps: only meaningful with action_prefix'),
    ({'execution_horizon': 3}, 'execution_horizon: only meaningful with action_prefix'),
    ({'action_prefix': _prefix(), 'inference_delay_steps': 3, 'execution_horizon': 2},
     'execution_horizon: expected an integer between 3 and 15, got 2'),
    ({'action_prefix': _prefix(), 'inference_delay_steps': 3, 'execution_horizon': 16},
     'execution_horizon: expected an integer between 3 and 15, got 16'),
    ({'action_prefix': _prefix(), 'inference_delay_steps': 3, 'execution_horizon': 'x'},
     'execution_horizon: expected an integer between 3 and 15, got a string'),
    # Within the horizon the request asks for, not only the model's.
    ({'action_horizon': 5, 'action_prefix': _prefix(6), 'inference_delay_steps': 1},
     'action_prefix: expected 1 to 5 rows'),
    ({'action_horizon': 5, 'action_prefix': _prefix(5), 'inference_delay_steps': 5},
     'inference_delay_steps: expected an integer between 0 and 4, got 5'),
])
def test_422_names_the_rtc_option_at_fault(http, options, fragment):
    assert fragment in _detail(http.post('/v1/act', json=act_body('pi05-droid', **options)))


def test_422_for_a_non_finite_prefix_value(http):
    body = act_body('pi05-droid', action_prefix=_prefix(), inference_delay_steps=2)
    body['action_prefix'][1][2] = float('nan')
    response = http.post('/v1/act', content=raw_json(body),
                         headers={'Content-Type': 'application/json'})
    assert 'action_prefix[1][2]: expected a finite number, got NaN' in _detail(response)


def test_a_valid_prefix_is_reported_and_not_called_unused(http):
    body = act_body('pi05-droid', action_prefix=_prefix(4), inference_delay_steps=3)
    answer = http.post('/v1/act', json=body).json()
    assert answer['rtc'] == {'prefix_steps': 4, 'inference_delay_steps': 3,
                             'execution_horizon': 3}
    assert not any('not used' in w for w in answer['warnings'])


# -- the reference policies honour the prefix --------------------------------------------------

def _rows(answer: dict) -> np.ndarray:
    return np.array([step['values'] for step in answer['action_chunk']['steps']])


def _step_gap(answer: dict, prefix: np.ndarray) -> float:
    """Largest gap, as a position over one step (rates times the served period)."""
    chunk = answer['action_chunk']
    gap = np.abs(_rows(answer)[:len(prefix)] - prefix).max()
    return float(gap / chunk['control_frequency_hz'] if chunk['action_space'] == 'joint_velocity'
                 else gap)


@pytest.mark.parametrize('name', MODELS)
def test_the_chunk_starts_with_the_prefix(http, name):
    first = _rows(http.post('/v1/act', json=act_body(name, seed=1)).json())
    prefix = first[2:7]
    answer = http.post('/v1/act', json=act_body(
        name, seed=2, action_prefix=prefix.tolist(), inference_delay_steps=5,
        execution_horizon=9)).json()
    assert answer['rtc'] == {'prefix_steps': 5, 'inference_delay_steps': 5,
                             'execution_horizon': 9}
    assert _rows(answer).shape == first.shape
    # Within a tenth of the sampling noise (0.003 rad): far inside the client's tolerance.
    assert _step_gap(answer, prefix) < 0.002 < PREFIX_TOLERANCE


def _standing_prefix(name: str, offset: float, steps: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Make a prefix that takes joint 1 `offset` rad away from HOME, in the profile's space."""
    profile = PROFILES[name]
    path = HOME + np.outer(np.arange(1, steps + 1) / steps, np.eye(7)[1] * offset)
    targets = np.vstack([HOME, path])
    if profile.action_space in ('joint_absolute', 'joint_position'):
        joints = targets[1:]
    else:
        joints = np.diff(targets, axis=0)
        if profile.action_space == 'joint_velocity':
            joints = joints * profile.scaled(TIME_SCALE).control_hz  # per served second
    return np.column_stack([joints, np.zeros(steps)]), targets[-1]


@pytest.mark.parametrize('name', MODELS)
def test_the_rest_is_planned_from_where_the_prefix_ends(http, name):
    prefix, end = _standing_prefix(name, 0.12)
    answer = http.post('/v1/act', json=act_body(
        name, seed=3, action_prefix=prefix.tolist(), inference_delay_steps=len(prefix))).json()
    joints = integrate(answer['action_chunk'], HOME)
    # Where the prefix leaves the arm, 0.12 rad from where the observation saw it...
    assert np.allclose(joints[len(prefix)], end, atol=0.002)
    # ... the chunk goes on from: its next position is within one capped step (0.6 rad/s of
    # model time, plus the noise) of it.
    next_step = np.abs(joints[len(prefix) + 1] - end).max()
    assert next_step <= 0.6 / PROFILES[name].native_hz + 0.02 < 0.12


@pytest.mark.parametrize('name', MODELS)
def test_the_execution_horizon_ramps_velocity_into_the_plan(http, name):
    # A prefix that moves joint 1 fast, then a plan that does not: the soft mask carries the
    # prefix's velocity on, so the step change at the join is a fraction of the hard join's.
    prefix, _ = _standing_prefix(name, 0.12)
    jumps = {}
    for horizon in (len(prefix), len(prefix) + 6):
        answer = http.post('/v1/act', json=act_body(
            name, seed=4, action_prefix=prefix.tolist(), inference_delay_steps=len(prefix),
            execution_horizon=horizon)).json()
        joints = integrate(answer['action_chunk'], HOME)
        steps = np.diff(joints, axis=0)
        jumps[horizon] = np.abs(steps[len(prefix)] - steps[len(prefix) - 1]).max()
    weight = prefix_weights(len(prefix), len(prefix) + 6, 20)[len(prefix)]
    assert 0.6 < weight < 0.7  # the exp schedule's first weight past 4 frozen steps, s = 10
    assert jumps[len(prefix) + 6] < 0.5 * jumps[len(prefix)]


def test_soft_mask_weights_are_kinetix_exp_schedule():
    # RTC's Eq. 5 with the exp schedule: 1 on [0, d), c * (e^c - 1) / (e - 1) with
    # c = (s - i) / (s - d + 1) on [d, s), 0 from s on.
    weights = prefix_weights(2, 6, 10)
    linear = np.array([4, 3, 2, 1]) / 5
    assert np.allclose(weights, [1, 1, *(linear * np.expm1(linear) / (np.e - 1)), 0, 0, 0, 0])
    assert np.allclose(prefix_weights(3, 3, 5), [1, 1, 1, 0, 0])


# -- plug-ins ------------------------------------------------------------------------------------

echo_gateway = gateway_fixture(
    ['--time-scale', '0.02', '--start-warm', '--policy', 'rtc_plugins:echo'],
    name='echo_gateway', import_paths=[TEST_DIR])
ignoring_gateway = gateway_fixture(
    ['--time-scale', '0.02', '--start-warm', '--policy', 'rtc_plugins:ignoring'],
    name='ignoring_gateway', import_paths=[TEST_DIR], keys={RUN_KEY: 100000})


def test_a_plugin_gets_the_checked_options_and_its_answer_reports_them(echo_gateway):
    prefix = _prefix(3, value=0.25)
    answer = httpx.post(echo_gateway.base_url + '/v1/act', timeout=10.0, json=act_body(
        'pi05-droid', action_prefix=prefix, inference_delay_steps=2)).json()
    assert answer['rtc'] == {'prefix_steps': 3, 'inference_delay_steps': 2,
                             'execution_horizon': 2}
    seen = answer['warnings'][-1]
    assert '"action_prefix": "ndarray"' in seen and '"prefix_shape": [3, 8]' in seen
    assert '"inference_delay_steps": "int"' in seen and '"execution_horizon": "int"' in seen
    assert np.allclose(_rows(answer)[:3], 0.25)


def test_a_plugin_that_does_not_honour_prefixes_is_not_reported_as_using_one(ignoring_gateway):
    answer = httpx.post(ignoring_gateway.base_url + '/v1/act', timeout=10.0,
                        headers={'Authorization': f'Bearer {RUN_KEY}'}, json=act_body(
                            'pi05-droid', action_prefix=_prefix(), inference_delay_steps=2))
    body = answer.json()
    assert answer.status_code == 200 and 'rtc' not in body
    assert any('does not honour real-time-chunking prefixes' in w for w in body['warnings'])
