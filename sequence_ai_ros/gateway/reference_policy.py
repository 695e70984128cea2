"""The reference policy: reach above the red target seen by the exterior camera."""

# It reads the frame (scene.py), lays a straight tool path toward the hover point, and follows
# it with damped least squares on the arm's position Jacobian (joint speed capped, joints
# clamped, a slow pull of the redundant joint toward HOME). The gripper closes once the tool
# is within GRASP_RADIUS of the hover point; inside SETTLE_RADIUS the plan stands still.
# Smooth, seeded noise makes consecutive chunks disagree as a learned policy's samples do.
#
# Closed loop with prefetch, a chunk starts to play about one chunk after its observation.
# Absolute targets do not add up: a late chunk repeats ground already covered (a backward
# seam, which the node's seam smoothing is for), so those plans go all the way. Delta and
# velocity plans are integrated on top of the chunks still queued: a plan covering the whole
# error seen is applied on top of the one before, and the arm rings or drifts. Each covers
# CHUNK_SHARE of it instead; with chunk k planned from the error before chunk k - 1 played,
# e[k + 1] = e[k] - share * e[k - 1], critically damped at share 1/4 (a double root at 1/2).
#
# With a real-time-chunking prefix (prefix.py) the chunk starts with the prefix's frozen rows,
# within a tenth of the sampling noise, and plans the rest from where they end: the plan's
# joint steps are blended with the prefix's (its rows while it has them, then its last step)
# under RTC's soft mask up to the execution horizon, so the join keeps position and velocity.

from typing import Any

import numpy as np
from sequence_ai_ros.contract.action_spaces import DELTA, space_kind, VELOCITY
from sequence_ai_ros.world import arm_model

from .catalogue import ModelProfile
from .prefix import DELAY_OPTION, HORIZON_OPTION, PREFIX_OPTION, prefix_weights
from .scene import read_scene
from .spaces import from_action_space, to_action_space

MAX_JOINT_SPEED = 0.6  # rad/s of model time
MAX_TOOL_SPEED = 0.3  # m/s of model time
CHUNK_SHARE = 0.25  # of the error seen, covered by one delta or velocity chunk
ARRIVING_TIME_S = 0.25  # model s: absolute plans slow down exponentially into the goal
SETTLE_RADIUS = 0.005  # m: closer than this the plan stands still
DAMPING = 0.05
NULLSPACE_RATE = 0.2  # 1/s of model time toward HOME; slow, so it is damped under the delay
GRASP_RADIUS = 0.03
GRIPPER_SPEED = 2.0  # full stroke per 0.5 s of model time
NOISE_SIGMA = 0.003  # rad
NOISE_CORRELATION = 0.8  # step to step, so the noise is smooth rather than jitter
PREFIX_NOISE_SHARE = 0.1  # of the noise, on the prefix's frozen rows
JACOBIAN_EVERY = 4  # steps; it changes little over 4 capped steps and costs 0.3 ms each


def smooth_noise(rng: np.random.Generator, steps: int, dims: int,
                 sigma: float = NOISE_SIGMA, correlation: float = NOISE_CORRELATION
                 ) -> np.ndarray:
    """Return AR(1) noise, shape (steps, dims), with stationary standard deviation `sigma`."""
    white = rng.standard_normal((steps, dims)) * sigma
    noise = np.empty_like(white)
    previous = white[0]
    innovation = np.sqrt(1.0 - correlation ** 2)
    for i in range(steps):
        previous = white[i] if i == 0 else correlation * previous + innovation * white[i]
        noise[i] = previous
    return noise


def chunk_noise(rng: np.random.Generator, steps: int, dims: int) -> np.ndarray:
    """Return smooth noise that fades out at both ends of the chunk."""
    # Zero-ended, it leaves no offset behind: integrated over many chunks it cannot wander.
    window = np.sin(np.pi * np.arange(1, steps + 1) / (steps + 1))
    return smooth_noise(rng, steps, dims) * window[:, None]


def tool_path(start: np.ndarray, goal: np.ndarray, steps: int, period_s: float,
              integrating: bool) -> np.ndarray:
    """Return the tool's reference position after each step, shape (steps, 3)."""
    error = goal - start
    distance = float(np.linalg.norm(error))
    if distance <= SETTLE_RADIUS:
        return np.repeat(start[None, :], steps, axis=0)
    direction = error / distance
    if integrating:
        # Constant speed: the chunk covers its share of the error seen, and no more.
        speed = min(MAX_TOOL_SPEED, distance * CHUNK_SHARE / (steps * period_s))
        travel = np.minimum(speed * period_s * np.arange(1, steps + 1), distance)
        return start + travel[:, None] * direction
    path, covered = [], 0.0
    for _ in range(steps):
        left = distance - covered
        covered += min(left, MAX_TOOL_SPEED * period_s, left * period_s / ARRIVING_TIME_S)
        path.append(start + covered * direction)
    return np.array(path)


