"""
LeRobot 0.6.1 itself loads what `sequence-ai-ros export --format lerobot` writes.

Runs in make test-dataset's venv (scripts/dataset_venv.py: Python 3.12, lerobot[dataset],
torch; no ROS, not this package). The episodes are recorded and exported on the project's venv
($SEQUENCE_AI_ROS_KILTED_PYTHON) as processes: recordings.py writes node and run(record=)
episodes with known stamps and pictures, and real runs against the local gateway; the
command line exports them. Then LeRobotDataset(repo_id, root=DIR) must give the episodes, fps,
features, frames per episode, tasks and labels, the recorded pictures (within the codec's
tolerance) and DataLoader batches, with each video decoder LeRobot has here.
"""

import importlib.util
import json
import os
from pathlib import Path
import subprocess

import numpy as np
import pytest

lerobot_dataset = pytest.importorskip('lerobot.datasets.lerobot_dataset')
torch = pytest.importorskip('torch')

REPO = Path(__file__).resolve().parents[2]
KILTED = os.environ.get('SEQUENCE_AI_ROS_KILTED_PYTHON', '')
REPO_ID = 'local/sequence_ai_episodes'
CODEC_TOLERANCE = 4.0  # mean absolute difference, 0-255
BACKENDS = ('pyav', 'torchcodec')  # LeRobot's decoders; torchcodec is its default


def _decoder(backend):
    """Return `backend`, or skip: torchcodec loads only beside FFmpeg's shared libraries."""
    if backend == 'torchcodec':
        try:
            importlib.import_module('torchcodec.decoders')
        except Exception as exc:  # noqa: BLE001 (its loader raises RuntimeError or OSError)
            pytest.skip(f'torchcodec cannot load here ({type(exc).__name__}); it needs '
                        "FFmpeg's shared libraries, e.g. apt-get install ffmpeg")
    return backend


def _kilted(*args):
    if not KILTED:
        pytest.skip('SEQUENCE_AI_ROS_KILTED_PYTHON names no interpreter (make test-dataset does)')
    result = subprocess.run([KILTED, *map(str, args)], cwd=REPO, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp('episodes')
    made = json.loads(_kilted(REPO / 'test' / 'dataset' / 'recordings.py', root, '--gateway'))
    for name in ('node', 'client', 'gateway'):
        _kilted('-m', 'sequence_ai_ros.cli', 'export', '--format', 'lerobot', root / name,
                '--out', root / f'{name}_dataset', '--repo-id', REPO_ID)
    return root, made


def load(root, backend='pyav', **kwargs):
    return lerobot_dataset.LeRobotDataset(REPO_ID, root=root, video_backend=_decoder(backend),
                                          **kwargs)


def picture(path):
    from PIL import Image
    return np.asarray(Image.open(path).convert('RGB'), dtype=float)


def as_pixels(tensor):
    return tensor.permute(1, 2, 0).numpy().astype(float) * 255.0


@pytest.mark.parametrize('backend', BACKENDS)
def test_node_episodes_load_with_their_frames_pictures_and_labels(exported, backend):
    root, made = exported
    written = made['written']
    dataset = load(root / 'node_dataset', backend)
    assert dataset.num_episodes == 2 and dataset.fps == 15
    assert dataset.num_frames == len(written['node_a']['actions']) + \
        len(written['node_b']['actions'])
    features = dataset.meta.features
    assert features['observation.state']['shape'] == (8,)
    assert features['action']['names'][-1] == 'gripper'
    assert dataset.meta.video_keys == ['observation.images.exterior_1',
                                       'observation.images.wrist']
    episodes = dataset.meta.episodes
    assert [episodes[i]['length'] for i in range(2)] == [40, 25]
    assert (episodes[0]['label'], episodes[0]['notes']) == ('failure', 'bumped the cup')
    assert episodes[0]['holds'] == 2 and episodes[1]['label'] == ''
    first = episodes[1]['dataset_from_index']
    for frame in (0, 5, 12, 24):
        item = dataset[first + frame]
        assert item['task'] == 'put the cup away'
        assert int(item['frame_index']) == frame and int(item['episode_index']) == 1
        assert np.allclose(item['action'].numpy(), written['node_b']['actions'][frame],
                           atol=1e-5)
        for view in ('exterior_1', 'wrist'):
            expected = picture(made['expected'][f'node_b/{frame}/{view}'])
            got = as_pixels(item[f'observation.images.{view}'])
            assert got.shape == expected.shape == (224, 224, 3)
            assert np.mean(np.abs(got - expected)) < CODEC_TOLERANCE, (frame, view)


@pytest.mark.parametrize('backend', BACKENDS)
def test_client_episodes_load_with_tasks_and_a_late_picture_kept(exported, backend):
    root, made = exported
    dataset = load(root / 'client_dataset', backend)
    assert dataset.num_episodes == 3 and dataset.fps == 15
    assert list(dataset.meta.tasks.index) == ['reach the red disc', 'open the drawer']
    episodes = dataset.meta.episodes
    assert [episodes[i]['length'] for i in range(3)] == [45, 30, 20]
    assert [episodes[i]['outcome'] for i in range(3)] == ['completed', 'completed', 'stopped']
    assert episodes[0]['success'] is True and episodes[1]['late_frames'] > 0
    first = episodes[1]['dataset_from_index']
    for frame in (3, 12, 13, 29):
        item = dataset[first + frame]
        assert item['task'] == 'open the drawer'
        got = as_pixels(item['observation.images.wrist'])
        expected = picture(made['expected'][f'client_b/{frame}/wrist'])
        assert np.mean(np.abs(got - expected)) < CODEC_TOLERANCE, frame


def test_a_dataloader_batches_the_real_runs(exported):
    root, _ = exported
    dataset = load(root / 'gateway_dataset')
    assert dataset.num_episodes == 2 and dataset.num_frames == 90
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=True, num_workers=0)
    batch = next(iter(loader))
    assert batch['observation.images.exterior_1'].shape == (8, 3, 224, 224)
    assert batch['observation.state'].shape == (8, 8) and batch['action'].shape == (8, 8)
    assert batch['action'].dtype == torch.float32 and len(batch['task']) == 8
    assert set(batch['task']) == {'reach the red disc'}
    assert torch.all(batch['observation.images.wrist'] <= 1.0)


def test_delta_timestamps_and_stats_as_a_policy_trains_on_them(exported):
    root, _ = exported
    fps = 15
    dataset = load(root / 'node_dataset', delta_timestamps={
        'action': [k / fps for k in range(10)],
        'observation.images.exterior_1': [-1 / fps, 0.0]})
    item = dataset[5]
    assert item['action'].shape == (10, 8) and item['action_is_pad'].sum() == 0
    assert item['observation.images.exterior_1'].shape == (2, 3, 224, 224)
    last = dataset[39]  # the episode's last frame: the chunk after it is padding
    assert last['action_is_pad'].sum() == 9
    stats = dataset.meta.stats
    assert stats['action']['mean'].shape == (8,)
    assert stats['observation.images.wrist']['mean'].shape == (3, 1, 1)
