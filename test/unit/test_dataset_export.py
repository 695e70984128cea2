"""
sequence-ai-ros label and export --format lerobot, checked against LeRobot's v3.0 rules.

The recordings are written by the recorder itself with known stamps (test/dataset/
recordings.py); the dataset is read back with pyarrow and PyAV only, as LeRobot 0.4-0.6 read
it (make test-dataset loads the same files with LeRobot itself).
"""

import importlib.util
import io
import json
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('mcap_ros2', 'pyarrow', 'av')),
    reason="the export needs pip install 'sequence_ai_ros[record,dataset]'")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'dataset'))
import recordings  # noqa: E402
from sequence_ai_ros.dataset.export import export, ExportError, ExportOptions  # noqa: E402
from sequence_ai_ros.dataset.lerobot import EPISODES_PATH  # noqa: E402
from sequence_ai_ros.record import labels  # noqa: E402
from sequence_ai_ros.record.size_cap import enforce_cap  # noqa: E402

KEY = 'seq_dataset_tests_key_00000000001'
# Mean absolute difference (0-255) between a decoded video frame and its picture: the codec's.
CODEC_TOLERANCE = 4.0


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp('recordings')
    return {
        'client_a': recordings.client_episode(root / 'client' / 'a.mcap', commands=45),
        'client_b': recordings.client_episode(
            root / 'client' / 'b.mcap', commands=30, instruction='open the drawer',
            start_ns=recordings.START_NS + 60 * recordings.NS, per_request=5, late_request=2),
        'node_a': recordings.node_episode(root / 'node' / 'a.mcap', commands=40,
                                          hold_after=12),
        'node_b': recordings.node_episode(
            root / 'node' / 'b.mcap', commands=25, images_out_of_order=True,
            start_ns=recordings.START_NS + 60 * recordings.NS),
    }


@pytest.fixture(scope='module')
def node_dataset(recorded, tmp_path_factory):
    labels.label_episode(Path(recorded['node_a'].path), False, f'bumped the cup {KEY}')
    out = tmp_path_factory.mktemp('node_dataset') / 'ds'
    result = export([Path(recorded['node_a'].path).parent], ExportOptions(out=out))
    return out, result


@pytest.fixture(scope='module')
def client_dataset(recorded, tmp_path_factory):
    out = tmp_path_factory.mktemp('client_dataset') / 'ds'
    result = export([Path(recorded['client_a'].path), Path(recorded['client_b'].path)],
                    ExportOptions(out=out))
    return out, result


def parquet(path):
    import pyarrow.parquet as pq
    return pq.read_table(path)


def episodes_of(root):
    return parquet(root / EPISODES_PATH).to_pylist()


def info_of(root):
    return json.loads((root / 'meta' / 'info.json').read_text())


def decoded_frames(path):
    import av
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [(float(frame.pts * stream.time_base), frame.to_ndarray(format='rgb24'))
                for frame in container.decode(stream)]


def jpeg_pixels(b64):
    import base64

    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert('RGB'))


def difference(a, b):
    return float(np.mean(np.abs(a.astype(float) - b.astype(float))))


def test_the_layout_and_info_are_lerobot_v3(node_dataset, recorded):
    root, result = node_dataset
    info = info_of(root)
    assert info['codebase_version'] == 'v3.0' and info['fps'] == 15 == result.fps
    assert info['total_episodes'] == 2 and info['total_frames'] == 40 + 25 == result.frames
    assert info['total_tasks'] == 1 and info['splits'] == {'train': '0:2'}
    features = info['features']
    assert features['action']['names'] == recordings.ARM + ['gripper']
    assert features['observation.state']['names'] == recordings.ARM + recordings.FINGERS
    assert features['action']['shape'] == [8] and features['action']['dtype'] == 'float32'
    for view in recordings.VIEWS:
        video = features[f'observation.images.{view}']
        assert video['dtype'] == 'video' and video['shape'] == [224, 224, 3]
        assert video['names'] == ['height', 'width', 'channels']
        assert video['info']['video.fps'] == 15 and video['info']['video.codec'] == 'h264'
    for name in ('timestamp', 'frame_index', 'episode_index', 'index', 'task_index'):
        assert features[name]['shape'] == [1], name
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob('*') if p.is_file())
    assert files == ['data/chunk-000/file-000.parquet', 'meta/episodes/chunk-000/file-000.parquet',
                     'meta/info.json', 'meta/stats.json', 'meta/tasks.parquet',
                     'videos/observation.images.exterior_1/chunk-000/file-000.mp4',
                     'videos/observation.images.wrist/chunk-000/file-000.mp4']