def plan_reach(q0: np.ndarray, gripper0: float, goal: np.ndarray, steps: int,
               period_s: float, integrating: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Return joint targets (steps + 1 rows, row 0 = q0 clamped) and gripper per step."""
    q = arm_model.clamp_to_limits(q0)
    tool = arm_model.tool_position(q)
    path = tool_path(tool, goal, steps, period_s, integrating)
    settled = float(np.linalg.norm(goal - tool)) <= SETTLE_RADIUS
    targets, grip = [q], []
    gripper, max_step = gripper0, MAX_JOINT_SPEED * period_s
    eye = np.eye(q.size)
    for i in range(steps):
        if not settled:
            if i % JACOBIAN_EVERY == 0:
                jac = arm_model.position_jacobian(q)
                pinv = jac.T @ np.linalg.inv(jac @ jac.T + DAMPING ** 2 * np.eye(3))
                nullspace = eye - pinv @ jac
            dq = pinv @ (path[i] - tool) \
                + NULLSPACE_RATE * period_s * nullspace @ (arm_model.HOME - q)
            dq /= max(1.0, float(np.abs(dq).max()) / max_step)
            q = arm_model.clamp_to_limits(q + dq)
            tool = arm_model.tool_position(q)
        if np.linalg.norm(goal - tool) <= GRASP_RADIUS:
            gripper = min(1.0, gripper + GRIPPER_SPEED * period_s)
        targets.append(q)
        grip.append(gripper)
    return np.array(targets), np.array(grip)


class ReferencePolicy:
    """Serves one profile; see policy_api for the interface. Honours RTC prefixes."""

    honours_prefix = True

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile

    def act(self, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
        """Return one chunk of `options['action_horizon']` steps in the profile's space."""
        steps = int(options['action_horizon'])
        proprioception = observation['proprioception']
        q0 = np.asarray(proprioception['joint_positions'], dtype=float)
        gripper = proprioception.get('gripper')
        gripper0 = 0.0 if gripper is None else min(1.0, max(0.0, float(gripper)))
        frame = observation['images'].get('exterior_1')
        scene = read_scene(frame) if frame is not None else None
        goal, warnings = None, []
        if scene is None or scene.target_xy is None:
            problem = scene.problem if scene is not None else 'no exterior_1 frame'
            warnings = [f'{problem}: holding position']
        else:
            goal = np.array([*scene.target_xy, arm_model.HOVER_Z])
        return self.chunk(q0, gripper0, goal, steps, options, rng), warnings

    def chunk(self, q0: np.ndarray, gripper0: float, goal: np.ndarray | None, steps: int,
              options: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        """Return the rows for arm state q0 and a goal seen (None: none), given the options."""
        prefix = options.get(PREFIX_OPTION)
        if prefix is None:
            targets, grip = self._plan(q0, gripper0, goal, steps, rng)
        else:
            targets, grip = self._continue(np.asarray(prefix, dtype=float), q0, gripper0, goal,
                                           steps, int(options[DELAY_OPTION]),
                                           int(options[HORIZON_OPTION]), rng)
        return to_action_space(self.profile.action_space, targets, grip, self.profile.control_hz)

    def _plan(self, q0: np.ndarray, gripper0: float, goal: np.ndarray | None, steps: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Plan `steps` steps from q0 toward the goal (stand still without one), with noise."""
        if goal is None:
            return np.repeat(q0[None, :], steps + 1, axis=0), np.full(steps, gripper0)
        integrating = space_kind(self.profile.action_space) in (DELTA, VELOCITY)
        targets, grip = plan_reach(q0, gripper0, goal, steps, 1.0 / self.profile.native_hz,
                                   integrating)
        targets[1:] = arm_model.clamp_to_limits(targets[1:] + chunk_noise(rng, steps, q0.size))
        return targets, grip

    def _continue(self, prefix: np.ndarray, q0: np.ndarray, gripper0: float,
                  goal: np.ndarray | None, steps: int, delay: int, horizon: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Return the prefix's frozen rows, then a plan from where they end, blended into."""
        known, known_grip = from_action_space(self.profile.action_space, prefix, q0,
                                              self.profile.control_hz)
        frozen = min(delay, len(prefix))
        start_grip = float(known_grip[frozen - 1]) if frozen else gripper0
        own, own_grip = self._plan(known[frozen], start_grip, goal, steps - frozen, rng)
        own_steps, known_steps = np.diff(own, axis=0), np.diff(known, axis=0)
        guide, guide_grip = own_steps.copy(), own_grip.copy()
        for j in range(steps - frozen):
            # The prefix's own rows while it has them, then its last frozen step carried on.
            source = frozen + j if frozen + j < len(prefix) else frozen - 1
            if source >= 0:
                guide[j], guide_grip[j] = known_steps[source], known_grip[source]
        weight = prefix_weights(frozen, horizon, steps)[frozen:]
        blended = weight[:, None] * guide + (1.0 - weight[:, None]) * own_steps
        planned = arm_model.clamp_to_limits(known[frozen] + np.cumsum(blended, axis=0))
        kept = known[1:frozen + 1]
        if frozen:
            kept = kept + PREFIX_NOISE_SHARE * chunk_noise(rng, frozen, q0.size)
        grip = np.concatenate([known_grip[:frozen],
                               weight * guide_grip + (1.0 - weight) * own_grip])
        return np.vstack([q0, kept, planned]), grip
