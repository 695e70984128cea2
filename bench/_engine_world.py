"""
The chunk-engine bench's world: a kinematic arm, a moving target, and what each loop did.

The arm applies every action it is given (absolute targets, increments or velocities) so that
observations carry where the arm really is; the target moves on a fixed schedule (round an
ellipse, or hopping between corners) so the arm keeps moving and seams measure motion, not
noise. `Trace` records, with
one clock for every loop, when each observation was taken and each action executed, and which
chunk (hence which observation) each action came from. `SimulatedArm` is the same arm and
planner on a simulated clock, for the runs that leave the machine out.

A seam is measured in every action space (SeamMeter): on absolute spaces as the largest joint
jump (rad), on delta and velocity spaces as the largest jump of the commanded joint velocity
(rad/s of model time: an increment times the model's rate, a served rate times the time
scale), where a stall at a join is a stop: the arm holds, at zero velocity, in between.
"""

from dataclasses import dataclass, field
import time

import numpy as np
import sequence_ai
from sequence_ai_ros.client import ActionChunk, ImageFrame, Observation, Proprioception
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.reference_policy import ReferencePolicy
from sequence_ai_ros.node.images import encode_raw_image
from sequence_ai_ros.sim.render import SceneRenderer
from sequence_ai_ros.world import arm_model

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


def seam_rate(profile: ModelProfile) -> float:
    """
    Return what turns a profile's action values into the seam's units, at its time scale.

    1 on absolute spaces (rad); the model's rate for increments; the time scale for served
    velocities (rad/s of wall time at the scale), so both read in rad/s of model time.
    """
    if profile.action_space in ABSOLUTE_SPACES:
        return 1.0
    if profile.action_space == 'joint_delta':
        return profile.native_hz
    return profile.time_scale


def seam_unit(profile: ModelProfile) -> str:
    """Return the seam's unit for a profile."""
    return 'rad' if profile.action_space in ABSOLUTE_SPACES else 'rad/s'


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
class SeamMeter:
    """
    The jumps at joins, and the largest step between two actions of one chunk.

    `rate` (seam_rate) turns action values into the seam's units; on rate spaces (rate != 1)
    a join across a stall is measured through zero velocity. A blended action (chunk -1) is
    none of the model's values, so its jump from the action before is a seam too: a whole
    blend ramp is measured, not only its first step.
    """

    rate: float = 1.0
    seams: list[float] = field(default_factory=list)
    within: float = 0.0  # the model's own roughness: the largest step inside one chunk
    _last: list[float] | None = None
    _last_chunk: int = -1

    def note(self, values: list[float], chunk: int, stalled: bool = False) -> None:
        """Note an executed action's joint values and chunk; `stalled`: none came for long."""
        joints = [v * self.rate for v in values]
        last = self._last
        if last is not None and (chunk != self._last_chunk or chunk == -1):
            if stalled and self.rate != 1.0:
                self.seams.append(max(abs(v) for v in (*joints, *last)))
            else:
                self.seams.append(max(abs(a - b) for a, b in zip(joints, last)))
        elif last is not None and not stalled:
            self.within = max(self.within, max(abs(a - b) for a, b in zip(joints, last)))
        self._last, self._last_chunk = joints, chunk


@dataclass
class Trace:
    """What one run did, on one clock: observations, actions, and their chunks."""

    period_s: float
    rate: float = 1.0  # seam_rate(): values to the seam's units
    joints: int = len(arm_model.HOME)
    observed: list[float] = field(default_factory=list)
    acted: list[float] = field(default_factory=list)
    ages: list[float] = field(default_factory=list)
    chunk_captures: list[float] = field(default_factory=list)
    meter: SeamMeter | None = None

    def __post_init__(self) -> None:
        self.meter = SeamMeter(self.rate)

    @property
    def seams(self) -> list[float]:
        """Return the jumps at joins (SeamMeter)."""
        assert self.meter is not None
        return self.meter.seams

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

        Seams are measured by SeamMeter, on the joints only: the gripper is a 0..1 position
        in every space and would swamp them.
        """
        now = time.monotonic()
        stalled = bool(self.acted) and now - self.acted[-1] > STALL_PERIODS * self.period_s
        self.acted.append(now)
        if 0 <= chunk < len(self.chunk_captures):
            self.ages.append(now - self.chunk_captures[chunk])
        assert self.meter is not None
        self.meter.note(values[:self.joints], chunk, stalled)

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
        self.policy = ReferencePolicy(profile)
        self.q = arm_model.HOME.copy()
        self.gripper = 0.0
        self.rng = np.random.default_rng(seed)
        self.positions, self.dwell = targets(world)

    def plan(self, now: float, options: dict | None = None) -> ActionChunk:
        """
        Return the chunk the reference policy plans from an observation taken at `now`.

        `options` are the request's (join='rtc': the prefix), as the gateway passes them.
        """
        profile = self.profile
        steps = profile.action_horizon
        x, y = self.positions[int(now / self.dwell) % len(self.positions)]
        goal = np.array([x, y, arm_model.HOVER_Z])
        rows = self.policy.chunk(self.q, self.gripper, goal, steps, options or {}, self.rng)
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
