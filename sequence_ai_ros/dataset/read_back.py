"""
One episode of an exported LeRobot dataset read back for the report (its picture and table).

It has what the dataset keeps: the commanded actions and the measured state on the frames'
timestamps, the episode's outcome, holds, underruns and label; not the chunks' latency or the
holds' moments (the report leaves out what it has no data for).
"""

from dataclasses import dataclass, field
import json
from pathlib import Path
from typing import Any

from sequence_ai_ros.contract.action_spaces import is_absolute_space
from sequence_ai_ros.record.episode_data import ARM_JOINTS, Recording

from .lerobot import EPISODES_PATH


class NotADataset(ValueError):
    """A folder that is not an exported dataset, or an episode it does not have."""


@dataclass
class ExportedEpisode:
    """An exported episode with the fields the report reads of a recorded one."""

    label: str
    data: Recording
    row: dict[str, Any]
    parameters: dict[str, Any] = field(default_factory=dict)
    final_distance: float | None = None
    prefetch: bool = True
    namespace: str = ''
    join: str = 'append'
    chunk_s: float | None = None

    @property
    def action_space(self) -> str:
        """Return the action space the episode's actions are in."""
        return str(self.row.get('action_space', ''))

    def describe(self) -> list[str]:
        """Return the lines the report prints about the episode before its table."""
        row = self.row
        verdict = row.get('label') or 'unlabelled'
        notes = f': {row["notes"]}' if row.get('notes') else ''
        return [f'{self.label}: {row.get("length")} frames from {row.get("recording")}, '
                f'task {row["tasks"][0]!r}',
                f'  {verdict}{notes}; outcome {row.get("outcome")}, {row.get("holds")} holds, '
                f'{row.get("underruns")} underruns, {row.get("late_frames")} late frames']


def is_dataset(path: Path) -> bool:
    """Return whether `path` is a dataset folder (meta/info.json in it)."""
    return (Path(path) / 'meta' / 'info.json').is_file()


def load_exported_episode(root: Path, index: int) -> ExportedEpisode:
    """Read episode `index` of the dataset at `root`."""
    import pyarrow.compute as pc  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    root = Path(root)
    info = json.loads((root / 'meta' / 'info.json').read_text(encoding='utf-8'))
    rows = [r for r in pq.read_table(root / EPISODES_PATH).to_pylist()
            if r['episode_index'] == index]
    if not rows:
        raise NotADataset(f'{root} has episodes 0-{info["total_episodes"] - 1}, not {index}')
    row = rows[0]
    path = root / info['data_path'].format(chunk_index=row['data/chunk_index'],
                                           file_index=row['data/file_index'])
    table = pq.read_table(path)
    table = table.filter(pc.equal(table['episode_index'], index))
    times = table['timestamp'].to_pylist()
    data = Recording()
    state_names = info['features']['observation.state']['names']
    data.arm_joints = sum(1 for name in state_names if 'finger' not in name
                          and name != 'gripper') or ARM_JOINTS
    data.commands = [(t, tuple(a), ()) for t, a in zip(times, table['action'].to_pylist())]
    data.joint_states = [(t, tuple(s)) for t, s in
                         zip(times, table['observation.state'].to_pylist())]
    data.outcome = {'outcome': row.get('outcome'), 'actions': row.get('length'),
                    'underruns': row.get('underruns'), 'reason': row.get('reason')}
    data.outcome_time = times[-1] if times else None
    episode = ExportedEpisode(f'episode {index}', data, row, {'model': row.get('model')})
    if episode.action_space and not is_absolute_space(episode.action_space):
        data.command_units = f'the actions as commanded ({episode.action_space}), not positions'
    return episode
