"""Conversions between ROS messages and the simulated arm's plain data."""

import array
from collections.abc import Sequence
import io

from builtin_interfaces.msg import Duration, Time
import numpy as np
from PIL import Image as PILImage
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros.sim.jtc_rules import Point, TrajectoryMsg
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory

JPEG_QUALITY = 92


def seconds(stamp: Duration | Time) -> float:
    """Return a builtin_interfaces Time or Duration in seconds."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def trajectory_from_msg(msg: JointTrajectory,
                        known_names: Sequence[str] | None = None) -> TrajectoryMsg:
    """
    Describe a JointTrajectory plainly, for jtc_rules and the trajectory executor.

    With `known_names`, a ValueError names any joint outside them (what a caller that drives
    all of those joints needs before it builds a message); the controller's own checks are
    jtc_rules.validate_trajectory's.
    """
    names = tuple(msg.joint_names)
    if known_names is not None:
        unknown = [n for n in names if n not in known_names]
        if unknown:
            raise ValueError(f'unknown joints {unknown}')
    points = tuple(Point(tuple(p.positions), tuple(p.velocities), tuple(p.accelerations),
                         tuple(p.effort), seconds(p.time_from_start)) for p in msg.points)
    return TrajectoryMsg(names, points, seconds(msg.header.stamp))


def stamp_at(seconds: float) -> Time:
    """Return a header stamp for `seconds` on the node clock."""
    nanoseconds = round(seconds * 1e9)
    return Time(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


def joint_state_msg(stamp: Time, names: Sequence[str], position: np.ndarray,
                    velocity: np.ndarray) -> JointState:
    """Build a JointState with names, positions and velocities (no efforts: the sim has none)."""
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = array.array('d', position.tobytes())
    msg.velocity = array.array('d', velocity.tobytes())
    return msg


def image_msg(header: Header, frame: np.ndarray) -> Image:
    """Build an rgb8 Image of an (h, w, 3) uint8 frame."""
    msg = Image()
    msg.header = header
    msg.height, msg.width = frame.shape[:2]
    msg.encoding = 'rgb8'
    msg.step = frame.shape[1] * 3
    # array.array skips the per-byte type checks older rclpy runs on other sequences.
    msg.data = array.array('B', np.ascontiguousarray(frame).tobytes())
    return msg


def compressed_msg(header: Header, frame: np.ndarray) -> CompressedImage:
    """Build a JPEG CompressedImage of an (h, w, 3) uint8 frame."""
    buffer = io.BytesIO()
    PILImage.fromarray(frame).save(buffer, 'JPEG', quality=JPEG_QUALITY)
    msg = CompressedImage()
    msg.header = header
    msg.format = 'jpeg'
    msg.data = array.array('B', buffer.getvalue())
    return msg
