"""Observations as a robot sends them: the simulated arm's frames, encoded as the node does."""

from sequence_ai_ros.client import ImageFrame, Observation, Proprioception
from sequence_ai_ros.node.images import encode_raw_image
from sequence_ai_ros.sim.render import SceneRenderer
from sequence_ai_ros.world import arm_model

_RENDERER = SceneRenderer(320, 240)


def frame_b64(q, target_xy=(0.5, 0.2), view='exterior_1') -> str:
    """One camera frame as base64 JPEG 224x224, letterboxed like the node sends it."""
    pixels = (_RENDERER.exterior if view == 'exterior_1' else _RENDERER.wrist)(q, target_xy)
    height, width = pixels.shape[:2]
    return encode_raw_image('rgb8', width, height, width * 3, pixels.tobytes()).base64()


def observation(q=arm_model.HOME, target_xy=(0.5, 0.2), instruction='reach the red disc',
                views=('exterior_1', 'wrist'), joints=None) -> Observation:
    """Build a valid observation for the DROID-family models."""
    positions = [float(v) for v in (q if joints is None else joints)]
    return Observation(
        images=[ImageFrame(view=v, data=frame_b64(q, target_xy, v)) for v in views],
        proprioception=Proprioception(joint_positions=positions, gripper=0.0),
        instruction=instruction)
