"""run(record=...) against the real gateway: the episode file, its images, a kill, the cap."""

import base64
import importlib.util
import io
import os
from pathlib import Path
import signal
import subprocess
import sys
import textwrap
import time

from observations import observation
from PIL import Image
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.cli import report_command
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.child_processes import child_env
from sequence_ai_ros.record import schemas
from sequence_ai_ros.record.dependency import INSTALL_HINT
from sequence_ai_ros.record.episode import EpisodeRecorder
from sequence_ai_ros.record.mcap_file import EpisodeFile
from sequence_ai_ros.record.reader import read_episode
from sequence_ai_ros.record.size_cap import enforce_cap, episode_path
from sequence_ai_ros.record.writer_thread import RecordWriter

pytestmark = pytest.mark.skipif(importlib.util.find_spec('mcap_ros2') is None,
                                reason=f'recording needs {INSTALL_HINT}')

KEY = 'seq_record_tests_key_000000000001'
REPO = Path(__file__).resolve().parents[1]
TEST_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope='module')
def gateway():
    # Latency 0.6 model s against 1 s chunks at time scale 0.2: a few seams, no underrun.
    with GatewayProcess(['--time-scale', '0.2', '--start-warm', '--latency-median-s', '0.6'],
                        keys={KEY: 100000}) as process:
        yield process


def every_record_bytes(path):
    """Yield the raw file, then every record's fields decompressed (chunks opened)."""
    from mcap.stream_reader import StreamReader

    yield path.read_bytes()
    with open(path, 'rb') as stream:
        for record in StreamReader(stream).records:
            for value in vars(record).values():
                yield value if isinstance(value, bytes) else repr(value).encode()


def test_run_records_what_it_sent_got_and_did(gateway, tmp_path):
    path = tmp_path / 'episode.mcap'
    acted, holds = [], []
    obs = observation(instruction=f'reach the red disc {KEY}')  # a pasted key: never recorded
    with sai.connect('pi05-droid', api_key=KEY, base_url=gateway.base_url) as policy:
        outcome = policy.run(lambda: obs, acted.append, validate=lambda a: len(acted) < 40,
                             hold=lambda: holds.append(1), max_actions=200, record=path)
    assert outcome.reason == 'validate' and len(acted) == 40 and len(holds) == 1

    # The mcap reader opens it through its summary: it was closed properly.
    from mcap.reader import make_reader

    with open(path, 'rb') as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        assert reader.get_header().profile == 'ros2'
        assert {s.encoding for s in summary.schemas.values()} == {'ros2msg'}
        assert {c.message_encoding for c in summary.channels.values()} == {'cdr'}
        assert all(c.topic.startswith('/sequence_ai/') for c in summary.channels.values())
    contents = read_episode(path)
    assert not contents.truncated
    counts = contents.topics()
    assert counts[schemas.ACTION] == 40 == outcome.actions
    assert [list(m.message.data) for m in contents.on(schemas.ACTION)] == acted
    assert counts[schemas.JOIN] == outcome.chunks
    assert counts[schemas.OBSERVATION] == outcome.requests
    assert counts[schemas.ANSWER] + counts.get(schemas.ERROR, 0) <= outcome.requests
    (hold,) = contents.on(schemas.HOLD)
    assert '"validate"' in hold.message.data
    (ended,) = contents.on(schemas.OUTCOME)
    assert '"outcome": "stopped"' in ended.message.data
    # Frames exactly as sent: every view, decodable, the bytes of the request.
    for view in ('exterior_1', 'wrist'):
        frames = contents.on(schemas.image_topic(view))
        assert len(frames) == outcome.requests
        image = Image.open(io.BytesIO(bytes(frames[0].message.data)))
        assert image.format == 'JPEG' and image.size == (224, 224)
        assert frames[0].message.format == 'jpeg' and frames[0].message.header.frame_id == view
    assert bytes(contents.on(schemas.image_topic('wrist'))[0].message.data) == \
        base64.b64decode(obs.images[1].data)
    assert contents.metadata['package_version'] == sai.__version__
    assert 'pi05-droid' in contents.metadata['model']
    for chunk in every_record_bytes(path):
        assert KEY.encode() not in chunk
        assert b'Bearer' not in chunk


