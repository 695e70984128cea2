"""
EpisodeRecorder: what one episode saw, asked, got and did, written to an MCAP file.

The same recorder serves the plain-Python client (run(record=...): messages encoded from their
fields by cdr.py) and the ROS node (the exact messages it published, serialized by rclpy).
Every method only queues: encoding and writing happen on the RecordWriter's thread.
"""

import base64
import binascii
from collections.abc import Callable, Sequence
import threading
import time
from typing import Any

from sequence_ai_ros.contract.key_masking import redact

from . import cdr
from .mcap_file import EpisodeFile
from .schemas import (
    ACTION,
    ANSWER,
    COMPRESSED_IMAGE,
    ERROR,
    FLOAT64_ARRAY,
    HOLD,
    image_topic,
    JOIN,
    JOINT_STATE,
    JOINT_STATES,
    OBSERVATION,
    OUTCOME,
    STRING,
)
from .writer_thread import RecordWriter


def image_format(data: bytes) -> str:
    """Return the CompressedImage format of encoded image bytes: 'jpeg', 'png' or ''."""
    if data[:3] == b'\xff\xd8\xff':
        return 'jpeg'
    if data[:8] == b'\x89PNG\r\n\x1a\n':
        return 'png'
    return ''


class EpisodeRecorder:
    """Queue an episode's events for its file; every method is quick and never raises."""

    def __init__(self, writer: RecordWriter,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.writer = writer
        self.path = writer.path
        self._clock = clock
        self._lock = threading.Lock()
        self._requests = 0
        self._pending: dict[int, list[int]] = {}  # id(observation) -> its request numbers

    @classmethod
    def create(cls, path: Any, metadata: dict[str, str] | None = None,
               **writer_options: Any) -> 'EpisodeRecorder':
        """Create the file at `path` (its metadata record written first) and its writer."""
        return cls(RecordWriter(EpisodeFile(path, metadata), **writer_options))

    @property
    def dropped(self) -> int:
        """Messages lost because the disk could not keep up (or recording failed)."""
        return self.writer.dropped

    def close(self, timeout_s: float = 5.0) -> bool:
        """Write what is queued and finish the file; False if that did not end in time."""
        return self.writer.close(timeout_s)

    # -- what was sent and what came back -------------------------------------------------------

    def observation(self, observation: Any) -> int:
        """Record an observation about to be sent (frames as CompressedImage); its number."""
        now = self._clock()
        with self._lock:
            self._requests += 1
            number = self._requests
            self._pending.setdefault(id(observation), []).append(number)
        images = []
        for frame in observation.images:
            try:
                data = base64.b64decode(frame.data, validate=True)
            except (binascii.Error, ValueError):
                data = b''
            fmt = image_format(data)
            stamp = now if frame.timestamp_ms is None else frame.timestamp_ms * 1_000_000
            images.append({'view': frame.view, 'timestamp_ms': frame.timestamp_ms,
                           'format': fmt, 'bytes': len(data)})
            self.writer.put(image_topic(frame.view), COMPRESSED_IMAGE,
                            (stamp, frame.view, fmt, data), now, size=len(data),
                            encode=_compressed_image)
        proprio = {k: v for k, v in vars(observation.proprioception).items() if v is not None}
        self._json(OBSERVATION, {'request': number, 'send_time_ns': now,
                                 'instruction': redact(observation.instruction),
                                 'proprioception': proprio, 'images': images}, now)
        return number

    def answer(self, observation: Any, prediction: Any, round_trip_s: float) -> None:
        """Record the answer to `observation`'s request: its chunk, timing and RTC report."""
        chunk = prediction.action_chunk
        self._json(ANSWER, {
            'request': self._request_of(observation), 'id': prediction.id,
            'model': prediction.model, 'round_trip_s': round_trip_s, 'steps': len(chunk),
            'control_frequency_hz': chunk.control_frequency_hz,
            'action_space': chunk.action_space, 'action_dim': chunk.action_dim,
            'covers_seconds': chunk.covers_seconds, 'perf': prediction.perf,
            'usage': prediction.usage, 'warnings': prediction.warnings, 'rtc': prediction.rtc,
            'chunk': chunk.steps})

    def error(self, observation: Any, error: BaseException) -> None:
        """Record a failed request (the message redacted: a server may quote a key)."""
        self._json(ERROR, {'request': self._request_of(observation),
                           'error': type(error).__name__,
                           'message': redact(str(getattr(error, 'message', error))),
                           'status': getattr(error, 'status', None)})

    def join(self, event: dict[str, Any]) -> None:
        """Record a chunk joined into the plan (join_event(): mode, delay, seam, RTC)."""
        self._json(JOIN, event)

    # -- what the robot was told and what it said ----------------------------------------------

    def message(self, topic: str, type_name: str, message: Any,
                encode: Callable[[Any], bytes] | None = None) -> None:
        """Record a message as published: its bytes, or the object `encode` serializes."""
        self.writer.put(topic, type_name, message, self._clock(), encode=encode, size=256)

    def action(self, values: Sequence[float]) -> None:
        """Record an action passed to the robot (plain Python's act())."""
        self.writer.put(ACTION, FLOAT64_ARRAY, list(values), self._clock(),
                        encode=cdr.float64_array, size=8 * len(values))

    def json(self, topic: str, fields: dict[str, Any]) -> None:
        """Record `fields` as a std_msgs/String JSON message on `topic`, now."""
        self._json(topic, fields)

    def hold(self, reason: str, positions: Sequence[float] = ()) -> None:
        """Record a hold and why."""
        self._json(HOLD, {'reason': redact(reason), 'positions': list(positions)})

    def joint_state(self, names: Sequence[str], positions: Sequence[float]) -> None:
        """Record measured joints (plain Python: what an observation reported)."""
        now = self._clock()
        self.writer.put(JOINT_STATES, JOINT_STATE, (now, list(names), list(positions)), now,
                        encode=_joint_state, size=16 * len(positions))

    def outcome(self, fields: dict[str, Any]) -> None:
        """Record how the episode ended, with its figures."""
        self._json(OUTCOME, fields)

    # -- internals ------------------------------------------------------------------------------

    def _json(self, topic: str, fields: dict[str, Any], stamp: int | None = None) -> None:
        self.writer.put(topic, STRING, fields, self._clock() if stamp is None else stamp,
                        encode=cdr.string, size=1024)

    def _request_of(self, observation: Any) -> int | None:
        with self._lock:
            numbers = self._pending.get(id(observation))
            if not numbers:
                return None
            number = numbers.pop(0)
            if not numbers:
                del self._pending[id(observation)]
            return number


def _compressed_image(fields: tuple[int, str, str, bytes]) -> bytes:
    return cdr.compressed_image(*fields)


def _joint_state(fields: tuple[int, list[str], list[float]]) -> bytes:
    return cdr.joint_state(*fields)


def join_event(engine: Any, prediction: Any, actions_before: int,
               previous_joins: dict[str, int]) -> dict[str, Any]:
    """Describe the chunk `prediction` the engine has just joined (engine_join() and more)."""
    chunk = prediction.action_chunk
    return {'chunk': engine.stats.chunks, 'id': prediction.id, 'steps': len(chunk),
            'action_space': chunk.action_space,
            'control_frequency_hz': chunk.control_frequency_hz,
            'server_inference_ms': prediction.perf.get('inference_ms'),
            'actions_before': actions_before, 'warnings': prediction.warnings,
            **engine_join(engine, previous_joins, prediction.rtc is not None)}


def engine_join(engine: Any, previous_joins: dict[str, int], rtc: bool) -> dict[str, Any]:
    """
    Describe how the engine has just joined a chunk: mode, delay, seam, RTC departure.

    `previous_joins` is the engine's join counts before it (stats.joins): the kind that grew
    is this join's. The seam jump is the largest so far (the engine measures it when the
    chunk's first step plays); the prefix departure is this answer's, when it used a prefix.
    """
    stats = engine.stats
    kinds = [kind for kind, count in stats.joins.items() if count > previous_joins.get(kind, 0)]
    return {'mode': engine.active_join, 'joined_as': kinds,
            'latency_s': stats.latencies[-1] if stats.latencies else None,
            'aligned_delay_s': engine.aligned_delay(), 'max_join_delay_s': stats.max_join_delay_s,
            'max_seam_jump': stats.max_seam_jump,
            'rtc_prefix_departure': stats.prefix_errors[-1] if rtc and stats.prefix_errors
            else None, 'rtc_fallback': stats.rtc_fallback}
