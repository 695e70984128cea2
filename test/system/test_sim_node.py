"""The sim_arm node as a real process, driven over ROS from this test process."""

import io
import signal
import time

from builtin_interfaces.msg import Duration
from fixtures_rclpy import *  # noqa: F401,F403  (context)
import numpy as np
from PIL import Image as PILImage
import pytest
from sequence_ai_ros.sim.render import world_to_pixel
from sequence_ai_ros.world import arm_model
from sim_process import Probe, SimProcess, stamp
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

TARGET = (0.45, -0.1)
HALF_S = 500_000_000
ARM = list(arm_model.JOINT_NAMES)


@pytest.fixture(scope='module')
def raw_sim(context):
    sim = SimProcess('/sim_raw', f'target_xy:=[{TARGET[0]}, {TARGET[1]}]')
    probe = Probe(context, '/sim_raw')
    try:
        probe.wait_for(lambda: len(probe.joint_states) > 5, 20.0, 'first joint states')
        yield probe
    finally:
        probe.destroy()
        code, output = sim.stop()
        print(output)


@pytest.fixture(scope='module')
def compressed_sim(context):
    sim = SimProcess('/sim_jpeg', 'image_transport:=compressed', 'image_width:=160',
                     'image_height:=120', 'camera_rate_hz:=30.0')
    probe = Probe(context, '/sim_jpeg', compressed=True)
    try:
        yield probe
    finally:
        probe.destroy()
        sim.stop()


def test_joint_states_track_a_trajectory_in_time(raw_sim):
    probe = raw_sim
    probe.wait_for(lambda: probe.trajectory_pub.get_subscription_count() > 0, 10.0, 'matching')
    # All seven arm joints, as a stock controller wants them, in a different order.
    names = ['panda_joint4', 'panda_joint1', 'panda_joint2', 'panda_joint3', 'panda_joint5',
             'panda_joint6', 'panda_joint7']
    start = probe.latest(*names)
    goal = start + np.array([0.3, 0.4, 0, 0, 0, 0, 0])
    msg = JointTrajectory(joint_names=names, points=[
        JointTrajectoryPoint(positions=start.tolist(), time_from_start=Duration(nanosec=HALF_S)),
        JointTrajectoryPoint(positions=goal.tolist(),
                             time_from_start=Duration(sec=1, nanosec=HALF_S)),
    ])
    names = names[:2]
    start, goal = start[:2], goal[:2]
    others = probe.latest('panda_joint2', 'panda_joint7')
    sent = probe.now()
    probe.trajectory_pub.publish(msg)
    probe.spin_for(1.9)

    states = [s for s in probe.joint_states if sent + 0.05 < stamp(s) < sent + 1.8]
    assert len(states) > 100  # ~100 Hz
    for s in states:
        expected = start + (goal - start) * np.clip(stamp(s) - sent - 0.5, 0.0, 1.0)
        got = np.array([s.position[list(s.name).index(n)] for n in names])
        np.testing.assert_allclose(got, expected, atol=0.03)
    mid = [s for s in states if 0.8 < stamp(s) - sent < 1.2]
    assert mid and all(abs(s.velocity[0] - 0.4) < 0.1 for s in mid)
    np.testing.assert_allclose(probe.latest(*names), goal, atol=1e-6)
    np.testing.assert_allclose(probe.latest('panda_joint2', 'panda_joint7'), others)
    assert list(probe.joint_states[-1].name) == [*arm_model.JOINT_NAMES, arm_model.GRIPPER_JOINT]


def test_hold_stops_the_arm_where_it_is(raw_sim):
    probe = raw_sim
    here = probe.latest(*ARM)
    start = here[0]
    probe.trajectory_pub.publish(JointTrajectory(joint_names=ARM, points=[
        JointTrajectoryPoint(positions=[start - 1.0, *here[1:]],
                             time_from_start=Duration(sec=4))]))
    probe.spin_for(0.6)
    reply = probe.call(probe.hold, Trigger.Request())
    held_at = probe.now()
    assert reply.success and 'holds: 1' in reply.message
    probe.spin_for(0.6)
    after = [s for s in probe.joint_states if stamp(s) > held_at + 0.05]
    assert len(after) > 30
    positions = np.array([s.position[0] for s in after])
    assert np.ptp(positions) < 1e-9
    assert all(s.velocity[0] == 0.0 for s in after)
    assert 0.05 < start - positions[0] < 0.4  # it moved, then stopped well short of the goal


def test_task_distance_follows_the_arm_and_a_target_changed_at_run_time(raw_sim):
    probe = raw_sim  # held by the previous test: the arm stays where it is

    def expected(target):
        tool = arm_model.tool_position(probe.latest(*arm_model.JOINT_NAMES))
        return float(np.linalg.norm(tool - [target[0], target[1], arm_model.HOVER_Z]))

    probe.distances.clear()
    probe.spin_for(0.5)
    assert len(probe.distances) >= 3  # ~10 Hz
    assert probe.distances[-1] == pytest.approx(expected(TARGET), abs=1e-6)

    assert not probe.set_target([0.6]).successful
    assert probe.set_target([0.6, 0.25]).successful
    probe.distances.clear()
    probe.spin_for(0.3)
    assert probe.distances[-1] == pytest.approx(expected((0.6, 0.25)), abs=1e-6)
    assert abs(expected((0.6, 0.25)) - expected(TARGET)) > 0.05


def test_raw_camera_frames_show_the_scene(raw_sim):
    probe = raw_sim
    target = (0.62, 0.18)
    assert probe.set_target(target).successful
    changed = probe.now()
    probe.wait_for(lambda: probe.frames['wrist'] and probe.frames['exterior']
                   and stamp(probe.frames['exterior'][-1]) > changed + 0.05, 10.0, 'frames')
    for view in ('exterior', 'wrist'):
        frame = probe.frames[view][-1]
        assert (frame.width, frame.height, frame.encoding) == (320, 240, 'rgb8')
        assert frame.step == 960 and len(frame.data) == 240 * 960
        assert frame.header.frame_id == f'{view}_camera'
    pixels = np.frombuffer(bytes(probe.frames['exterior'][-1].data), np.uint8)
    pixels = pixels.reshape(240, 320, 3)
    rows, cols = np.nonzero(np.all(pixels == arm_model.TARGET_RGB, axis=-1))
    ex, ey = world_to_pixel(*target, 320, 240)
    assert abs(cols.mean() + 0.5 - ex) < 1.0 and abs(rows.mean() + 0.5 - ey) < 1.0


def test_compressed_camera_frames_decode_to_the_requested_size(compressed_sim):
    probe = compressed_sim
    probe.wait_for(lambda: len(probe.frames['exterior']) > 3 and probe.frames['wrist'], 20.0,
                   'compressed frames')
    for view in ('exterior', 'wrist'):
        frame = probe.frames[view][-1]
        assert frame.format == 'jpeg'
        image = PILImage.open(io.BytesIO(bytes(frame.data)))
        assert image.format == 'JPEG' and image.size == (160, 120)
    assert probe.node.count_publishers('/sim_jpeg/camera/exterior/image_raw') == 0


def test_sigterm_shuts_down_cleanly_and_logs_the_summary():
    sim = SimProcess('/sim_term')
    deadline = time.monotonic() + 20.0
    while 'simulated arm up' not in sim.output():
        assert time.monotonic() < deadline and sim.proc.poll() is None, 'sim did not start'
        time.sleep(0.1)
    code, output = sim.stop(signal.SIGTERM)
    assert code == 0, output
    assert 'Traceback' not in output
    assert 'final task distance' in output
