"""
The policy node's episode recording: one file per episode, never waited for on the tick.

A file is opened when an episode starts and finished by the writer thread after its outcome.
Messages the node published or received are queued as they are; rclpy serializes them on the
writer thread. When recording cannot happen (switched off, the MCAP packages missing, a
directory it cannot write) `problem` says why, once, and the node runs as before.
"""

from collections.abc import Callable
import os
from pathlib import Path
from typing import Any

from .dependency import RecordingUnavailable, require_mcap
from .episode import engine_join, EpisodeRecorder
from .labels import Label, label_episode, LabelError
from .run_recording import RecordingObserver
from .schemas import ARM_COMMAND, DEFINITIONS, GRIPPER_COMMAND, JOINT_STATE, JOINT_STATES
from .size_cap import enforce_cap, episode_path, writable_directory

# Where episodes go unless record_dir says: beside ROS's own logs.
DEFAULT_SUBDIR = 'sequence_ai/episodes'


def default_directory() -> Path:
    """Return $ROS_HOME/sequence_ai/episodes ($ROS_HOME defaults to ~/.ros)."""
    home = os.environ.get('ROS_HOME') or os.path.join(os.path.expanduser('~'), '.ros')
    return Path(home) / DEFAULT_SUBDIR


def type_name(message: Any) -> str:
    """Return a ROS 2 message's type name, e.g. 'trajectory_msgs/msg/JointTrajectory'."""
    return f'{type(message).__module__.split(".")[0]}/msg/{type(message).__name__}'


class NodeRecording:
    """The node's recorder across episodes; `recorder` is the running episode's, or None."""

    CLOSE_AT_SHUTDOWN_S = 3.0  # a node shutting down waits this long for its last file

    def __init__(self, enabled: bool, directory: str, max_mb: float) -> None:
        self.directory = Path(os.path.expanduser(directory)) if directory else \
            default_directory()
        self.max_bytes = int(max_mb * 1024 * 1024)
        self.recorder: EpisodeRecorder | None = None
        self._closing: EpisodeRecorder | None = None  # the last episode's, while it finishes
        self.observer = RecordingObserver(lambda: self.recorder)
        self.last_path: Path | None = None
        self.dropped = 0  # over the node's life, finished episodes and the running one
        self.removed = 0
        self.problem = '' if enabled else 'off (parameter record is false)'
        if enabled:
            try:
                require_mcap()
            except RecordingUnavailable as exc:
                self.problem = f'off: {exc}'
        self._serialize: Callable[[Any], bytes] | None = None
        self._joins: dict[str, int] = {}

    @property
    def status(self) -> str:
        """Say where the running (or last) episode is recorded, or why nothing is."""
        if self.problem:
            return self.problem
        if self.recorder is not None:
            return f'recording {self.recorder.path}'
        return f'last: {self.last_path}' if self.last_path else f'on, into {self.directory}'

    @property
    def dropped_now(self) -> int:
        """Messages dropped so far, including the running episode's."""
        return self.dropped + (self.recorder.dropped if self.recorder is not None else 0)

    def start(self, label: str, metadata: dict[str, str]) -> str:
        """Open the episode's file; return a problem to log once ('' when recording)."""
        self.finish(None)
        if self.problem:
            return ''
        problem = writable_directory(self.directory)
        if not problem:
            path = episode_path(self.directory, label)
            try:
                self.recorder = EpisodeRecorder.create(path, metadata)
            except (OSError, RecordingUnavailable) as exc:
                problem = f'cannot record into {path}: {exc}'
        if problem:
            self.problem = f'off: {problem}'
            return self.problem
        assert self.recorder is not None
        self.removed += len(enforce_cap(self.directory, self.max_bytes,
                                        keep=(self.recorder.path,)))
        self._joins = {}
        if self._serialize is None:
            from rclpy.serialization import serialize_message
            self._serialize = serialize_message
        return ''

    def label(self, success: bool, notes: str = '') -> tuple[Label | None, str]:
        """
        Label the running episode, else the last one (~/label_episode); (label, problem).

        The label goes into the recording's sidecar (labels.py) whether the writer is still
        finishing the file or not. Without a recording the problem says why, and nothing is
        written.
        """
        path = self.recorder.path if self.recorder is not None else self.last_path
        if path is None:
            return None, self.problem or 'no episode recorded yet'
        try:
            return label_episode(path, success, notes), ''
        except (LabelError, OSError) as exc:
            return None, f'cannot label {path}: {exc}'

    def message(self, topic: str, message: Any) -> None:
        """Record a message as published or received (serialized on the writer thread)."""
        recorder, name = self.recorder, type_name(message)
        if recorder is not None and name in DEFINITIONS:
            recorder.message(topic, name, message, encode=self._serialize)

    def command(self, message: Any) -> None:
        """Record an arm command exactly as published; the writer may write its batch now."""
        self.message(ARM_COMMAND, message)
        recorder = self.recorder
        if recorder is not None:
            # The tick's last act: the batch runs while the executor waits for the next one.
            recorder.writer.wake()

    def gripper_command(self, message: Any) -> None:
        """Record a gripper command as published; an action goal as its fields in JSON."""
        if self.recorder is None:
            return
        if type_name(message) in DEFINITIONS:
            self.message(GRIPPER_COMMAND, message)
            return
        command = message.command
        package, kind = type(message).__module__.split('.')[:2]
        fields: dict[str, Any] = {'goal': f'{package}/{kind}/{type(message).__name__}'}
        for name in ('name', 'position', 'velocity', 'effort', 'max_effort'):
            value = getattr(command, name, None)
            if value is not None:
                fields[name] = value if isinstance(value, (int, float)) else list(value)
        self.recorder.json(GRIPPER_COMMAND, fields)

    def joint_state(self, message: Any) -> None:
        """Record /joint_states as received."""
        if self.recorder is not None:
            self.recorder.message(JOINT_STATES, JOINT_STATE, message, encode=self._serialize)

    def hold(self, reason: str, positions: Any) -> None:
        """Record a hold and why."""
        if self.recorder is not None:
            self.recorder.hold(reason, [float(p) for p in positions or ()])

    def join(self, event: dict[str, Any], engine: Any) -> None:
        """Record a chunk joined: the node's ~/chunks event with the engine's account."""
        if self.recorder is not None:
            fields = dict(engine_join(engine, self._joins, engine.stats.prefixes_sent > 0),
                          **event)
            self._joins = dict(engine.stats.joins)
            self.recorder.join(fields)

    def finish(self, summary: dict[str, Any] | None, wait_s: float = 0.0) -> None:
        """Record the outcome and let the writer finish the file (waiting at most `wait_s`)."""
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            # The episode ended on the tick, which does not wait: at shutdown its writer gets
            # to finish the file before the process exits.
            if self._closing is not None and wait_s > 0:
                self._closing.close(wait_s)
            self._closing = None
            return
        if summary is not None:
            recorder.outcome(summary)
        recorder.close(wait_s)
        self._closing = recorder if wait_s <= 0 else None
        self.dropped += recorder.dropped
        self.last_path = recorder.path
