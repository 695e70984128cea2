"""The policy node records every episode: a completed, a stopped and a held-by-fault one."""

import importlib.util
import io
import itertools
import json
import signal
import time

from PIL import Image
import pytest
from ros_harness import node_parameters, PolicyNodeProcess, Robot, status_values, wait_until
from sequence_ai_ros.cli import report_command
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.record import schemas
from sequence_ai_ros.record.dependency import INSTALL_HINT
from sequence_ai_ros.record.reader import read_episode
from std_srvs.srv import Trigger

pytestmark = pytest.mark.skipif(importlib.util.find_spec('mcap_ros2') is None,
                                reason=f'recording needs {INSTALL_HINT}')

KEY = 'seq_node_record_tests_key_00000001'
ENV = {'SEQUENCES_API_KEY': KEY}
_names = (f'rec{i}' for i in itertools.count())


@pytest.fixture(scope='module')
def gateway():
    with GatewayProcess(['--time-scale', '0.2', '--start-warm', '--latency-median-s', '0.4'],
                        keys={KEY: 10**6}) as gw:
        yield gw


@pytest.fixture
def launch(ros, tmp_path):
    """Start a recording node in a fresh namespace; yield (robot, process, record_dir)."""
    started = []

    def start(gw, **params):
        namespace = next(_names)
        robot = Robot(ros.node, namespace, watch_diagnostics=True)
        folder = tmp_path / namespace
        params = dict({'record': True}, **params)
        process = PolicyNodeProcess(namespace, node_parameters(
            base_url=gw.base_url, record_dir=str(folder), **params), ENV)
        started.append((robot, process))
        wait_until(lambda: robot.change_client.service_is_ready(), 10)
        assert robot.configure(), process.log()
        assert robot.activate(), process.log()
        return robot, process, folder
    yield start
    for robot, process in started:
        robot.close()
        process.stop()
        assert KEY not in process.log()


def finished_episode(folder, timeout=10.0):
    """Wait for the one episode file in `folder` to be closed (its outcome in); return it."""
    def closed():
        files = sorted(folder.glob('*.mcap'))
        if len(files) != 1:
            return None
        contents = read_episode(files[0])
        return contents if not contents.truncated and contents.on(schemas.OUTCOME) else None
    contents = wait_until(closed, timeout, interval=0.2)
    assert contents, f'no finished episode file in {folder}: {list(folder.glob("*"))}'
    return contents


def check_episode(contents, robot, outcome, tmp_path):
    """Check what every episode file holds, whatever the ending, and that the report draws it."""
    (ended,) = contents.on(schemas.OUTCOME)
    assert json.loads(ended.message.data)['outcome'] == outcome
    # Every command the node published, exactly: the subscriber's messages, one for one.
    recorded = [m.message for m in contents.on(schemas.ARM_COMMAND)]
    seen = [msg for _, msg in robot.command_list()]
    assert len(recorded) == len(seen) > 0
    assert [list(m.points[0].positions) for m in recorded] == \
        [list(m.points[0].positions) for m in seen]
    assert contents.on(schemas.JOINT_STATES), 'no joint_states recorded'
    frames = contents.on(schemas.image_topic('exterior_1'))
    assert frames and Image.open(io.BytesIO(bytes(frames[0].message.data))).format == 'JPEG'
    assert len(contents.on(schemas.OBSERVATION)) >= len(contents.on(schemas.JOIN)) > 0
    parameters = json.loads(contents.metadata['parameters'])
    assert parameters['model'] == 'pi05-droid' and parameters['record'] is True
    raw = contents.path.read_bytes()
    assert KEY.encode() not in raw and KEY not in repr(contents.messages)
    png = tmp_path / f'{contents.path.stem}.png'
    assert report_command.main([str(contents.path), '--out', str(png)]) == 0
    with Image.open(png) as image:
        assert image.format == 'PNG' and len(image.convert('RGB').getcolors(1 << 20)) > 50


def test_a_completed_episode_is_recorded(gateway, launch, tmp_path):
    robot, process, folder = launch(gateway, max_actions=60)
    contents = finished_episode(folder)
    check_episode(contents, robot, 'completed', tmp_path)
    assert len(contents.on(schemas.HOLD)) == 0 or all(
        'underrun' in json.loads(m.message.data)['reason'] for m in contents.on(schemas.HOLD))
    latest = [s for _, s in robot.diagnostics if s.name.endswith('episode')][-1]
    values = status_values(latest)
    assert values['recording dropped'] == '0'
    assert str(folder) in values['recording'], values['recording']


def test_a_stopped_episode_is_recorded(gateway, launch, tmp_path):
    robot, process, folder = launch(gateway, max_actions=100000)
    assert wait_until(lambda: len(robot.command_list()) > 20, 10), process.log()
    assert robot.call(robot.stop_client, Trigger.Request()).success
    contents = finished_episode(folder)
    check_episode(contents, robot, 'stopped', tmp_path)
    reasons = [json.loads(m.message.data)['reason'] for m in contents.on(schemas.HOLD)]
    assert reasons[-1] == 'stop requested'


def test_an_episode_held_by_a_fault_is_recorded(gateway, launch, tmp_path):
    robot, process, folder = launch(gateway, max_actions=100000)
    assert wait_until(lambda: len(robot.command_list()) > 20, 10), process.log()
    robot.publish_joints = False
    contents = finished_episode(folder)
    time.sleep(0.3)  # the hold and the file travel separately: the subscriber has it by now
    check_episode(contents, robot, 'safety', tmp_path)
    (hold,) = [json.loads(m.message.data) for m in contents.on(schemas.HOLD)
               if 'underrun' not in m.message.data]
    assert 'joint_states' in hold['reason']


def test_record_false_writes_nothing(gateway, launch):
    robot, process, folder = launch(gateway, max_actions=30, record=False)
    assert wait_until(lambda: robot.outcomes, 20), process.log()
    time.sleep(0.5)
    assert not folder.exists() or not list(folder.iterdir())


def test_a_node_killed_mid_episode_leaves_a_readable_file(gateway, launch, tmp_path):
    robot, process, folder = launch(gateway, max_actions=100000)
    assert wait_until(lambda: len(robot.command_list()) > 40, 15), process.log()
    time.sleep(2.5)  # two flushes of the writer thread (every 1 s)
    process.proc.send_signal(signal.SIGKILL)
    process.proc.wait(10)
    (path,) = folder.glob('*.mcap')
    contents = read_episode(path)
    # Up to the last flush: commands, joint states and frames, though no outcome was written.
    assert contents.truncated and not contents.on(schemas.OUTCOME)
    recorded = contents.on(schemas.ARM_COMMAND)
    assert 20 <= len(recorded) <= len(robot.command_list())
    frames = contents.on(schemas.image_topic('exterior_1'))
    assert frames and Image.open(io.BytesIO(bytes(frames[-1].message.data))).format == 'JPEG'
    png = tmp_path / 'killed.png'
    assert report_command.main([str(path), '--out', str(png)]) == 0


def test_a_node_stopped_by_sigterm_finishes_its_file(gateway, launch):
    robot, process, folder = launch(gateway, max_actions=100000)
    assert wait_until(lambda: len(robot.command_list()) > 20, 15), process.log()
    process.proc.terminate()
    assert process.proc.wait(15) == 0, process.log()[-3000:]
    (path,) = folder.glob('*.mcap')
    contents = read_episode(path)
    assert not contents.truncated, 'the writer was cut off at shutdown'
    (ended,) = contents.on(schemas.OUTCOME)
    assert json.loads(ended.message.data)['outcome'] == 'stopped'
