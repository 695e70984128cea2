"""
The robot-arm preset's Observation as the local deployments read it, checked as the preset does.

Inputs are `{images: [{view, data, timestamp_ms?, kind?}], proprioception: {joint_positions,
joint_velocities?, end_effector_pose? (7), gripper? (a list)}, instruction, state?}`, no other
keys. Each reference deployment declares its cameras (the catalogue's `camera_views`, at its
`image_size`) and `proprio.joint_positions` at its joint count: a frame of another size is
refused, never resized, and the refusal says the call that fits it. Of a view sent more than
once (a series), the newest frame is read. The observation is then checked and decoded by the
v1 front's own validation (validation.validate_act), so one set of rules serves both fronts.
"""

from typing import Any

from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.errors import ApiError, shown
from sequence_ai_ros.gateway.validation import ActRequest, validate_act

from .errors import DirectError, from_api_error

OBSERVATION_KEYS = ('images', 'proprioception', 'instruction', 'state')
FRAME_KEYS = ('view', 'data', 'timestamp_ms', 'kind')
PROPRIO_KEYS = ('joint_positions', 'joint_velocities', 'end_effector_pose', 'gripper')
MAX_FRAMES = 256


def _refuse(detail: str, **details: Any) -> DirectError:
    return DirectError('invalid_request', detail, details=details,
                       hint='send the robot-arm preset Observation: {images: [{view, data, '
                            'timestamp_ms}], proprioception: {joint_positions, gripper: [..]}, '
                            'instruction}')


def _plain(value: Any) -> Any:
    """Return numpy arrays and scalars (from msgpack) as lists and numbers."""
    tolist = getattr(value, 'tolist', None)
    return tolist() if callable(tolist) else value


def _newest_frames(images: Any) -> list[dict[str, Any]]:
    if not isinstance(images, list) or not 1 <= len(images) <= MAX_FRAMES:
        raise _refuse(f'images: expected a list of 1 to {MAX_FRAMES} frames')
    newest: dict[str, tuple[int, int, dict[str, Any]]] = {}
    for i, frame in enumerate(images):
        if not isinstance(frame, dict):
            raise _refuse(f'images[{i}]: expected a frame {{view, data, timestamp_ms}}')
        extra = sorted(str(k) for k in frame if k not in FRAME_KEYS)
        if extra:
            raise _refuse(f'images[{i}]: unknown fields {", ".join(shown(k) for k in extra)}')
        if frame.get('kind') not in (None, 'rgb', 'depth'):
            raise _refuse(f'images[{i}].kind: expected "rgb" or "depth"')
        if frame.get('kind') == 'depth':
            continue  # the reference policies read colour only
        view, stamp = frame.get('view'), frame.get('timestamp_ms')
        order = (stamp if isinstance(stamp, int) else -1, i)
        if not isinstance(view, str) or view not in newest or order >= newest[view][:2]:
            newest[str(view)] = (*order, {k: v for k, v in frame.items() if k != 'kind'})
    return [frame for _, _, frame in newest.values()]


def _proprioception(value: Any, profile: ModelProfile) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _refuse('proprioception: expected an object {joint_positions, gripper, ...}')
    extra = sorted(str(k) for k in value if k not in PROPRIO_KEYS)
    if extra:
        raise _refuse(f'proprioception: unknown fields {", ".join(shown(k) for k in extra)}; '
                      f'known: {", ".join(PROPRIO_KEYS)} (other vectors go in state)')
    prop = {k: _plain(v) for k, v in value.items() if v is not None}
    pose = prop.get('end_effector_pose')
    if pose is not None and (not isinstance(pose, list) or len(pose) != 7):
        raise _refuse('proprioception.end_effector_pose: expected exactly 7 numbers')
    gripper = prop.get('gripper')
    if gripper is not None:
        if not isinstance(gripper, list) or len(gripper) != 1:
            raise _refuse(f'proprioception.gripper: expected a list of 1 number for '
                          f"{profile.name}'s one gripper, e.g. [0.0]")
        prop['gripper'] = gripper[0]
    return prop


def preset_call(inputs: Any, profile: ModelProfile, seed: int | None) -> ActRequest:
    """Check robot-arm `inputs` for `profile` and decode them (DirectError invalid_request)."""
    inputs = _plain(inputs)
    if not isinstance(inputs, dict):
        raise _refuse(f'the inputs of {profile.name} are a robot-arm Observation object')
    extra = sorted(str(k) for k in inputs if k not in OBSERVATION_KEYS)
    if extra:
        raise _refuse(f'unknown observation fields {", ".join(shown(k) for k in extra)}')
    for name in ('images', 'proprioception', 'instruction'):
        if name not in inputs:
            raise _refuse(f'{name}: required')
    if not isinstance(inputs['instruction'], str):
        raise _refuse('instruction: expected a string')
    state = inputs.get('state')
    if state is not None and not isinstance(state, dict):
        raise _refuse('state: expected an object of named number lists')
    observation = {'images': _newest_frames(inputs['images']),
                   'proprioception': _proprioception(inputs['proprioception'], profile),
                   'instruction': inputs['instruction']}
    try:
        call = validate_act({'model': profile.id, 'observation': observation, 'seed': seed},
                            profile)
    except ApiError as exc:
        raise from_api_error(exc) from None
    _check_sizes(call, profile)
    return call


def _check_sizes(call: ActRequest, profile: ModelProfile) -> None:
    want = profile.image_size
    wrong = {view: f'{size[0]}x{size[1]}' for view, size in call.image_sizes.items()
             if size != want}
    if not wrong:
        return
    view = next(iter(wrong))
    raise DirectError(
        'invalid_request',
        f'camera {view!r} frame 0 is {wrong[view]}; the policy reads {want[0]}x{want[1]}',
        details={'sizes': wrong, 'expected': f'{want[0]}x{want[1]}'},
        hint=f'fit each frame on the robot before sending: sequence_ai.resize_image(frame, '
             f'{want[0]}, {want[1]}, mode="pad", filter="bilinear")'
             + (' (the same for each view in details.sizes)' if len(wrong) > 1 else ''))
