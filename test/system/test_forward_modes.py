"""
The forward modes end to end: a real policy node, the local gateway and a Kilted sim_arm.

What the real ros2_control on Kilted did with the node's forward commands, and what the sim
must show with them: forward_position sent one step per model step has steps a 1 kHz
controller_manager clamps to the joints' speed limits ("Command of at least one joint is out
of limits"); sent as lines (forward_output_rate_hz) almost none (only where the node's timer
ran late), and every value is between two checked steps. forward_velocity on a velocity
interface (the shipped controllers file's JointGroupVelocityController) completes an episode
within the joints' speed limits and leaves the arm stopped. None of them holds for an underrun
of its own: the one a forward_position episode can show is the world's, a second answer slower
than the first chunk, and trajectory_plan shows it at the same step.
"""

import os

from fixtures_gateway import gateway_fixture
from forward_episode import gateway_args, GATEWAY_OPTIONS, run, start_gateway, steps_past_the_limit
import numpy as np
import pytest
from sequence_ai_ros.harness.child_processes import random_domain_id
from sequence_ai_ros.world import arm_model

gateway = gateway_fixture(gateway_args(), **GATEWAY_OPTIONS)


@pytest.fixture(scope='module')
def domain():
    return int(os.environ.get('ROS_DOMAIN_ID') or random_domain_id())


# The catalogue's pi05-droid latency (median 0.78 s) drawn with this seed gives the episode's
# second and third requests 1.23 s and 1.15 s: both land after the first chunk's 1.0 s is spent.
SLOW_SECOND_ANSWER_SEED = 36
FIRST_CHUNK_STEPS = 15


def completed(episode):
    assert episode.outcome is not None, episode.node_log[-3000:]
    assert episode.outcome['outcome'] == 'completed', episode.outcome
    assert episode.controller_errors == [], episode.controller_errors
    # Answers take 0.3 s against 1.0 s chunks here: a hold would be the node's own doing.
    assert episode.outcome['underruns'] == 0, episode.outcome


def test_forward_position_steps_are_clamped_by_a_kilted_controller_manager(
        tmp_path, domain, gateway):
    episode = run(tmp_path, domain, gateway, 'forward_position', 'kilted',
                  forward_output_rate_hz=0.0)
    completed(episode)
    assert steps_past_the_limit(episode) > 0.5
    assert any('out of limits' in line for line in episode.manager_errors), \
        episode.sim_log[-3000:]
    # configure asked the sim's controller_manager for its rate, and warned.
    assert 'controller_manager updates at 1000 Hz and this node sends each step at once' in \
        episode.node_log, episode.node_log[-3000:]


def test_forward_position_lines_stay_within_the_speed_limit_and_the_checked_steps(
        tmp_path, domain, gateway):
    episode = run(tmp_path, domain, gateway, 'forward_position', 'kilted',
                  forward_output_rate_hz=1000.0)
    completed(episode)
    # A message steps past one update's reach only where the node's timer ran late (the
    # machine's load): a few lines a second, not every step.
    assert steps_past_the_limit(episode) < 0.05
    assert len(episode.manager_errors) <= episode.outcome['elapsed_s'] + 1
    assert len(episode.commands) > 10 * episode.outcome['actions'], 'no lines were drawn'
    assert 'output_mode forward_position:' not in episode.node_log  # 1000 Hz lines, 1000 Hz


def test_forward_velocity_completes_on_a_velocity_interface_and_stops(
        tmp_path, domain, gateway):
    episode = run(tmp_path, domain, gateway, 'forward_velocity', 'kilted')
    completed(episode)
    assert episode.manager_errors == [], episode.manager_errors[:3]
    assert episode.commands[-1][1] == [0.0] * 7, 'the episode did not end with zeros'
    t, q = episode.arrays()
    speed = np.abs(np.diff(q, axis=0)) / np.diff(t)[:, None]
    assert (speed <= arm_model.VELOCITY_LIMITS * 1.02).all(), speed.max(axis=0)
    assert np.linalg.norm(q[-1] - q[0]) > 0.02, 'the arm did not move'
    last = t >= t[-1] - 0.2
    assert np.abs(np.diff(q[last], axis=0)).max() < 1e-9, 'the arm did not stop'


@pytest.mark.parametrize('mode', ['forward_position', 'trajectory_plan'])
def test_a_second_answer_slower_than_the_first_chunk_holds_every_mode_at_that_chunk_end(
        tmp_path, domain, mode):
    # The second request starts when the first chunk is joined (no latency is known before),
    # so the first chunk alone must cover its whole latency: an answer slower than the chunk
    # holds the arm once, when the chunk's steps are spent, whatever the output mode.
    gateway = start_gateway('--seed', str(SLOW_SECOND_ANSWER_SEED))
    try:
        episode = run(tmp_path, domain, gateway, mode, 'kilted')
    finally:
        gateway.close()
    assert episode.outcome is not None, episode.node_log[-3000:]
    assert episode.outcome['outcome'] == 'completed', episode.outcome
    assert len(episode.chunks) >= 2, episode.chunks
    first, second = episode.chunks[:2]
    assert first['steps'] == FIRST_CHUNK_STEPS, first
    assert second['actions_before'] == FIRST_CHUNK_STEPS, second
    assert second['latency_s'] > first['steps'] / 15.0, second
    assert episode.outcome['underruns'] >= 1, episode.outcome
    assert 'holding: underrun: the next chunk has not arrived' in episode.node_log
