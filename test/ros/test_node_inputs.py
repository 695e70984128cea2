"""InputCache: joint states mapped by name, frames kept by reference, requests built lazily."""

import base64
import io
import math

from PIL import Image as PILImage
import pytest
from sensor_msgs.msg import CompressedImage, Image
from sequence_ai_ros.node.inputs import CameraInput, InputCache

JOINTS = ('j1', 'j2', 'j3')
CAMERAS = (CameraInput('exterior_1', 'cam/ext', False), CameraInput('wrist', 'cam/wrist', True))


class Clock:

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def cache(clock=None):
    return InputCache(JOINTS, 'grip', CAMERAS, 'pick up the cup', clock=clock or Clock())


def raw_frame(width=64, height=48, colour=(200, 10, 10)):
    pixels = bytes(colour) * (width * height)
    return Image(width=width, height=height, encoding='rgb8', step=width * 3, data=pixels)


def jpeg_frame(size=(224, 224)):
    buffer = io.BytesIO()
    PILImage.new('RGB', size, (10, 200, 10)).save(buffer, 'JPEG', quality=92)
    return CompressedImage(format='jpeg', data=buffer.getvalue())


def test_joint_states_are_mapped_by_name_and_extra_joints_ignored():
    inputs = cache()
    inputs.on_joint_state(['extra', 'j3', 'grip', 'j1', 'j2'], [9.0, 3.0, 0.5, 1.0, 2.0])
    assert inputs.positions == (1.0, 2.0, 3.0, 0.5)
    assert inputs.joint_state_problem == ''
    assert inputs.layout == ('j1', 'j2', 'j3', 'grip')


def test_missing_and_non_finite_joints_are_problems_that_keep_the_last_good_state():
    inputs = cache()
    inputs.on_joint_state(['j1', 'j2', 'j3', 'grip'], [1.0, 2.0, 3.0, 0.0])
    inputs.on_joint_state(['j1', 'j3', 'grip'], [1.0, 3.0, 0.0])
    assert 'lacks j2' in inputs.joint_state_problem
    inputs.on_joint_state(['j1', 'j2', 'j3', 'grip'], [1.0, math.nan, 3.0, 0.0])
    assert 'non-finite j2' in inputs.joint_state_problem
    assert inputs.last_finite_positions == (1.0, 2.0, 3.0, 0.0)
    with pytest.raises(ValueError, match='non-finite'):
        inputs.snapshot()
    inputs.on_joint_state(['j1', 'j2'], [1.0])
    assert '2 names but 1 positions' in inputs.joint_state_problem
    assert inputs.missing_joints(['j1', 'grip']) == ['j2', 'j3']


def test_ages_by_topic_and_never_received_is_none():
    clock = Clock()
    inputs = cache(clock)
    inputs.on_joint_state(['j1', 'j2', 'j3', 'grip'], [0.0] * 4)
    inputs.on_frame('exterior_1', raw_frame())
    clock.now += 0.25
    ages = inputs.ages(clock.now)
    assert ages == {'joint_states': 0.25, 'cam/ext': 0.25, 'cam/wrist': None}
    with pytest.raises(ValueError, match='cam/wrist'):
        inputs.snapshot()


def test_builder_encodes_frames_later_with_the_instruction_of_the_snapshot():
    inputs = cache()
    inputs.on_joint_state(['j1', 'j2', 'j3', 'grip'], [1.0, 2.0, 3.0, 0.25])
    inputs.frame_callback('exterior_1')(raw_frame())
    wrist = jpeg_frame()
    inputs.frame_callback('wrist')(wrist)
    snapshot = inputs.snapshot()
    inputs.instruction = 'open the drawer'  # a later change does not alter a taken snapshot
    observation = inputs.builder(snapshot, size=(224, 224), quality=92)()
    assert observation.instruction == 'pick up the cup'
    assert observation.proprioception.joint_positions == [1.0, 2.0, 3.0]
    assert observation.proprioception.gripper == 0.25
    views = {frame.view: base64.b64decode(frame.data) for frame in observation.images}
    assert set(views) == {'exterior_1', 'wrist'}
    assert PILImage.open(io.BytesIO(views['exterior_1'])).size == (224, 224)
    assert views['wrist'] == bytes(wrist.data), 'a right-size JPEG is passed through'
    later = inputs.builder(inputs.snapshot(), size=(224, 224), quality=92)()
    assert later.instruction == 'open the drawer'


def test_gate_state_and_time():
    clock = Clock()
    inputs = cache(clock)
    assert inputs.gate_open is None and inputs.gate_time is None
    inputs.on_gate(False)
    assert inputs.gate_open is False and inputs.gate_time == clock.now
