"""
One recording read into frames: a frame per command actually sent, on the control-rate grid.

A frame is what the robot was told at one control tick (`action`), the joints the robot
reported at that moment (`state`: the newest joint state stamped at or before it) and each
camera's newest frame stamped at or before it. Alignment is by stamps, never by order: a frame
whose picture is older than the pictures usually are (a request that came late) is counted in
`late_frames`, and where no picture or joint state was stamped yet the first one is used and
counted too; nothing is moved in time to hide it. Holds are not frames (nothing was commanded);
the underruns they mark are in the episode's figures.

The node's recordings give the arm message it published (positions) and /joint_states; plain
Python's give the action act() was given (the model's action space) and the joints each
observation reported.
"""

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sequence_ai_ros.record.episode_data import is_hold
from sequence_ai_ros.record.labels import Label, read_label
from sequence_ai_ros.record.reader import (
    EpisodeFileContents,
    json_fields,
    RecordedMessage,
    stream_messages,
)
from sequence_ai_ros.record.schemas import (
    ACTION,
    ANSWER,
    ARM_COMMAND,
    GRIPPER_COMMAND,
    HOLD,
    IMAGE_TOPIC,
    JOINT_STATES,
    OBSERVATION,
    OUTCOME,
)

IMAGE_PREFIX = IMAGE_TOPIC.split('{')[0]
# A picture older than this many of the usual intervals between pictures came late.
LATE_INTERVALS = 1.5
# A stamp further than this from when it was recorded is from another clock: the log time
# stands in for it (counted in `restamped`).
CLOCK_MISMATCH_S = 60.0


class EpisodeUnusable(ValueError):
    """A recording that gives no frames (no command sent, no camera frame)."""


@dataclass
class Frame:
    """One control tick: the command sent, the joints then, each view's picture (JPEG bytes)."""

    time: float
    action: list[float]
    state: list[float]
    images: dict[str, bytes]


@dataclass
class EpisodeFrames:
    """A recording's frames and what the dataset says of its episode."""

    path: Path
    control_hz: float
    frames: list[Frame]
    action_names: list[str]
    state_names: list[str]
    views: list[str]
    instruction: str
    model: str
    action_space: str
    source: str  # 'node' or 'client'
    outcome: dict[str, Any] = field(default_factory=dict)
    label: Label | None = None
    holds: int = 0
    late_frames: int = 0
    image_max_age_s: float = 0.0
    restamped: int = 0
    truncated: bool = False


@dataclass
class _Gathered:
    commands: list[tuple[float, list[float]]] = field(default_factory=list)
    gripper: list[tuple[float, float]] = field(default_factory=list)
    states: list[tuple[float, list[float]]] = field(default_factory=list)
    state_names: list[str] = field(default_factory=list)
    arm_names: list[str] = field(default_factory=list)
    images: dict[str, list[tuple[float, bytes]]] = field(default_factory=dict)
    instruction: str = ''
    model: str = ''
    action_space: str = ''
    action_dim: int = 0
    control_hz: float = 0.0
    outcome: dict[str, Any] = field(default_factory=dict)
    holds: int = 0
    restamped: int = 0
    client_actions: bool = False


def read_frames(path: Path, fps: float | None = None) -> EpisodeFrames:
    """
    Read one recording (streamed: its messages are not kept) into frames at `fps`.

    `fps` defaults to the episode's control rate; a lower one takes every n-th command, a
    higher one is refused (there are no commands between the ticks to give).
    """
    contents = EpisodeFileContents(Path(path))
    found = _Gathered()
    for message in stream_messages(contents):
        _gather(found, message)
    return _frames(contents, found, fps)


def _gather(found: _Gathered, message: RecordedMessage) -> None:
    topic, msg, t = message.topic, message.message, message.time
    if topic == ARM_COMMAND:
        points = getattr(msg, 'points', None)
        if points is None:
            found.commands.append((t, [float(v) for v in msg.data]))
        elif points and not is_hold(tuple(points[0].velocities)):
            found.commands.append((t, [float(v) for v in points[0].positions]))
            found.arm_names = found.arm_names or list(msg.joint_names)
    elif topic == ACTION:
        found.client_actions = True
        found.commands.append((t, [float(v) for v in msg.data]))
    elif topic == GRIPPER_COMMAND:
        value = _gripper_value(msg)
        if value is not None:
            found.gripper.append((t, value))
    elif topic == JOINT_STATES:
        found.state_names = found.state_names or list(msg.name)
        if list(msg.name) == found.state_names:
            found.states.append((_stamp(found, msg, t), [float(v) for v in msg.position]))
    elif topic.startswith(IMAGE_PREFIX):
        view = topic[len(IMAGE_PREFIX):]
        found.images.setdefault(view, []).append((_stamp(found, msg, t), bytes(msg.data)))
    elif topic == OBSERVATION:
        _observation(found, _json(msg), t)
    elif topic == ANSWER and not found.action_space:
        fields = _json(msg)
        found.action_space = str(fields.get('action_space', ''))
        found.action_dim = int(fields.get('action_dim') or 0)
        found.control_hz = float(fields.get('control_frequency_hz') or 0.0)
        found.model = found.model or str(fields.get('model', ''))
    elif topic == HOLD:
        found.holds += 1
    elif topic == OUTCOME and not found.outcome:
        found.outcome = _json(msg)


def _observation(found: _Gathered, fields: dict[str, Any], t: float) -> None:
    found.instruction = found.instruction or str(fields.get('instruction', ''))
    proprio = fields.get('proprioception') or {}
    joints = proprio.get('joint_positions')
    if joints and not found.state_names:  # plain Python: what each observation reported
        gripper = proprio.get('gripper')
        values = [float(v) for v in joints] + ([float(gripper)] if gripper is not None else [])
        found.states.append((t, values))


