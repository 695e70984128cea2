"""
The chunk-engine bench's world: a kinematic arm, a moving target, and what each loop did.

The arm applies every action it is given (absolute targets, increments or velocities) so that
observations carry where the arm really is; the target moves on a fixed schedule (round an
ellipse, or hopping between corners) so the arm keeps moving and seams measure motion, not
noise. `Trace` records, with
one clock for every loop, when each observation was taken and each action executed, and which
chunk (hence which observation) each action came from. `SimulatedArm` is the same arm and
planner on a simulated clock, for the runs that leave the machine out.
"""

from dataclasses import dataclass, field
import time

import numpy as np
import sequence_ai
from sequence_ai_ros import arm_model
from sequence_ai_ros.client.types import ActionChunk, ImageFrame, Observation, Proprioception
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.reference_policy import chunk_noise, INTEGRATING_SPACES, plan_reach
from sequence_ai_ros.gateway.spaces import to_action_space
from sequence_ai_ros.node.images import encode_raw_image
from sequence_ai_ros.sim.render import SceneRenderer

ABSOLUTE_SPACES = ('joint_absolute', 'joint_position')
# 'circle': the target goes round an ellipse in the reachable area, one lap per LAP_S of model
# time, so the arm tracks it continuously (a tracking task). 'hops': it jumps between the
# corners every HOP_S, so the plan reverses now and then (abrupt goal changes).
WORLDS = ('circle', 'hops')
LAP_S = 8.0
CIRCLE_FRAMES = 48
HOP_S = 3.0
CORNERS = ((0.35, -0.3), (0.65, -0.3), (0.65, 0.3), (0.35, 0.3))
INSTRUCTION = 'reach the red disc'
# A gap between two act() calls longer than this many periods is a stall (a missed tick).
STALL_PERIODS = 1.5


def _frame(pixels: np.ndarray) -> str:
    height, width = pixels.shape[:2]
    return encode_raw_image('rgb8', width, height, width * 3, pixels.tobytes()).base64()


def targets(world: str) -> tuple[list[tuple[float, float]], float]:
    """Return the target positions of a world, visited in turn, and the time at each."""
    if world == 'hops':
        return list(CORNERS), HOP_S
    angles = np.linspace(0.0, 2 * np.pi, CIRCLE_FRAMES, endpoint=False)
    return [(0.5 + 0.12 * float(np.cos(a)), 0.25 * float(np.sin(a))) for a in angles], \
        LAP_S / CIRCLE_FRAMES


def render_frames(world: str) -> tuple[list[tuple[str, str]], float]:
    """(exterior_1, wrist) base64 JPEGs per target, rendered once, and the dwell (model s)."""
    renderer = SceneRenderer(320, 240)
    positions, dwell = targets(world)
    return [(_frame(renderer.exterior(arm_model.HOME, xy)),
             _frame(renderer.wrist(arm_model.HOME, xy))) for xy in positions], dwell


class Arm:
    """Joint state moved by the actions it receives, in the profile's action space."""

    def __init__(self, frames: tuple[list[tuple[str, str]], float], action_space: str,
                 period_s: float, time_scale: float) -> None:
        self.frames, dwell = frames
        self.action_space = action_space
        self.period_s = period_s
        self.dwell_s = dwell * time_scale
        self.q = arm_model.HOME.copy()
        self.gripper = 0.0
        self.started = time.monotonic()

    def apply(self, values: list[float]) -> None:
        """Execute one action."""
        joints = np.asarray(values[:self.q.size], dtype=float)
        if self.action_space in ABSOLUTE_SPACES:
            self.q = joints
        elif self.action_space == 'joint_delta':
            self.q = self.q + joints
        else:  # joint_velocity, in rad/s of wall time at the served rate
            self.q = self.q + joints * self.period_s
        self.q = arm_model.clamp_to_limits(self.q)
        if len(values) > self.q.size:
            self.gripper = float(values[self.q.size])

    def _images(self) -> tuple[str, str]:
        hop = int((time.monotonic() - self.started) / self.dwell_s)
        return self.frames[hop % len(self.frames)]

    def observation(self) -> Observation:
        """Return the current observation as this project's client type."""
        exterior, wrist = self._images()
        return Observation(
            images=[ImageFrame('exterior_1', exterior), ImageFrame('wrist', wrist)],
            proprioception=Proprioception(joint_positions=[float(v) for v in self.q],
                                          gripper=self.gripper),
            instruction=INSTRUCTION)

    def published_observation(self) -> sequence_ai.Observation:
        """Return the current observation as the published sequence_ai client's type."""
        exterior, wrist = self._images()
        return sequence_ai.Observation(
            images=[sequence_ai.ImageFrame('exterior_1', exterior),
                    sequence_ai.ImageFrame('wrist', wrist)],
            proprioception=sequence_ai.Proprioception(
                joint_positions=[float(v) for v in self.q], gripper=self.gripper),
            instruction=INSTRUCTION)