def test_frames_are_the_commands_sent_on_the_control_grid(node_dataset, recorded):
    import pyarrow as pa

    root, _ = node_dataset
    table = parquet(root / 'data' / 'chunk-000' / 'file-000.parquet')
    assert table.schema.field('action').type == pa.list_(pa.float32(), 8)
    assert table.schema.field('timestamp').type == pa.float32()
    assert table['index'].to_pylist() == list(range(65))
    rows = episodes_of(root)
    for row, written in zip(rows, (recorded['node_a'], recorded['node_b'])):
        frames = table.slice(row['dataset_from_index'], row['length'])
        assert set(frames['episode_index'].to_pylist()) == {row['episode_index']}
        assert frames['frame_index'].to_pylist() == list(range(row['length']))
        assert np.allclose(frames['timestamp'].to_numpy(), np.arange(row['length']) / 15)
        # Holds are not frames: what was commanded, in order, and nothing else.
        assert row['length'] == len(written.actions)
        assert np.allclose(np.array(frames['action'].to_pylist()), written.actions, atol=1e-6)
    assert rows[0]['holds'] == 2 and rows[0]['underruns'] == 1


def test_the_state_is_the_newest_joint_state_stamped_before_the_command(node_dataset,
                                                                        recorded):
    root, _ = node_dataset
    table = parquet(root / 'data' / 'chunk-000' / 'file-000.parquet')
    states = np.array(table['observation.state'].to_pylist())[:40]
    written = recorded['node_a']
    start = (recordings.START_NS - recordings.STATE_OFFSET_NS) / recordings.NS
    for frame, t in enumerate(written.command_times):
        measured = start + np.floor((t - start) * 100) / 100  # the 100 Hz stamp at or before t
        expected = recordings.pose((measured - recordings.START_NS / recordings.NS) * 15) \
            + [0.04]
        assert np.allclose(states[frame], expected, atol=1e-5), frame


def test_the_pictures_are_aligned_by_stamps_not_by_order(node_dataset, recorded):
    root, _ = node_dataset
    row = episodes_of(root)[1]  # node_b: each request's frames written after later commands
    written = recorded['node_b']
    key = 'observation.images.exterior_1'
    video = decoded_frames(root / 'videos' / key / 'chunk-000' / 'file-000.mp4')
    first = round(row[f'videos/{key}/from_timestamp'] * 15)
    assert len(video) == 65 and first == 40
    for frame, t in enumerate(written.command_times):
        taken = max(s for s in written.image_stamps if s <= t + 1e-9)
        request = written.image_stamps.index(taken)
        expected = jpeg_pixels(recordings.frame_b64(recordings.pose(request * 10)))
        other = jpeg_pixels(recordings.frame_b64(recordings.pose((request + 1) * 10)))
        got = video[first + frame][1]
        assert difference(got, expected) < CODEC_TOLERANCE, frame
        assert difference(got, expected) < difference(got, other), frame
        assert abs(video[first + frame][0] - (first + frame) / 15) < 1e-3
    assert row['late_frames'] == 0


def test_a_late_picture_is_counted_not_shifted(client_dataset, recorded):
    root, _ = client_dataset
    rows = episodes_of(root)
    assert [r['late_frames'] for r in rows][0] == 0
    late = rows[1]
    assert late['late_frames'] > 0 and late['image_max_age_s'] > 0.6
    key = 'observation.images.wrist'
    video = decoded_frames(root / 'videos' / key / 'chunk-000' / 'file-000.mp4')
    first = round(late[f'videos/{key}/from_timestamp'] * 15)
    # Request 2 was never sent: commands 10-14 show request 1's picture, still.
    older = jpeg_pixels(recordings.frame_b64(recordings.pose(5), view='wrist'))
    for frame in range(10, 15):
        assert difference(video[first + frame][1], older) < CODEC_TOLERANCE, frame


