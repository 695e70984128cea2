"""
POST /v1/act request checking: every refusal names the field it is about.

400 for a body that is not a JSON object, 404 for an unknown model, 422 for everything about
the observation and options. Python's json accepts NaN and Infinity; they are refused here.

Before parsing, the body's shape is bounded: a few bytes of JSON such as `{},` become a Python
object of about 60 bytes, so 8 MiB of them would cost the gateway half a gigabyte. At most
MAX_JSON_VALUES arrays, objects and items (413) and MAX_JSON_DEPTH levels of nesting (400) are
read; a real observation holds about a hundred values and five levels.
"""

from dataclasses import dataclass, field
import json
import re
from typing import Any

from PIL import Image

from .catalogue import Catalogue, ModelProfile
from .errors import ApiError, shown
from .fields import int_option, invalid, json_object, kind, number, numbers
from .images import decode_frame, ImageError
from .prefix import OPTIONS as PREFIX_OPTIONS
from .prefix import parse_prefix, Prefix

KNOWN_OPTIONS = ('action_horizon', 'seed', 'robot', *PREFIX_OPTIONS)
_REQUEST_KEYS = ('model', 'observation')
MAX_JSON_VALUES = 10_000
MAX_JSON_DEPTH = 64
# Python's int() is quadratic in the digit count; a float overflows long before this anyway.
MAX_NUMBER_DIGITS = 1000
# Outside strings, the characters that open a value or separate two.
_STRUCTURE = re.compile(r'["\[\]{},]')


@dataclass
class ActRequest:
    """A validated /v1/act call: the profile, decoded frames and proprioception, options."""

    profile: ModelProfile
    images: dict[str, Image.Image]
    image_sizes: dict[str, tuple[int, int]]
    timestamps_ms: dict[str, int | None]
    joint_positions: list[float]
    joint_velocities: list[float] | None
    end_effector_pose: list[float] | None
    gripper: float | None
    instruction: str
    horizon: int
    seed: int | None
    options: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    prefix: Prefix | None = None  # real-time chunking: the actions that play meanwhile

    def observation(self) -> dict[str, Any]:
        """Return the observation a policy plug-in receives (frames decoded to RGB images)."""
        proprioception: dict[str, Any] = {'joint_positions': list(self.joint_positions)}
        for name in ('joint_velocities', 'end_effector_pose', 'gripper'):
            if getattr(self, name) is not None:
                proprioception[name] = getattr(self, name)
        return {
            'images': dict(self.images),
            'timestamps_ms': dict(self.timestamps_ms),
            'proprioception': proprioception,
            'instruction': self.instruction,
        }


def _escaped(text: str, start: int, quote: int) -> bool:
    """Whether the quote at `quote` follows an odd run of backslashes (counted from `start`)."""
    run, end = 0, quote
    while end > start:
        # Slices keep the count at C speed even for a string of a million backslashes.
        piece = text[max(start, end - 4096):end]
        kept = len(piece.rstrip('\\'))
        run += len(piece) - kept
        if kept:
            break
        end -= len(piece)
    return run % 2 == 1


def _string_end(text: str, start: int) -> tuple[int, int]:
    """Index after the string whose opening quote is before `start`, and its escaped quotes."""
    escaped = 0
    while True:
        quote = text.find('"', start)
        if quote < 0:
            return len(text), escaped  # unterminated: json.loads will say so
        if not _escaped(text, start, quote):
            return quote + 1, escaped
        escaped += 1
        start = quote + 1


def check_shape(text: str) -> None:
    """Raise ApiError 413 for too many JSON values, 400 for too deep nesting (before parsing)."""
    values = depth = 0
    position = 0
    while True:
        found = _STRUCTURE.search(text, position)
        if found is None:
            return
        char, position = found.group(), found.end()
        if char == '"':
            # Escaped quotes cost a Python step each, so they count against the budget too.
            position, escaped = _string_end(text, position)
            values += escaped
        elif char in '[{':
            depth += 1
            values += 1
            if depth > MAX_JSON_DEPTH:
                raise ApiError(400, f'request body is nested too deeply: more than '
                                    f'{MAX_JSON_DEPTH} levels of arrays and objects')
        elif char == ',':
            values += 1
        else:
            depth -= 1
        if values > MAX_JSON_VALUES:
            raise ApiError(413, f'request body holds more than the limit of {MAX_JSON_VALUES} '
                                'JSON values (arrays, objects and their items); an observation '
                                'needs about a hundred')


def _bounded_int(literal: str) -> int:
    if len(literal.lstrip('-')) > MAX_NUMBER_DIGITS:
        raise ValueError(f'a number has {len(literal.lstrip("-"))} digits, more than the '
                         f'{MAX_NUMBER_DIGITS} read')
    return int(literal)


def parse_json(body: bytes | bytearray) -> dict[str, Any]:
    """Parse the body as a JSON object, or raise ApiError 400 saying what is wrong with it."""
    if not body:
        raise ApiError(400, 'request body is empty; expected a JSON object')
    try:
        # JSON between systems is UTF-8 (RFC 8259); json.loads(bytes) would also take UTF-16
        # and UTF-32. A byte order mark is tolerated, as the RFC allows.
        text = body.decode('utf-8-sig')
    except UnicodeDecodeError as exc:
        raise ApiError(400, f'request body is not UTF-8 text (byte 0x{body[exc.start]:02x} at '
                            f'offset {exc.start})') from None
    check_shape(text)
    try:
        payload = json.loads(text, parse_int=_bounded_int)
    except RecursionError:
        raise ApiError(400, 'request body is nested too deeply') from None
    except ValueError as exc:
        raise ApiError(400, f'request body is not valid JSON: {exc}') from None
    if not isinstance(payload, dict):
        raise ApiError(400, f'request body must be a JSON object, got {kind(payload)}')
    return payload