def test_a_killed_run_leaves_a_file_readable_up_to_the_last_flush(gateway, tmp_path):
    path = tmp_path / 'killed.mcap'
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(TEST_DIR)!r})
        from observations import observation
        import sequence_ai_ros as sai
        obs = observation()
        count = [0]
        def act(values):
            count[0] += 1
            if count[0] == 60:
                print('acted', flush=True)
        with sai.connect('pi05-droid', api_key={KEY!r}, base_url={gateway.base_url!r}) as p:
            p.run(lambda: obs, act, validate=lambda a: True, max_actions=100000,
                  record={str(path)!r})
    """)
    env = child_env(REPO)
    proc = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        assert proc.stdout.readline().strip() == 'acted'
        time.sleep(2.5)  # two flushes of the writer thread (every 1 s)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    contents = read_episode(path)
    assert contents.truncated, 'a killed writer cannot have written the summary'
    counts = contents.topics()
    assert counts[schemas.ACTION] >= 60
    assert counts[schemas.OBSERVATION] >= 2 and schemas.OUTCOME not in counts
    frame = contents.on(schemas.image_topic('exterior_1'))[-1].message
    assert Image.open(io.BytesIO(bytes(frame.data))).size == (224, 224)


def test_the_report_draws_an_episode_and_a_comparison(gateway, tmp_path, capsys):
    paths = []
    for prefetch in (True, False):
        path = tmp_path / f'prefetch_{"on" if prefetch else "off"}.mcap'
        with sai.connect('pi05-droid', api_key=KEY, base_url=gateway.base_url) as policy:
            policy.run(lambda: observation(), lambda a: None, validate=lambda a: True,
                       max_actions=150, prefetch=prefetch, hold=lambda: None, record=path)
        paths.append(path)
    assert report_command.main([str(paths[0])]) == 0
    text = capsys.readouterr().out
    picture = paths[0].with_suffix('.png')
    assert f'picture: {picture}' in text and 'completed' in text
    out = tmp_path / 'compare.png'
    assert report_command.main(['--compare', *map(str, paths), '--out', str(out)]) == 0
    text = capsys.readouterr().out
    assert 'prefetch_on' in text and 'prefetch_off' in text
    for png in (picture, out):
        with Image.open(png) as image:
            assert image.format == 'PNG' and image.width >= 800
            assert len(image.convert('RGB').getcolors(1 << 20) or []) > 50
    assert report_command.main([str(tmp_path / 'missing.mcap')]) == 2


def test_a_slow_disk_drops_records_and_never_blocks_the_caller(tmp_path):
    # A pipe nobody reads: the writer thread blocks in write() once its buffer is full.
    fifo = tmp_path / 'slow.mcap'
    os.mkfifo(fifo)
    reader_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        recorder = EpisodeRecorder(RecordWriter(EpisodeFile(fifo), flush_s=0.01,
                                                max_queued=500))
        worst = 0.0
        for i in range(5000):
            began = time.perf_counter()
            recorder.action([float(i)] * 64)
            worst = max(worst, time.perf_counter() - began)
        assert recorder.dropped > 0
        assert worst < 0.05, f'a put waited {worst:.3f} s'
    finally:
        os.close(reader_fd)  # the blocked write() fails (EPIPE): the writer thread ends


def test_the_size_cap_removes_the_oldest_episodes_first(tmp_path):
    made = []
    for i in range(5):
        path = episode_path(tmp_path, f'run {i}')
        path.write_bytes(b'x' * 1000)
        os.utime(path, (1000 + i, 1000 + i))
        made.append(path)
    removed = enforce_cap(tmp_path, 2500, keep=(made[0],))
    # The oldest (made[0]) is being written: kept; the next oldest go until 2500 bytes fit.
    assert removed == made[1:4]
    assert sorted(tmp_path.iterdir()) == sorted([made[0], made[4]])
    assert enforce_cap(tmp_path, 0) == [], 'a cap of 0 is no cap'
