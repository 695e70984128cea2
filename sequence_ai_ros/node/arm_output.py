"""
How commands reach the arm's controller: one output mode per kind of stock controller.

Every mode is built so that the controller accepts it with its default parameters, on Humble,
Jazzy and Kilted (joint_trajectory_controller's `validate_trajectory_msg`: the controller's
joints only, strictly increasing times, every point's fields sized like joint_names, and, since
Jazzy, a last point with zero velocity or none):

trajectory_stream  one point per control step on <controller>/joint_trajectory: positions
                   only, due one period from receipt. The controller interpolates linearly from
                   where the arm is and holds the point if the next message is late.
trajectory_plan    the next `plan_ahead_s` of the buffered plan on every step: positions with
                   velocities, the last point at rest. The controller's spline carries the arm
                   through a late tick and stops it at the end of what was checked and sent;
                   the message after a late tick starts where that carried it (the episode
                   skips the steps already due and keeps their due times: first_s).
forward_position   std_msgs/Float64MultiArray positions on <controller>/commands
forward_velocity   std_msgs/Float64MultiArray velocities on <controller>/commands. Upstream's
                   forward_command_controller keeps the last command forever: the node sends
                   zeros on every hold, deactivate and shutdown.

A hold is always a message of the same kind that replaces whatever was sent before at once:
one point at the measured positions with zero velocity, or zero velocities.

The last message of an episode (completed, stopped or ended holding) is a hold with a second
point: the same positions, at rest, FINAL_REST_S later. A joint_trajectory_controller's
`cmd_timeout` counts from a trajectory's last point and, for a message on its topic, always
fires once it has passed: "Aborted due to command timeout" at WARN, then it holds the measured
position. Only a FollowJointTrajectory goal that succeeds disarms it; every topic message arms
it again. So every episode used to end with that WARN cmd_timeout after its last message. With
the rest point the controller keeps the arm where the episode left it, at rest, until the next
episode replaces the message; the WARN comes only if nothing is sent for FINAL_REST_S. A node
that dies in mid-episode is still caught: every message it sends then ends within plan_ahead_s.
"""

from collections.abc import Sequence
import math

from builtin_interfaces.msg import Duration
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from .commands import Command

__all__ = [
    'FINAL_REST_S',
    'FORWARD_MODES',
    'OUTPUT_MODES',
    'TRAJECTORY_MODES',
    'forward_message',
    'hold_trajectory',
    'plan_trajectory',
    'stream_trajectory',
]

STREAM, PLAN = 'trajectory_stream', 'trajectory_plan'
# A day: longer than any pause between episodes an operator would leave unattended.
FINAL_REST_S = 86400.0
FORWARD_POSITION, FORWARD_VELOCITY = 'forward_position', 'forward_velocity'
TRAJECTORY_MODES = (STREAM, PLAN)
FORWARD_MODES = (FORWARD_POSITION, FORWARD_VELOCITY)
OUTPUT_MODES = TRAJECTORY_MODES + FORWARD_MODES


def _duration(seconds: float) -> Duration:
    # Integer nanoseconds first: splitting the float directly can give nanosec == 10**9.
    if not (seconds >= 0.0 and math.isfinite(seconds)):
        raise ValueError(f'time_from_start must be >= 0 and finite, got {seconds!r}')
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return Duration(sec=sec, nanosec=nanosec)


def _names(joint_names: Sequence[str], values: Sequence[float]) -> list[str]:
    if len(joint_names) != len(values):
        raise ValueError(f'{len(joint_names)} joint names for {len(values)} values')
    return list(joint_names)


def stream_trajectory(joint_names: Sequence[str], positions: Sequence[float],
                      period_s: float) -> JointTrajectory:
    """Build the one-point, positions-only JointTrajectory of trajectory_stream."""
    point = JointTrajectoryPoint(positions=[float(p) for p in positions],
                                 time_from_start=_duration(period_s))
    return JointTrajectory(joint_names=_names(joint_names, positions), points=[point])


def hold_trajectory(joint_names: Sequence[str], positions: Sequence[float],
                    period_s: float, rest_s: float = 0.0) -> JointTrajectory:
    """
    Build a hold: one point at `positions` with zero velocity, reached in one period.

    `rest_s` > 0 adds the same point `rest_s` later (an episode's last message, see the
    module docstring): the controller's cmd_timeout then counts from that second point.
    """
    times = (period_s, period_s + rest_s) if rest_s > 0.0 else (period_s,)
    points = [JointTrajectoryPoint(positions=[float(p) for p in positions],
                                   velocities=[0.0] * len(positions),
                                   time_from_start=_duration(t)) for t in times]
    return JointTrajectory(joint_names=_names(joint_names, positions), points=points)


def plan_trajectory(joint_names: Sequence[str], commands: Sequence[Command], joints: int,
                    period_s: float, first_s: float | None = None) -> JointTrajectory:
    """
    Build trajectory_plan's message: command k due `first_s` + k periods from receipt.

    `first_s` defaults to one period. Every point carries the step's velocities but the
    last, which is at rest (Jazzy and Kilted reject a moving end by default, and a stalled
    node must leave the arm stopped).
    """
    if not commands:
        raise ValueError('a planned trajectory needs at least one command')
    first = period_s if first_s is None else first_s
    if not first > 0.0:
        raise ValueError(f'the first point must be due after receipt, got {first!r} s')
    points = []
    for k, command in enumerate(commands):
        last = k == len(commands) - 1
        velocities = [0.0] * joints if last else [float(v) for v in command.velocities[:joints]]
        points.append(JointTrajectoryPoint(
            positions=[float(p) for p in command.positions[:joints]], velocities=velocities,
            time_from_start=_duration(first + k * period_s)))
    return JointTrajectory(joint_names=_names(joint_names, points[0].positions), points=points)


def forward_message(values: Sequence[float]) -> Float64MultiArray:
    """Build the Float64MultiArray a forward_command_controller reads (one value per joint)."""
    return Float64MultiArray(data=[float(v) for v in values])