def lookup_model(payload: dict[str, Any], catalogue: Catalogue) -> ModelProfile:
    """Find the profile the request names, else ApiError 422 (no model) or 404 (unknown model)."""
    model = payload.get('model')
    if not isinstance(model, str) or not model:
        raise invalid(f'model: expected a model id string, got {kind(model)}')
    profile = catalogue.get(model)
    if profile is None:
        known = ', '.join(p.id for p in catalogue.profiles)
        raise ApiError(404, f'model: {shown(model, 200)} not found; known models: {known}')
    return profile


def _images(value: Any, profile: ModelProfile, request: dict[str, Any]) -> None:
    if not isinstance(value, list):
        raise invalid(f'observation.images: expected an array of frames, got {kind(value)}')
    for i, frame in enumerate(value):
        where = f'observation.images[{i}]'
        frame = json_object(frame, where)
        view = frame.get('view')
        if not isinstance(view, str):
            raise invalid(f'{where}.view: expected a camera view name, got {kind(view)}')
        if view not in profile.camera_views:
            raise invalid(f'{where}.view: {shown(view)} is not a camera view of '
                          f'{profile.name}; expected one of {", ".join(profile.camera_views)}')
        if view in request['images']:
            raise invalid(f'{where}.view: {shown(view)} appears more than once')
        stamp = frame.get('timestamp_ms')
        if stamp is not None:
            stamp = int(number(stamp, f'{where}.timestamp_ms'))
        data = frame.get('data')
        if not isinstance(data, str):
            raise invalid(f'{where}.data: expected a base64 string, got {kind(data)}')
        try:
            image, size = decode_frame(data)
        except ImageError as exc:
            raise invalid(f'{where}.data: {exc}') from None
        request['images'][view], request['image_sizes'][view] = image, size
        request['timestamps_ms'][view] = stamp
        if size != profile.image_size:
            request['warnings'].append(
                f'{where}: {size[0]}x{size[1]} frame; {profile.name} reads '
                f'{profile.image_size[0]}x{profile.image_size[1]}, so resizing on the robot '
                'saves bandwidth and latency')


def validate_act(payload: dict[str, Any], profile: ModelProfile) -> ActRequest:
    """
    Check and decode the observation and options of a /v1/act body (ApiError 422 if bad).

    Runs off the event loop: it decodes every frame.
    """
    observation = json_object(payload.get('observation'), 'observation')
    fields: dict[str, Any] = {'images': {}, 'image_sizes': {}, 'timestamps_ms': {},
                              'warnings': []}
    if 'images' not in observation:
        raise invalid('observation.images: required (an array of frames, may be empty)')
    _images(observation['images'], profile, fields)
    prop = json_object(observation.get('proprioception'), 'observation.proprioception')
    where = 'observation.proprioception'
    if prop.get('joint_positions') is None:
        raise invalid(f'{where}.joint_positions: required ({profile.joint_count} numbers)')
    joints = numbers(prop['joint_positions'], f'{where}.joint_positions', profile.joint_count)
    velocities = prop.get('joint_velocities')
    if velocities is not None:
        velocities = numbers(velocities, f'{where}.joint_velocities', profile.joint_count)
    pose = prop.get('end_effector_pose')
    if pose is not None:
        pose = numbers(pose, f'{where}.end_effector_pose')
    gripper = prop.get('gripper')
    if gripper is not None:
        gripper = number(gripper, f'{where}.gripper')
    instruction = observation.get('instruction', '')
    if instruction is None:
        instruction = ''
    if not isinstance(instruction, str):
        raise invalid(f'observation.instruction: expected a string, got {kind(instruction)}')

    horizon = profile.action_horizon
    if payload.get('action_horizon') is not None:
        horizon = int_option(payload['action_horizon'], 'action_horizon', 1, horizon)
    seed = payload.get('seed')
    if seed is not None:
        seed = int_option(seed, 'seed', -(2 ** 63), 2 ** 63 - 1)
    robot = payload.get('robot')
    if robot is not None and robot != profile.robot:
        got = shown(robot) if isinstance(robot, str) else kind(robot)
        raise invalid(f'robot: {profile.name} drives {profile.robot!r}, got {got}')
    prefix = parse_prefix(payload, profile.action_dim, horizon)
    options = {k: v for k, v in payload.items() if k not in _REQUEST_KEYS}
    ignored = sorted(k for k in options if k not in KNOWN_OPTIONS)
    if ignored:
        fields['warnings'].append(
            f'options not used by the local gateway: {", ".join(shown(k) for k in ignored[:8])}')
    return ActRequest(profile=profile, joint_positions=joints, joint_velocities=velocities,
                      end_effector_pose=pose, gripper=gripper, instruction=instruction,
                      horizon=horizon, seed=seed, options=options, prefix=prefix, **fields)
