"""
An episode file as the picture and the outcome table read it (episode_data.Recording).

The node's files and run(record=)'s differ in what stands for a command and a measurement:
the node's carry the arm messages it published and /joint_states as received; plain Python's
carry the actions act() was given and the joints each observation reported.
"""

from dataclasses import dataclass, field
from pathlib import Path
import re
from typing import Any

from sequence_ai_ros.contract.action_spaces import is_absolute_space

from .episode_data import ARM_JOINTS, Recording
from .labels import read_label
from .reader import EpisodeFileContents, json_fields, read_episode, RecordedMessage
from .schemas import (
    ACTION,
    ANSWER,
    ARM_COMMAND,
    ERROR,
    HOLD,
    JOIN,
    JOINT_STATES,
    OBSERVATION,
    OUTCOME,
)

# size_cap.episode_path's names: 20261206T034208_609456Z_<label>.mcap
_NAME = re.compile(r'^\d{8}T(\d\d)(\d\d)(\d\d)_\d+Z_(.+)$')


def episode_label(path: Path) -> str:
    """Return a short label for an episode file: '<label> hh:mm:ss' (UTC) for the node's."""
    match = _NAME.match(Path(path).stem)
    return f'{match[4]} {match[1]}:{match[2]}:{match[3]}' if match else Path(path).stem


@dataclass
class RecordedEpisode:
    """One episode file read for the report (summary.Run's fields, and what the file says)."""

    label: str
    data: Recording
    contents: EpisodeFileContents
    parameters: dict[str, Any] = field(default_factory=dict)
    final_distance: float | None = None
    prefetch: bool = True
    namespace: str = ''

    @property
    def join(self) -> str:
        """Return the join mode the episode played with (its joins', else its parameters')."""
        joins = self.contents.on(JOIN)
        if joins:
            return str(_json(joins[0]).get('mode', 'append'))
        playback = json_fields(self.contents.metadata.get('playback', '{}'))
        # 'join': the field's name in files recorded before PlaybackOptions named it join_mode.
        return str(self.parameters.get('join_mode') or playback.get('join_mode')
                   or playback.get('join') or 'append')

    @property
    def chunk_s(self) -> float | None:
        """Return the seconds one chunk covers (its first answer's), None without an answer."""
        for message in self.contents.on(ANSWER):
            covers = _json(message).get('covers_seconds')
            if isinstance(covers, (int, float)):
                return float(covers)
        return None

    @property
    def action_space(self) -> str:
        """Return the action space of the episode's chunks ('' without one)."""
        for message in self.contents.on(ANSWER):
            return str(_json(message).get('action_space', ''))
        return ''

    def describe(self) -> list[str]:
        """Return the lines the report prints about the episode before its table."""
        contents = self.contents
        topics = ', '.join(f'{topic} {count}'
                           for topic, count in sorted(contents.topics().items()))
        cut = ' (cut short: the writer stopped before closing it; read up to its last flush)' \
            if contents.truncated else ''
        lines = [f'{contents.path}: {len(contents.messages)} messages{cut}', f'  {topics}']
        label = read_label(contents.path)
        if label is not None:
            notes = f': {label.notes}' if label.notes else ''
            lines.append(f'  labelled {"success" if label.success else "failure"} '
                         f'({label.labelled_at}){notes}')
        return lines + [f'  request failed: {error}' for _, error in self.data.errors[:5]]


def load_episode(path: Path, label: str = '') -> RecordedEpisode:
    """Read an episode file into a RecordedEpisode."""
    contents = read_episode(path)
    parameters = json_fields(contents.metadata.get('parameters', '{}'))
    names = [str(n) for n in parameters.get('joint_names') or ()]
    data = Recording()
    data.arm_joints = len(names) or ARM_JOINTS
    for message in contents.messages:
        _add(data, message, names)
    if not data.joint_states:  # plain Python: the joints each observation reported
        for message in contents.on(OBSERVATION):
            joints = _json(message).get('proprioception', {}).get('joint_positions')
            if joints:
                data.joint_states.append((message.time, tuple(float(v) for v in joints)))
    if not names and data.joint_states:
        data.arm_joints = min(ARM_JOINTS, len(data.joint_states[0][1]))
    episode = RecordedEpisode(label or episode_label(path), data, contents, parameters)
    space = episode.action_space
    if contents.on(ACTION) and space and not is_absolute_space(space):
        data.command_units = f'the actions act() was given ({space}), not positions'
    episode.prefetch = bool(json_fields(contents.metadata.get('playback', '{}')).get(
        'prefetch', parameters.get('prefetch', True)))
    return episode


def _add(data: Recording, message: RecordedMessage, names: list[str]) -> None:
    topic, msg, t = message.topic, message.message, message.time
    if topic == ARM_COMMAND:
        points = getattr(msg, 'points', None)
        if points is not None:
            if points:
                data.commands.append((t, tuple(points[0].positions),
                                      tuple(points[0].velocities)))
        else:
            data.commands.append((t, tuple(msg.data), ()))
    elif topic == ACTION:
        data.commands.append((t, tuple(msg.data), ()))
    elif topic == JOINT_STATES:
        index = {name: i for i, name in enumerate(msg.name)}
        if names and all(name in index for name in names):
            data.joint_states.append((t, tuple(msg.position[index[n]] for n in names)))
        elif not names:
            data.joint_states.append((t, tuple(msg.position)))
    elif topic == JOIN:
        data.chunks.append((t, _json(message)))
    elif topic == HOLD:
        data.holds.append((t, str(_json(message).get('reason', ''))))
    elif topic == ERROR:
        fields = _json(message)
        data.errors.append((t, f'{fields.get("error")}: {fields.get("message")}'))
    elif topic == OUTCOME and data.outcome is None:
        data.outcome, data.outcome_time = _json(message), t


def _json(message: RecordedMessage) -> dict[str, Any]:
    return json_fields(message.message.data)
