"""
The node's latest inputs (joint states, camera frames, instruction, safety gate).

Callbacks only store references and receipt times, and check what costs microseconds (names,
finiteness, an image's declared encoding and size), so a bad input holds the arm at the next
control tick; the JPEG work happens when a request is built, on the request's worker thread.

A message stamped older than the last one accepted on its topic (two publishers, a replayed
bag, a clock that jumped back) is dropped and counted, never used: it does not refresh the
topic's age either, so a source that keeps going backwards goes stale and holds the arm.
Unstamped messages (stamp 0) are not ordered.
"""

from collections.abc import Callable
from dataclasses import dataclass
import math
import time
from typing import Any

from sequence_ai_ros.client import ImageFrame, Observation, Proprioception

from .images import (
    check_compressed_image,
    check_raw_image,
    encode_compressed_image,
    encode_raw_image,
    ImageError,
)

JOINT_STATES = 'joint_states'


@dataclass(frozen=True)
class CameraInput:
    """One camera: the model view it feeds, its topic and whether it is compressed."""

    view: str
    topic: str
    compressed: bool


@dataclass(frozen=True)
class Snapshot:
    """What one request is built from, taken at one control tick."""

    positions: tuple[float, ...]  # joint_names order, then the gripper if any
    frames: tuple[tuple[CameraInput, Any], ...]
    instruction: str


