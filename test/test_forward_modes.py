"""
The forward modes end to end: a real policy node, the local gateway and a Kilted sim_arm.

What the real ros2_control on Kilted did with the node's forward commands, and what the sim
must show with them: forward_position sent one step per model step has steps a 1 kHz
controller_manager clamps to the joints' speed limits ("Command of at least one joint is out
of limits"); sent as lines (forward_output_rate_hz) almost none (only where the node's timer
ran late), and every value is between two checked steps. forward_velocity on a velocity
interface (the shipped controllers file's JointGroupVelocityController) completes an episode
within the joints' speed limits and leaves the arm stopped.
"""

import os

from forward_episode import run, start_gateway, steps_past_the_limit
import numpy as np
import pytest
from sequence_ai_ros.harness.child_processes import random_domain_id
from sequence_ai_ros.world import arm_model


@pytest.fixture(scope='module')
def gateway():
    process = start_gateway()
    yield process
    process.close()


@pytest.fixture(scope='module')
def domain():
    return int(os.environ.get('ROS_DOMAIN_ID') or random_domain_id())


def completed(episode):
    assert episode.outcome is not None, episode.node_log[-3000:]
    assert episode.outcome['outcome'] == 'completed', episode.outcome
    assert episode.controller_errors == [], episode.controller_errors


def test_forward_position_steps_are_clamped_by_a_kilted_controller_manager(
        tmp_path, domain, gateway):
    episode = run(tmp_path, domain, gateway, 'forward_position', 'kilted',
                  forward_output_rate_hz=0.0)
    completed(episode)
    assert steps_past_the_limit(episode) > 0.5
    assert any('out of limits' in line for line in episode.manager_errors), \
        episode.sim_log[-3000:]


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
