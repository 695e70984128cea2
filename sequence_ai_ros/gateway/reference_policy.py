"""
The reference policy: reach above the red target seen by the exterior camera.

It reads the frame (scene.py), then plans the chunk in model time with damped least squares
on the arm's position Jacobian, joint speed capped, joints clamped to their limits, and the
gripper closing once the tool is within GRASP_RADIUS of the hover point. A little smooth,
seeded noise makes consecutive chunks disagree as a learned policy's samples do.
"""

from typing import Any

import numpy as np
from sequence_ai_ros import arm_model

from .catalogue import ModelProfile
from .scene import read_scene
from .spaces import to_action_space

MAX_JOINT_SPEED = 0.6  # rad/s of model time
DAMPING = 0.05
NULLSPACE_GAIN = 0.05  # per step, toward HOME, so the redundant joint does not wander
GRASP_RADIUS = 0.03
GRIPPER_SPEED = 2.0  # full stroke per 0.5 s of model time
NOISE_SIGMA = 0.003  # rad
NOISE_CORRELATION = 0.8  # step to step, so the noise is smooth rather than jitter
JACOBIAN_EVERY = 4  # steps; it changes little over 4 capped steps and costs 0.3 ms each


def smooth_noise(rng: np.random.Generator, steps: int, dims: int,
                 sigma: float = NOISE_SIGMA, correlation: float = NOISE_CORRELATION
                 ) -> np.ndarray:
    """AR(1) noise, shape (steps, dims), with stationary standard deviation `sigma`."""
    white = rng.standard_normal((steps, dims)) * sigma
    noise = np.empty_like(white)
    previous = white[0]
    innovation = np.sqrt(1.0 - correlation ** 2)
    for i in range(steps):
        previous = white[i] if i == 0 else correlation * previous + innovation * white[i]
        noise[i] = previous
    return noise


def plan_reach(q0: np.ndarray, gripper0: float, goal: np.ndarray, steps: int,
               period_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Joint targets (steps + 1 rows, row 0 = q0 clamped) and gripper per step toward `goal`."""
    q = arm_model.clamp_to_limits(q0)
    targets, grip = [q], []
    gripper, max_step = gripper0, MAX_JOINT_SPEED * period_s
    eye = np.eye(q.size)
    tool = arm_model.tool_position(q)
    for i in range(steps):
        if i % JACOBIAN_EVERY == 0:
            jac = arm_model.position_jacobian(q)
            pinv = jac.T @ np.linalg.inv(jac @ jac.T + DAMPING ** 2 * np.eye(3))
            nullspace = eye - pinv @ jac
        dq = pinv @ (goal - tool) + NULLSPACE_GAIN * nullspace @ (arm_model.HOME - q)
        dq /= max(1.0, float(np.abs(dq).max()) / max_step)
        q = arm_model.clamp_to_limits(q + dq)
        tool = arm_model.tool_position(q)
        if np.linalg.norm(goal - tool) <= GRASP_RADIUS:
            gripper = min(1.0, gripper + GRIPPER_SPEED * period_s)
        targets.append(q)
        grip.append(gripper)
    return np.array(targets), np.array(grip)


class ReferencePolicy:
    """Serves one profile; see policy_api for the interface."""

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile

    def act(self, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
        """One chunk of `options['action_horizon']` steps in the profile's action space."""
        steps = int(options['action_horizon'])
        proprioception = observation['proprioception']
        q0 = np.asarray(proprioception['joint_positions'], dtype=float)
        gripper = proprioception.get('gripper')
        gripper0 = 0.0 if gripper is None else min(1.0, max(0.0, float(gripper)))
        frame = observation['images'].get('exterior_1')
        scene = read_scene(frame) if frame is not None else None
        if scene is None or scene.target_xy is None:
            targets = np.repeat(q0[None, :], steps + 1, axis=0)
            grip = np.full(steps, gripper0)
            problem = scene.problem if scene is not None else 'no exterior_1 frame'
            warnings = [f'{problem}: holding position']
        else:
            goal = np.array([*scene.target_xy, arm_model.HOVER_Z])
            targets, grip = plan_reach(q0, gripper0, goal, steps, 1.0 / self.profile.native_hz)
            targets[1:] = arm_model.clamp_to_limits(
                targets[1:] + smooth_noise(rng, steps, q0.size))
            warnings = []
        rows = to_action_space(self.profile.action_space, targets, grip, self.profile.control_hz)
        return rows, warnings