def test_episode_metadata_tasks_and_stats(client_dataset, node_dataset):
    root, _ = client_dataset
    rows = episodes_of(root)
    assert [r['tasks'] for r in rows] == [['reach the red disc'], ['open the drawer']]
    assert [r['outcome'] for r in rows] == ['completed', 'completed']
    assert all(r['model'] == 'pi05-droid' and r['label'] == '' and r['success'] is None
               for r in rows)
    tasks = parquet(root / 'meta' / 'tasks.parquet')
    pandas = json.loads(tasks.schema.metadata[b'pandas'])
    assert pandas['index_columns'] == ['task']  # LeRobot reads the task strings as the index
    assert dict(zip(tasks['task'].to_pylist(), tasks['task_index'].to_pylist())) == \
        {'reach the red disc': 0, 'open the drawer': 1}
    data = parquet(root / 'data' / 'chunk-000' / 'file-000.parquet')
    assert set(data['task_index'].to_pylist()[:45]) == {0}
    assert set(data['task_index'].to_pylist()[45:]) == {1}
    stats = json.loads((root / 'meta' / 'stats.json').read_text())
    actions = np.array(data['action'].to_pylist())
    assert np.allclose(stats['action']['mean'], actions.mean(axis=0), atol=1e-5)
    assert np.allclose(stats['action']['max'], actions.max(axis=0), atol=1e-6)
    assert stats['action']['count'] == [len(actions)]
    for name in ('min', 'max', 'mean', 'std', 'q01', 'q10', 'q50', 'q90', 'q99'):
        image = np.array(stats['observation.images.exterior_1'][name])
        assert image.shape == (3, 1, 1) and 0.0 <= image.min() <= image.max() <= 1.0, name


def test_a_label_survives_into_the_dataset_and_never_a_key(node_dataset):
    root, _ = node_dataset
    rows = episodes_of(root)
    assert (rows[0]['label'], rows[0]['success']) == ('failure', False)
    assert rows[0]['notes'] == 'bumped the cup seq_[redacted]'
    assert rows[0]['labelled_at'].endswith('Z')
    assert (rows[1]['label'], rows[1]['success']) == ('', None)
    assert all(KEY.encode() not in p.read_bytes() for p in root.rglob('*') if p.is_file())


def test_only_labelled_and_success_only(recorded, tmp_path):
    folder = tmp_path / 'episodes'
    folder.mkdir()
    for name in ('client_a', 'client_b'):
        source = Path(recorded[name].path)
        (folder / f'{name}.mcap').write_bytes(source.read_bytes())
    labels.label_episode(folder / 'client_a.mcap', False)
    labels.label_episode(folder / 'client_a.mcap', True, 'relabelled')  # replaces the first
    labels.label_episode(folder / 'client_b.mcap', False)
    labelled = export([folder], ExportOptions(out=tmp_path / 'labelled', only_labelled=True))
    assert len(labelled.episodes) == 2
    wins = export([folder], ExportOptions(out=tmp_path / 'wins', success_only=True))
    assert [p.name for p in wins.episodes] == ['client_a.mcap']
    assert [why for _, why in wins.skipped] == ['not labelled a success (--success-only)']
    assert episodes_of(tmp_path / 'wins')[0]['notes'] == 'relabelled'
    (folder / 'client_b.label.json').unlink()
    labelled = export([folder], ExportOptions(out=tmp_path / 'again', only_labelled=True))
    assert [p.name for p in labelled.episodes] == ['client_a.mcap']


def test_bad_input_is_refused_and_loses_nothing(recorded, tmp_path):
    source = Path(recorded['client_a'].path)
    before = source.read_bytes()
    busy = tmp_path / 'busy'
    busy.mkdir()
    (busy / 'keep.txt').write_text('mine')
    with pytest.raises(ExportError, match='not empty'):
        export([source], ExportOptions(out=busy))
    assert sorted(p.name for p in busy.iterdir()) == ['keep.txt']
    with pytest.raises(ExportError, match='no such file or folder'):
        export([source, tmp_path / 'missing.mcap'], ExportOptions(out=tmp_path / 'x'))
    (tmp_path / 'empty').mkdir()
    with pytest.raises(ExportError, match='no recordings'):
        export([tmp_path / 'empty'], ExportOptions(out=tmp_path / 'x'))
    assert not (tmp_path / 'x').exists()
    # A higher rate than the episode's: no commands between its ticks to give.
    with pytest.raises(ExportError, match='above the episode'):
        export([source], ExportOptions(out=tmp_path / 'fast', fps=30))
    # Another arm after the first: left out with the reason, the rest exported.
    mixed = export([source, Path(recorded['node_a'].path)], ExportOptions(out=tmp_path / 'mix'))
    assert [p.name for p in mixed.episodes] == ['a.mcap'] and len(mixed.skipped) == 1
    assert 'action' in mixed.skipped[0][1] and 'own folder' in mixed.skipped[0][1]
    assert source.read_bytes() == before


