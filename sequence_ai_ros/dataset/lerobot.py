"""
LeRobot's on-disk dataset format v3.0, written an episode at a time in bounded memory.

The layout and rules are the ones lerobot 0.4-0.6 read (`LeRobotDataset(repo_id, root=DIR)`):

  meta/info.json                        codebase_version v3.0, fps, features, totals, paths
  meta/stats.json                       per feature: min max mean std count q01 q10 q50 q90 q99
  meta/tasks.parquet                    the task strings (pandas index `task`) and task_index
  meta/episodes/chunk-000/file-000.parquet   a row per episode: where its frames and videos
                                        are, its task, and this package's columns (label,
                                        outcome, model, holds, underruns, late frames)
  data/chunk-CCC/file-FFF.parquet       a row per frame: action, observation.state, timestamp,
                                        frame_index, episode_index, index, task_index
  videos/<key>/chunk-CCC/file-FFF.mp4   each camera's frames, episodes one after another

Episodes share a data file and a video file until it passes its size (data_files_size_in_mb,
video_files_size_in_mb), then the next file begins; a chunk holds chunks_size files. A frame's
timestamp is frame_index / fps, and its picture is at from_timestamp + timestamp in its video.
Only the statistics' running sums, the episode rows and the open files are kept.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .lerobot_files import CHUNKS_SIZE, DatasetShapeError, ParquetFiles, VIDEO_PATH, VideoFiles
from .stats import Stats

CODEBASE_VERSION = 'v3.0'
DATA_FILE_MB = 100
VIDEO_FILE_MB = 200
DATA_PATH = 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
EPISODES_PATH = 'meta/episodes/chunk-000/file-000.parquet'
IMAGE_KEY = 'observation.images.{view}'


@dataclass
class EpisodeData:
    """One episode as the writer takes it (episode_frames.EpisodeFrames becomes this)."""

    task: str
    actions: np.ndarray   # (frames, action dims), float32
    states: np.ndarray    # (frames, state dims), float32
    images: dict[str, Sequence[bytes]]  # view -> each frame's JPEG
    columns: dict[str, Any] = field(default_factory=dict)  # this package's episode columns


class LeRobotWriter:
    """Write episodes into a new LeRobot v3.0 dataset at `root`; close() writes meta/."""

    def __init__(self, root: Path, fps: int, action_names: list[str], state_names: list[str],
                 views: list[str], robot_type: str | None = None,
                 data_file_mb: float = DATA_FILE_MB, video_file_mb: float = VIDEO_FILE_MB) -> None:
        self.root = Path(root)
        self.fps = int(fps)
        self.action_names, self.state_names, self.views = action_names, state_names, views
        self.robot_type = robot_type
        self.data_file_mb, self.video_file_mb = data_file_mb, video_file_mb
        self.tasks: dict[str, int] = {}
        self.episodes: list[dict[str, Any]] = []
        self.frames = 0
        self.image_shape: tuple[int, int] | None = None
        self._data = ParquetFiles(self.root, DATA_PATH, data_file_mb)
        self._videos: dict[str, VideoFiles] = {}
        self._stats = {'action': Stats(), 'observation.state': Stats()}
        self._image_stats = {view: Stats() for view in views}
        self._timestamp_stats, self._index_stats = Stats(), Stats()
        self._episode_index_stats, self._frame_index_stats = Stats(), Stats()
        self._task_index_stats = Stats()

    def add(self, episode: EpisodeData) -> int:
        """Write one episode's frames and videos; return its episode_index."""
        length = len(episode.actions)
        self._check(episode, length)
        index = len(self.episodes)
        task_index = self.tasks.setdefault(episode.task, len(self.tasks))
        row: dict[str, Any] = {'episode_index': index, 'tasks': [episode.task], 'length': length}
        for view in self.views:
            key = IMAGE_KEY.format(view=view)
            files = self._videos.get(view)
            if files is None:
                files = VideoFiles(self.root, key, self.fps, self.video_file_mb)
                self._videos[view] = files
            chunk, number, start = files.add(episode.images[view], self._image_stats[view])
            row.update({f'videos/{key}/chunk_index': chunk, f'videos/{key}/file_index': number,
                        f'videos/{key}/from_timestamp': start / self.fps,
                        f'videos/{key}/to_timestamp': (start + length) / self.fps})
            if self.image_shape is None:
                self.image_shape = files.shape
        frame_index = np.arange(length, dtype=np.int64)
        table = _frames_table(episode, frame_index, index, self.frames, task_index, self.fps)
        chunk, number = self._data.add(table)
        row.update({'data/chunk_index': chunk, 'data/file_index': number,
                    'dataset_from_index': self.frames, 'dataset_to_index': self.frames + length,
                    'meta/episodes/chunk_index': 0, 'meta/episodes/file_index': 0})
        row.update(episode.columns)
        self._stats['action'].add(episode.actions)
        self._stats['observation.state'].add(episode.states)
        self._timestamp_stats.add((frame_index / self.fps)[:, None])
        self._frame_index_stats.add(frame_index[:, None])
        self._index_stats.add((frame_index + self.frames)[:, None])
        self._episode_index_stats.add(np.full((length, 1), index))
        self._task_index_stats.add(np.full((length, 1), task_index))
        self.episodes.append(row)
        self.frames += length
        return index

    def close(self) -> None:
        """Finish the open files and write meta/ (info, stats, tasks, episodes)."""
        self._data.close()
        for files in self._videos.values():
            files.close()
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        (self.root / 'meta').mkdir(parents=True, exist_ok=True)
        episodes = pa.Table.from_pylist(self.episodes)
        (self.root / EPISODES_PATH).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(episodes, self.root / EPISODES_PATH)
        pq.write_table(_tasks_table(self.tasks), self.root / 'meta' / 'tasks.parquet')
        _write_json(self.root / 'meta' / 'info.json', self.info())
        _write_json(self.root / 'meta' / 'stats.json', self.stats())

    def info(self) -> dict[str, Any]:
        """Return meta/info.json's fields."""
        features: dict[str, Any] = {
            'action': {'dtype': 'float32', 'shape': [len(self.action_names)],
                       'names': self.action_names},
            'observation.state': {'dtype': 'float32', 'shape': [len(self.state_names)],
                                  'names': self.state_names},
        }
        for view, files in self._videos.items():
            height, width = files.shape
            features[IMAGE_KEY.format(view=view)] = {
                'dtype': 'video', 'shape': [height, width, 3],
                'names': ['height', 'width', 'channels'], 'info': files.info()}
        for name, dtype in (('timestamp', 'float32'), ('frame_index', 'int64'),
                            ('episode_index', 'int64'), ('index', 'int64'),
                            ('task_index', 'int64')):
            features[name] = {'dtype': dtype, 'shape': [1], 'names': None}
        return {'codebase_version': CODEBASE_VERSION, 'robot_type': self.robot_type,
                'total_episodes': len(self.episodes), 'total_frames': self.frames,
                'total_tasks': len(self.tasks), 'chunks_size': CHUNKS_SIZE,
                'data_files_size_in_mb': max(1, math.ceil(self.data_file_mb)),
                'video_files_size_in_mb': max(1, math.ceil(self.video_file_mb)),
                'fps': self.fps, 'splits': {'train': f'0:{len(self.episodes)}'},
                'data_path': DATA_PATH, 'video_path': VIDEO_PATH if self.views else None,
                'features': features}

    def stats(self) -> dict[str, Any]:
        """Return meta/stats.json's fields (images per channel, in [0, 1], shaped (3, 1, 1))."""
        stats = {name: s.result() for name, s in self._stats.items()}
        for view, image in self._image_stats.items():
            stats[IMAGE_KEY.format(view=view)] = {
                k: v if k == 'count' else np.asarray(v).reshape(3, 1, 1) / 255.0
                for k, v in image.result().items()}
        stats.update({'timestamp': self._timestamp_stats.result(),
                      'frame_index': self._frame_index_stats.result(),
                      'episode_index': self._episode_index_stats.result(),
                      'index': self._index_stats.result(),
                      'task_index': self._task_index_stats.result()})
        return {name: {k: np.asarray(v).tolist() for k, v in s.items()}
                for name, s in stats.items()}

    def _check(self, episode: EpisodeData, length: int) -> None:
        if length == 0:
            raise DatasetShapeError('an episode without frames')
        for name, values, names in (('action', episode.actions, self.action_names),
                                    ('observation.state', episode.states, self.state_names)):
            if values.shape != (length, len(names)):
                raise DatasetShapeError(f'{name} has {values.shape[1:]} values a frame, the '
                                        f'dataset {len(names)} ({", ".join(names)})')
        if sorted(episode.images) != sorted(self.views):
            raise DatasetShapeError(f'views {sorted(episode.images)}, the dataset {self.views}')