@dataclass
class Trace:
    """What one run did, on one clock: observations, actions, and their chunks."""

    period_s: float
    joints: int = len(arm_model.HOME)
    observed: list[float] = field(default_factory=list)
    acted: list[float] = field(default_factory=list)
    ages: list[float] = field(default_factory=list)
    seams: list[float] = field(default_factory=list)
    chunk_captures: list[float] = field(default_factory=list)
    _last_values: list[float] | None = None
    _last_chunk: int = -1

    def observe(self) -> float:
        """Note an observation (one per request in every loop); returns its time."""
        now = time.monotonic()
        self.observed.append(now)
        return now

    def chunk(self, capture_time: float) -> int:
        """Note a chunk computed from the observation taken at `capture_time`; its number."""
        self.chunk_captures.append(capture_time)
        return len(self.chunk_captures) - 1

    def act(self, values: list[float], chunk: int) -> None:
        """
        Note an executed action and the chunk it came from (-1: none, a blended action).

        A seam is the jump from the action before wherever the chunk changes, and at every
        blended action, so that a whole blend ramp is measured, not only its first step.
        """
        now = time.monotonic()
        self.acted.append(now)
        if 0 <= chunk < len(self.chunk_captures):
            self.ages.append(now - self.chunk_captures[chunk])
        # Joints only: the gripper is a 0..1 position in every space and would swamp them.
        joints = list(values[:self.joints])
        if (chunk != self._last_chunk or chunk == -1) and self._last_values is not None:
            self.seams.append(max(abs(a - b) for a, b in zip(joints, self._last_values)))
        self._last_values, self._last_chunk = joints, chunk

    def stalls(self) -> list[float]:
        """Seconds without a command at each gap longer than STALL_PERIODS periods."""
        gaps = np.diff(np.asarray(self.acted))
        return [float(g - self.period_s) for g in gaps if g > STALL_PERIODS * self.period_s]


class SimulatedArm:
    """
    The arm and the reference policy on one simulated clock (model seconds), no HTTP at all.

    A chunk is what the gateway's reference policy plans from the arm's state and the target
    at the moment of the observation (its own planner, bypassing only the camera image), so
    seams compare with the live runs'.
    """

    def __init__(self, profile: ModelProfile, seed: int, world: str = 'circle') -> None:
        self.profile = profile
        self.q = arm_model.HOME.copy()
        self.gripper = 0.0
        self.rng = np.random.default_rng(seed)
        self.positions, self.dwell = targets(world)

    def plan(self, now: float) -> ActionChunk:
        """Return the chunk the reference policy plans from an observation taken at `now`."""
        profile = self.profile
        steps = profile.action_horizon
        x, y = self.positions[int(now / self.dwell) % len(self.positions)]
        goal = np.array([x, y, arm_model.HOVER_Z])
        integrating = profile.action_space in INTEGRATING_SPACES
        planned, grip = plan_reach(self.q, self.gripper, goal, steps, 1.0 / profile.control_hz,
                                   integrating)
        planned[1:] = arm_model.clamp_to_limits(
            planned[1:] + chunk_noise(self.rng, steps, self.q.size))
        rows = to_action_space(profile.action_space, planned, grip, profile.control_hz)
        return ActionChunk(steps=[[float(v) for v in row] for row in rows], robot=profile.robot,
                           action_space=profile.action_space, action_dim=len(rows[0]),
                           control_frequency_hz=profile.control_hz,
                           covers_seconds=steps / profile.control_hz)

    def apply(self, values: list[float]) -> None:
        """Execute one action (one control period of model time)."""
        joints = np.asarray(values[:self.q.size], dtype=float)
        if self.profile.action_space in ABSOLUTE_SPACES:
            self.q = joints
        elif self.profile.action_space == 'joint_delta':
            self.q = self.q + joints
        else:
            self.q = self.q + joints / self.profile.control_hz
        self.q = arm_model.clamp_to_limits(self.q)
        if len(values) > self.q.size:
            self.gripper = float(values[self.q.size])
