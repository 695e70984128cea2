"""
run(join_mode='rtc') against the local gateway as a real server, played at control rate.

Each reference profile is driven through real-time chunking (its prefixes honoured, the arm
closing on the disc), and a server whose policy ignores the prefix makes the run fall back once
to the aligned join. The gateway's side of RTC (its checks, the prefix rows, the soft mask) is
test/unit/test_gateway_rtc.py.
"""

import warnings

from fixtures_gateway import gateway_fixture, MODELS, TEST_DIR
import numpy as np
from observations import observation
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.gateway.catalogue import load_catalogue
from sequence_ai_ros.world import arm_model

HOME = arm_model.HOME
PROFILES = {p.name: p for p in load_catalogue().profiles}
RUN_KEY = 'seq_rtc_run_key_for_tests_000001'
# Slow enough that the wall-clock overheads (HTTP, frame decoding) stay well inside the
# shortest chunk (lingbot-vla-v2-6b's 0.5 model s = 0.15 s here), so RTC joins can happen.
RUN_SCALE = 0.3

ignoring_gateway = gateway_fixture(
    ['--time-scale', str(RUN_SCALE), '--start-warm', '--scenario', 'fast', '--policy',
     'rtc_plugins:ignoring'], name='ignoring_gateway', import_paths=[TEST_DIR],
    keys={RUN_KEY: 100000})
fast_gateway = gateway_fixture(
    ['--time-scale', str(RUN_SCALE), '--start-warm', '--scenario', 'fast', '--seed', '5'],
    name='fast_gateway', keys={RUN_KEY: 100000},
    doc="The 'fast' scenario: p99 latency below every profile's chunk, where RTC joins.")


class Arm:
    """Joint positions moved by every action in the profile's space; observed with frames."""

    # Rendered once: the policy reads the disc from the frame, the joints from proprioception.
    FRAMES = observation(HOME, target_xy=(0.55, 0.2)).images

    def __init__(self, name: str) -> None:
        self.profile = PROFILES[name]
        self.q = HOME.copy()
        self.acted = 0

    def observe(self) -> sai.Observation:
        return sai.Observation(images=list(self.FRAMES), instruction='reach the red disc',
                               proprioception=sai.Proprioception(
                                   joint_positions=[float(v) for v in self.q], gripper=0.0))

    def act(self, values: list[float]) -> None:
        joints = np.asarray(values[:7])
        space = self.profile.action_space
        if space in ('joint_absolute', 'joint_position'):
            self.q = joints
        else:
            # Velocities are per second of served (scaled) time: one period is 1 / served hz.
            served_hz = self.profile.control_hz / RUN_SCALE
            self.q = self.q + (joints if space == 'joint_delta' else joints / served_hz)
        self.acted += 1


def _run(gateway, name: str, chunks: int = 8):
    arm, answers = Arm(name), []
    with sai.connect(name, api_key=RUN_KEY, base_url=gateway.base_url,
                     protocol='v1') as policy:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            outcome = policy.run(arm.observe, arm.act, validate=lambda a: True,
                                 max_actions=chunks * PROFILES[name].action_horizon,
                                 join_mode='rtc', max_inflight=3, on_chunk=answers.append,
                                 smooth_seam=PROFILES[name].action_horizon // 2,
                                 seam_blend='min_jerk')
    return outcome, answers, [str(w.message) for w in caught], arm


@pytest.mark.parametrize('name', MODELS)
def test_run_with_join_rtc_on_each_profile(fast_gateway, name):
    outcome, answers, messages, arm = _run(fast_gateway, name)
    assert outcome.reason == 'completed' and arm.acted == outcome.actions
    assert not outcome.rtc_fallback and not any('ignored the RTC prefix' in m for m in messages)
    reported = [a.rtc for a in answers if a.rtc is not None]
    assert outcome.prefixes_sent >= 4 and len(reported) >= 4
    assert all(r['prefix_steps'] >= 1 for r in reported)
    assert outcome.prefix_violations == 0 and outcome.max_prefix_error < 0.002
    # The run reached the disc's side of the table, closed loop.
    goal = np.array([0.55, 0.2, arm_model.HOVER_Z])
    start = np.linalg.norm(arm_model.tool_position(HOME) - goal)
    assert np.linalg.norm(arm_model.tool_position(arm.q) - goal) < start


def test_run_falls_back_once_against_a_server_that_ignores_the_prefix(ignoring_gateway):
    outcome, answers, messages, _ = _run(ignoring_gateway, 'cosmos3-edge-policy-droid', 6)
    assert outcome.reason == 'completed' and outcome.rtc_fallback
    fallback = [m for m in messages if 'ignored the RTC prefix' in m]
    assert len(fallback) == 1 and "join_mode='aligned'" in fallback[0] \
        and 'smooth_seam=16' in fallback[0] and "seam_blend='min_jerk'" in fallback[0]
    assert outcome.prefixes_sent == 1 and all(a.rtc is None for a in answers)
    # From then on the aligned join with the configured blend: ramps were played.
    assert outcome.blended_steps > 0