def _frames_table(episode: EpisodeData, frame_index: np.ndarray, episode_index: int,
                  first: int, task_index: int, fps: int) -> Any:
    import pyarrow as pa

    length = len(frame_index)

    def vectors(values: np.ndarray) -> Any:
        flat = pa.array(np.asarray(values, dtype=np.float32).ravel(), type=pa.float32())
        return pa.FixedSizeListArray.from_arrays(flat, values.shape[1])

    return pa.table({
        'action': vectors(episode.actions),
        'observation.state': vectors(episode.states),
        'timestamp': pa.array((frame_index / fps).astype(np.float32)),
        'frame_index': pa.array(frame_index),
        'episode_index': pa.array(np.full(length, episode_index, dtype=np.int64)),
        'index': pa.array(frame_index + first),
        'task_index': pa.array(np.full(length, task_index, dtype=np.int64)),
    })


def _tasks_table(tasks: dict[str, int]) -> Any:
    """Return the tasks table as pandas writes a DataFrame indexed by `task` (LeRobot's read)."""
    import pyarrow as pa

    names = sorted(tasks, key=tasks.__getitem__)
    table = pa.table({'task_index': pa.array([tasks[n] for n in names], type=pa.int64()),
                      'task': pa.array(names, type=pa.string())})
    pandas = {'index_columns': ['task'],
              'column_indexes': [{'name': None, 'field_name': None, 'pandas_type': 'unicode',
                                  'numpy_type': 'object', 'metadata': {'encoding': 'UTF-8'}}],
              'columns': [{'name': 'task_index', 'field_name': 'task_index',
                           'pandas_type': 'int64', 'numpy_type': 'int64', 'metadata': None},
                          {'name': 'task', 'field_name': 'task', 'pandas_type': 'unicode',
                           'numpy_type': 'object', 'metadata': None}],
              'creator': {'library': 'pyarrow', 'version': pa.__version__},
              'pandas_version': '2.2.3'}
    return table.replace_schema_metadata({'pandas': json.dumps(pandas)})


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + '\n', encoding='utf-8')