def _frames(contents: EpisodeFileContents, found: _Gathered,
            fps: float | None) -> EpisodeFrames:
    path, metadata = contents.path, contents.metadata
    if not found.commands:
        raise EpisodeUnusable(f'{path}: no command was sent in this episode')
    if not found.images:
        raise EpisodeUnusable(f'{path}: no camera frame was recorded in this episode')
    control_hz = found.control_hz or _rate(found.commands)
    if fps is not None and fps > control_hz * 1.001:
        raise EpisodeUnusable(f"{path}: --fps {fps:g} is above the episode's control rate "
                              f'{control_hz:g} Hz: there are no commands between its ticks')
    step = control_hz / (fps or control_hz)
    picks = sorted({round(k * step) for k in range(int(len(found.commands) / step) + 1)
                    if round(k * step) < len(found.commands)})
    views = sorted(found.images)
    found.states.sort(key=lambda item: item[0])
    for pictures in found.images.values():
        pictures.sort(key=lambda item: item[0])
    state_times = [t for t, _ in found.states]
    image_times = {view: [t for t, _ in found.images[view]] for view in views}
    usual = {view: _median_gap(image_times[view]) for view in views}
    gripper_times = [t for t, _ in found.gripper]
    to_model = _gripper_scale(metadata)
    same_tick = 0.5 / control_hz  # the node sends the gripper's goal in the arm's tick
    frames, late, max_age = [], 0, 0.0
    for index in picks:
        t, action = found.commands[index]
        if found.gripper and not found.client_actions:
            at = max(0, bisect_right(gripper_times, t + same_tick) - 1)
            action = action + [to_model(found.gripper[at][1])]
        state_at = bisect_right(state_times, t) - 1
        state = found.states[max(0, state_at)][1] if found.states else []
        images, is_late = {}, state_at < 0 and bool(found.states)
        for view in views:
            at = bisect_right(image_times[view], t) - 1
            stamp, data = found.images[view][max(0, at)]
            age = t - stamp
            max_age = max(max_age, age)
            is_late = is_late or at < 0 or (usual[view] > 0 and age > LATE_INTERVALS * usual[view])
            images[view] = data
        late += is_late
        frames.append(Frame(t, action, state, images))
    model = str(metadata.get('model') or found.model).rsplit('/', 1)[-1]
    return EpisodeFrames(
        path=path, control_hz=control_hz, frames=frames,
        action_names=_action_names(found), state_names=_state_names(found, metadata),
        views=views, instruction=found.instruction, model=model,
        action_space=found.action_space if found.client_actions else 'joint_position',
        source='client' if found.client_actions else 'node', outcome=found.outcome,
        label=read_label(path), holds=found.holds, late_frames=late,
        image_max_age_s=max_age, restamped=found.restamped, truncated=contents.truncated)


def _action_names(found: _Gathered) -> list[str]:
    width = len(found.commands[0][1])
    if found.client_actions:
        return [f'joint_{i + 1}' for i in range(width - 1)] + ['gripper'] \
            if width == found.action_dim and width > 1 else [f'a{i}' for i in range(width)]
    names = found.arm_names if len(found.arm_names) == width else \
        [f'joint_{i + 1}' for i in range(width)]
    return names + (['gripper'] if found.gripper else [])


def _state_names(found: _Gathered, metadata: dict[str, str]) -> list[str]:
    if found.state_names:
        return found.state_names
    width = len(found.states[0][1]) if found.states else 0
    names = [str(n) for n in json_fields(metadata.get('parameters', '{}')).get('joint_names')
             or ()]
    arm = names if len(names) in (width, width - 1) else \
        [f'joint_{i + 1}' for i in range(width - 1)]
    return (arm + ['gripper'])[:width]


def _gripper_value(msg: Any) -> float | None:
    """Return the joint position a gripper command asked for (a message, or a goal's JSON)."""
    points = getattr(msg, 'points', None)
    if points is not None:
        return float(points[0].positions[0]) if points and points[0].positions else None
    data = getattr(msg, 'data', None)
    if isinstance(data, str):
        value = json_fields(data).get('position')
        if isinstance(value, list):  # ParallelGripperCommand: a JointState's positions
            value = value[0] if value else None
        return float(value) if isinstance(value, (int, float)) else None
    return float(data[0]) if data is not None and len(data) else None


def _gripper_scale(metadata: dict[str, str]) -> Callable[[float], float]:
    """Return joint position -> the model's 0 (open) .. 1 (closed), as the node's GripperScale."""
    parameters = json_fields(metadata.get('parameters', '{}'))
    opened = parameters.get('gripper_open_position')
    closed = parameters.get('gripper_closed_position')
    if not isinstance(opened, (int, float)) or not isinstance(closed, (int, float)) \
            or opened == closed:
        return float  # no scale recorded: the joint's own units
    return lambda position: (position - opened) / (closed - opened)


def _stamp(found: _Gathered, msg: Any, logged: float) -> float:
    stamp = msg.header.stamp
    t = float(stamp.sec + stamp.nanosec * 1e-9)
    if t <= 0 or abs(t - logged) > CLOCK_MISMATCH_S:
        found.restamped += 1
        return logged
    return t


def _rate(commands: list[tuple[float, list[float]]]) -> float:
    gap = _median_gap([t for t, _ in commands])
    return round(1.0 / gap, 3) if gap > 0 else 1.0


def _median_gap(times: list[float]) -> float:
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    return gaps[len(gaps) // 2] if gaps else 0.0


def _json(msg: Any) -> dict[str, Any]:
    return json_fields(msg.data)