class InputCache:
    """Latest value and receipt time of every input, mapped to the model's joint order."""

    def __init__(self, joint_names: tuple[str, ...], gripper_joint: str,
                 cameras: tuple[CameraInput, ...], instruction: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.joint_names = joint_names
        self.gripper_joint = gripper_joint
        self.cameras = cameras
        self.instruction = instruction
        self._clock = clock
        # (receipt time, positions, problem): replaced as one object, because joint states
        # arrive on their own callback group while the control tick reads them.
        self._joints: tuple[float | None, tuple[float, ...] | None, str] = (None, None, '')
        self.last_finite_positions: tuple[float, ...] | None = None
        self.frames: dict[str, Any] = {}
        self.frame_times: dict[str, float] = {}
        # Why the latest frame of a view is unusable, or ''; kept until a good frame replaces it.
        self.frame_problems: dict[str, str] = {}
        self.gate_open: bool | None = None
        self.gate_time: float | None = None
        self._cameras = {camera.view: camera for camera in cameras}
        self._last_stamps: dict[str, int] = {}
        # Messages dropped for an older stamp, by topic (as in ages()): since the last accepted
        # one (for the hold reason) and in all (for diagnostics).
        self.dropped_since_accepted: dict[str, int] = {}
        self.dropped_out_of_order: dict[str, int] = {}

    @property
    def layout(self) -> tuple[str, ...]:
        """Names of the command vector: the joints, then the gripper if any."""
        return self.joint_names + ((self.gripper_joint,) if self.gripper_joint else ())

    def missing_joints(self, names: list[str]) -> list[str]:
        """Joints this node needs that a JointState message does not carry."""
        present = set(names)
        return [name for name in self.layout if name not in present]

    @property
    def positions(self) -> tuple[float, ...] | None:
        """Return the latest measured positions in model order (may hold NaN: see the problem)."""
        return self._joints[1]

    @property
    def joint_state_problem(self) -> str:
        """Why the latest joint state is unusable, or ''."""
        return self._joints[2]

    @property
    def joint_state_time(self) -> float | None:
        """When the latest joint state arrived (this cache's clock)."""
        return self._joints[0]

    def on_joint_state(self, names: list[str], positions: list[float],
                       stamp_ns: int = 0) -> None:
        """
        Store positions in model order; extra joints are ignored, missing ones recorded.

        `stamp_ns` is the header stamp in nanoseconds (0 = unstamped); an older one than the
        last accepted is dropped.
        """
        now = self._clock()
        if self._out_of_order(JOINT_STATES, stamp_ns):
            return
        previous = self._joints[1]
        if len(names) != len(positions):
            self._joints = (now, previous, f'joint_states has {len(names)} names but '
                                           f'{len(positions)} positions')
            return
        index = {name: i for i, name in enumerate(names)}
        missing = [name for name in self.layout if name not in index]
        if missing:
            self._joints = (now, previous, f'joint_states lacks {", ".join(missing)}')
            return
        ordered = tuple(float(positions[index[name]]) for name in self.layout)
        bad = [name for name, value in zip(self.layout, ordered) if not math.isfinite(value)]
        if bad:
            self._joints = (now, ordered, f'joint_states has non-finite {", ".join(bad)}')
            return
        self.last_finite_positions = ordered
        self._joints = (now, ordered, '')

    def on_frame(self, view: str, message: Any) -> None:
        """
        Keep the newest frame of a view (a reference; nothing is decoded here).

        A frame older than the last (by header stamp) is dropped. A frame whose declared
        encoding, size or data length cannot make an image is recorded as the view's problem
        and not kept.
        """
        now = self._clock()
        camera = self._cameras[view]
        stamp = message.header.stamp
        if self._out_of_order(camera.topic, stamp.sec * 1_000_000_000 + stamp.nanosec):
            return
        self.frame_times[view] = now
        problem = _frame_problem(message, camera)
        self.frame_problems[view] = problem
        if not problem:
            self.frames[view] = message

    def frame_callback(self, view: str) -> Callable[[Any], None]:
        """
        Make a one-argument subscription callback for `view`.

        Not a lambda with a defaulted second argument: rclpy passes message info to any
        callback that takes two arguments.
        """
        def on_message(message: Any) -> None:
            self.on_frame(view, message)
        return on_message

    def on_gate(self, is_open: bool) -> None:
        """Record the external safety gate's latest word."""
        self.gate_open = bool(is_open)
        self.gate_time = self._clock()

    def ages(self, now: float) -> dict[str, float | None]:
        """Seconds since each input last arrived, by topic; None if it never did."""
        ages: dict[str, float | None] = {
            JOINT_STATES: None if self.joint_state_time is None
            else now - self.joint_state_time}
        for camera in self.cameras:
            seen = self.frame_times.get(camera.view)
            ages[camera.topic] = None if seen is None else now - seen
        return ages

    def timeouts(self, joint_state_s: float, camera_s: float) -> dict[str, float]:
        """Return the age at which each input holds the arm, by topic (as in ages())."""
        timeouts = {JOINT_STATES: joint_state_s}
        timeouts.update((camera.topic, camera_s) for camera in self.cameras)
        return timeouts

    def snapshot(self) -> Snapshot:
        """Return the inputs of this instant; raises ValueError when one is missing."""
        _, positions, problem = self._joints
        if positions is None or problem:
            raise ValueError(problem or 'no joint_states received yet')
        frames = []
        for camera in self.cameras:
            if self.frame_problems.get(camera.view):
                raise ValueError(self.frame_problems[camera.view])
            if camera.view not in self.frames:
                raise ValueError(f'no frame received yet on {camera.topic}')
            frames.append((camera, self.frames[camera.view]))
        return Snapshot(positions, tuple(frames), self.instruction)

    def builder(self, snapshot: Snapshot, *, size: tuple[int, int],
                quality: int) -> Callable[[], Observation]:
        """Return a function that builds the request's Observation (run on the request thread)."""
        joint_count = len(self.joint_names)

        def build() -> Observation:
            images = [ImageFrame(view=camera.view, data=_encode(message, camera, size, quality),
                                 timestamp_ms=_stamp_ms(message))
                      for camera, message in snapshot.frames]
            gripper = snapshot.positions[joint_count] if self.gripper_joint else None
            return Observation(
                images=images,
                proprioception=Proprioception(
                    joint_positions=list(snapshot.positions[:joint_count]), gripper=gripper),
                instruction=snapshot.instruction)
        return build

    def _out_of_order(self, topic: str, stamp_ns: int) -> bool:
        """Return True (and count it) when `stamp_ns` is older than the last accepted stamp."""
        if stamp_ns <= 0:
            return False
        last = self._last_stamps.get(topic)
        if last is not None and stamp_ns < last:
            self.dropped_since_accepted[topic] = self.dropped_since_accepted.get(topic, 0) + 1
            self.dropped_out_of_order[topic] = self.dropped_out_of_order.get(topic, 0) + 1
            return True
        self._last_stamps[topic] = stamp_ns
        self.dropped_since_accepted[topic] = 0
        return False


def _frame_problem(message: Any, camera: CameraInput) -> str:
    try:
        if camera.compressed:
            check_compressed_image(message.format, message.data)
        else:
            check_raw_image(message.encoding, message.width, message.height, message.step,
                            len(message.data))
    except ImageError as exc:
        return f'{camera.topic}: {exc}'
    return ''


def _encode(message: Any, camera: CameraInput, size: tuple[int, int], quality: int) -> str:
    if camera.compressed:
        frame = encode_compressed_image(message.format, message.data, size=size, quality=quality)
    else:
        frame = encode_raw_image(message.encoding, message.width, message.height, message.step,
                                 message.data, size=size, quality=quality)
    return frame.base64()


def _stamp_ms(message: Any) -> int | None:
    stamp = message.header.stamp
    if stamp.sec == 0 and stamp.nanosec == 0:
        return None
    return int(stamp.sec) * 1000 + int(stamp.nanosec) // 1_000_000