def test_a_lower_fps_takes_every_nth_command(recorded, tmp_path):
    result = export([Path(recorded['client_a'].path)], ExportOptions(out=tmp_path / 'd', fps=5))
    data = parquet(tmp_path / 'd' / 'data' / 'chunk-000' / 'file-000.parquet')
    assert result.fps == 5 and data.num_rows == 15
    assert np.allclose(np.array(data['action'].to_pylist()),
                       recorded['client_a'].actions[::3], atol=1e-6)


def test_label_errors_and_the_cap_takes_the_label_along(tmp_path, recorded):
    with pytest.raises(labels.LabelError, match='no episode recording'):
        labels.label_episode(tmp_path / 'missing.mcap', True)
    episode = tmp_path / 'old.mcap'
    episode.write_bytes(Path(recorded['client_a'].path).read_bytes())
    labels.label_episode(episode, True)
    assert labels.read_label(episode).success is True
    labels.label_path(episode).write_text('{"success": "yes"}')
    with pytest.raises(labels.LabelError):
        labels.read_label(episode)
    assert enforce_cap(tmp_path, 1) == [episode]
    assert not labels.label_path(episode).exists()


def test_the_command_line_labels_exports_and_reports(recorded, tmp_path):
    episode = tmp_path / 'e.mcap'
    episode.write_bytes(Path(recorded['node_a'].path).read_bytes())

    def cli(*args):
        return subprocess.run([sys.executable, '-m', 'sequence_ai_ros.cli', *map(str, args)],
                              capture_output=True, text=True, timeout=120)

    missing = cli('label', tmp_path / 'nope.mcap', '--success')
    assert missing.returncode == 2 and 'no episode recording' in missing.stderr
    assert cli('label', episode, '--success', '--failure').returncode == 2
    done = cli('label', episode, '--success', '--notes', 'clean grasp')
    assert done.returncode == 0, done.stderr
    exported = cli('export', '--format', 'lerobot', episode, '--out', tmp_path / 'ds',
                   '--success-only')
    assert exported.returncode == 0, exported.stderr
    assert '1 episodes, 40 frames at 15 fps' in exported.stdout
    again = cli('export', '--format', 'lerobot', episode, '--out', tmp_path / 'ds')
    assert again.returncode == 2 and 'not empty' in again.stderr
    report = cli('report', tmp_path / 'ds', '--episode', '0')
    assert report.returncode == 0, report.stderr
    assert 'success: clean grasp' in report.stdout
    assert (tmp_path / 'ds_episode_0.png').is_file()
    assert not (tmp_path / 'ds' / 'ds_episode_0.png').exists()


def test_the_report_leaves_out_panels_without_data(node_dataset, recorded):
    from sequence_ai_ros.dataset.read_back import load_exported_episode
    from sequence_ai_ros.demo.plot import panels_for
    from sequence_ai_ros.record.recording import load_episode

    root, _ = node_dataset
    exported = load_exported_episode(root, 0)
    assert panels_for([exported], None) == ['joints']
    assert len(exported.data.commands) == 40 and exported.data.outcome['underruns'] == 1
    recording = load_episode(Path(recorded['node_a'].path))
    assert panels_for([recording], None) == ['joints']  # no chunks recorded, no target
    recording.data.chunks.append((0.0, {'latency_s': 0.3}))
    assert panels_for([recording], (0.5, 0.2)) == ['joints', 'distance', 'latency']


def test_the_node_labels_its_running_or_last_episode(recorded, tmp_path):
    from sequence_ai_ros.record.node_recording import NodeRecording

    recording = NodeRecording(True, str(tmp_path / 'episodes'), 100.0)
    label, problem = recording.label(True, 'too early')
    assert label is None and problem == 'no episode recorded yet'
    episode = tmp_path / 'episodes' / 'last.mcap'
    episode.parent.mkdir()
    episode.write_bytes(Path(recorded['node_a'].path).read_bytes())
    recording.last_path = episode  # what finish() leaves behind
    label, problem = recording.label(False, f'slipped {KEY}')
    assert problem == '' and label == labels.read_label(episode)
    assert (label.success, label.notes) == (False, 'slipped seq_[redacted]')
    result = export([episode], ExportOptions(out=tmp_path / 'ds'))
    assert episodes_of(tmp_path / 'ds')[0]['notes'] == 'slipped seq_[redacted]'
    assert result.episodes == [episode]
    episode.unlink()
    label, problem = recording.label(True)
    assert label is None and 'cannot label' in problem and 'no episode recording' in problem
    off = NodeRecording(False, str(tmp_path), 100.0)
    assert off.label(True) == (None, 'off (parameter record is false)')
