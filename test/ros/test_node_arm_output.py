"""
The node's messages against the stock controller's own acceptance rules, per distribution.

jtc_rules ports joint_trajectory_controller's validate_trajectory_msg for humble, jazzy and
kilted (see test_sim_jtc_rules.py for the upstream lines); TrajectoryExecutor its update cycle.
Every message the node can build is accepted with the defaults and the arm's joints only; the
messages the node used to send are refused, which shows these checks can fail.
"""

from dataclasses import replace

import numpy as np
import pytest
from sequence_ai_ros.node.arm_output import hold_trajectory, plan_trajectory, stream_trajectory
from sequence_ai_ros.node.commands import Command, CommandMapper
from sequence_ai_ros.sim import jtc_rules
from sequence_ai_ros.sim.messages import trajectory_from_msg
from sequence_ai_ros.sim.trajectory import TrajectoryExecutor
from sequence_ai_ros.world import arm_model

ARM = list(arm_model.JOINT_NAMES)
HOME = [float(v) for v in arm_model.HOME]
DT = 1 / 15
DISTROS = jtc_rules.DISTROS


def stock(distro, joints=ARM):
    """Return a stock controller's parameters: the distro's defaults and these joints."""
    return replace(jtc_rules.defaults(distro), joints=tuple(joints),
                   command_interfaces=('position',), state_interfaces=('position', 'velocity'))


def verdict(msg, distro, joints=ARM):
    return jtc_rules.validate_trajectory(trajectory_from_msg(msg), stock(distro, joints), 100.0)


def plan(space, steps=6):
    """Return the commands a mapper gives for `steps` actions of a space, no gripper."""
    mapper = CommandMapper(space, 7, False)
    mapper.reset(HOME)
    rng = np.random.default_rng(3)
    if space == 'joint_absolute':
        actions = [[h + 0.02 * k + 0.01 * rng.standard_normal() for h in HOME]
                   for k in range(1, steps + 1)]
    else:
        actions = [list(0.2 * rng.standard_normal(7)) for _ in range(steps)]
    return [mapper.command(action, DT) for action in actions]


@pytest.mark.parametrize('distro', DISTROS)
@pytest.mark.parametrize('space', ['joint_velocity', 'joint_delta', 'joint_absolute'])
def test_every_message_of_every_mode_is_accepted(distro, space):
    commands = plan(space)
    assert any(v != 0.0 for c in commands for v in c.velocities), 'a plan that moves'
    for command in commands:
        assert verdict(stream_trajectory(ARM, command.positions, DT), distro) is None
    for k in range(1, len(commands) + 1):
        assert verdict(plan_trajectory(ARM, commands[:k], 7, DT), distro) is None
    assert verdict(hold_trajectory(ARM, HOME, DT), distro) is None


@pytest.mark.parametrize('distro', DISTROS)
def test_the_old_message_is_refused_with_upstream_words(distro):
    """One point, the gripper among the joints, moving velocities: what the node sent before."""
    old = plan_trajectory(ARM + [arm_model.GRIPPER_JOINT],
                          [Command((*HOME, 0.0), (0.2,) * 8)] * 2, 8, DT)
    old.points = old.points[:1]
    old.points[0].velocities = [0.2] * 8
    assert verdict(old, distro) == \
        "Joints on incoming trajectory don't match the controller joints."
    partial = replace(stock(distro), allow_partial_joints_goal=True)
    assert jtc_rules.validate_trajectory(trajectory_from_msg(old), partial, 100.0) == \
        "Incoming joint panda_finger_joint1 doesn't match the controller's joints."
    arm_only = stream_trajectory(ARM, HOME, DT)
    arm_only.points[0].velocities = [0.2] * 7
    reason = verdict(arm_only, distro)
    if distro == 'humble':
        assert reason is None, 'Humble allows a moving end by default'
    else:
        assert reason == 'Velocity of last trajectory point of joint panda_joint1 is not ' \
                         'zero: 0.200000000000000'


@pytest.mark.parametrize('distro', DISTROS)
def test_a_hold_replaces_a_plan_sent_ahead_within_one_cycle(distro):
    """The controller stops at the hold, never reaching the plan it had been sent."""
    period = 0.01
    executor = TrajectoryExecutor(stock(distro), period)
    position, velocity = np.array(HOME), np.zeros(7)
    now = 0.0
    executor.update(now, position, velocity)
    commands = [Command(tuple(h + 0.01 * k for h in HOME), (0.15,) * 7) for k in range(1, 16)]
    assert executor.receive(trajectory_from_msg(plan_trajectory(ARM, commands, 7, DT)),
                            now) is None
    for _ in range(10):  # 0.1 s along the plan, the arm following its commands exactly
        now += period
        position = executor.update(now, position, velocity)
    held_at = position.copy()
    assert held_at[0] > HOME[0] + 0.005, 'the arm followed the plan'
    assert executor.receive(trajectory_from_msg(hold_trajectory(ARM, held_at, DT)), now) is None
    path = []
    for _ in range(int(1.0 / period)):  # the plan would have gone on 0.9 s more
        now += period
        position = executor.update(now, position, velocity)
        path.append(position.copy())
    assert np.max(np.abs(np.array(path) - held_at)) < 0.002, 'the plan went on after the hold'
    assert np.allclose(path[-1], held_at, atol=1e-9)
