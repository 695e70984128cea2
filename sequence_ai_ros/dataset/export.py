"""
`sequence-ai-ros export --format lerobot`: recordings, one at a time, into one LeRobot dataset.

Each recording is read (streamed) into its frames, written, and let go before the next is read,
so a folder of any length exports in the memory of its longest episode. The dataset's fps is
--fps, else the first episode's control rate; an episode recorded at another rate is taken at
every n-th command when its rate is a multiple, and left out (said why) when not. A recording
that cannot be exported (no command sent, other joints or cameras than the first, damaged) is
left out with the reason and the rest go on: the recordings themselves are only read.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sequence_ai_ros.record.dependency import RecordingUnavailable
from sequence_ai_ros.record.labels import LabelError

from .episode_frames import EpisodeFrames, EpisodeUnusable, read_frames
from .lerobot import EpisodeData, LeRobotWriter
from .lerobot_files import DatasetShapeError

RATE_TOLERANCE = 0.01  # relative: 14.99 Hz is 15 Hz


class ExportError(ValueError):
    """An export that cannot start (an output folder in use, nothing to export)."""


@dataclass
class ExportOptions:
    """What to export and how."""

    out: Path
    repo_id: str = 'local/sequence_ai_episodes'
    fps: int | None = None
    only_labelled: bool = False
    success_only: bool = False
    robot_type: str | None = None


@dataclass
class ExportResult:
    """What an export wrote and what it left out, with why."""

    episodes: list[Path] = field(default_factory=list)
    frames: int = 0
    fps: int = 0
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    seconds_recorded: float = 0.0


def recordings(paths: Iterable[Path]) -> list[Path]:
    """Return the .mcap files `paths` name (a folder: the recordings in it), by name (time)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if not path.exists():
            raise ExportError(f'no such file or folder: {path} (nothing was written)')
        found.extend(sorted(path.glob('*.mcap')) if path.is_dir() else [path])
    return found


def export(paths: Iterable[Path], options: ExportOptions,
           progress: Callable[[str], Any] = lambda line: None) -> ExportResult:
    """Export the recordings `paths` names into `options.out`; return what was done."""
    out = Path(options.out)
    if out.exists() and any(out.iterdir()):
        raise ExportError(f'{out} is not empty: give a new folder (nothing was written)')
    files = recordings(paths)
    if not files:
        raise ExportError('no recordings given (.mcap files, or folders holding them)')
    result = ExportResult(fps=options.fps or 0)
    writer: LeRobotWriter | None = None
    for path in files:
        try:
            episode = _read(path, result.fps or None)
            reason = _left_out(episode, options)
            if reason:
                result.skipped.append((path, reason))
                continue
            if writer is None:
                result.fps = result.fps or _whole_rate(episode.control_hz)
                if not result.fps:
                    raise EpisodeUnusable(f'control rate {episode.control_hz:g} Hz is not a '
                                          'whole number of frames a second: give --fps')
                episode = _read(path, result.fps)
                writer = LeRobotWriter(out, result.fps, episode.action_names,
                                       episode.state_names, episode.views, options.robot_type)
            _check_names(writer, episode)
            writer.add(_episode_data(episode))
        except (EpisodeUnusable, DatasetShapeError, LabelError, RecordingUnavailable,
                OSError) as exc:
            result.skipped.append((path, str(exc)))
            progress(f'left out {path.name}: {exc}')
            continue
        result.episodes.append(path)
        result.frames += len(episode.frames)
        result.seconds_recorded += episode.frames[-1].time - episode.frames[0].time
        progress(f'episode {len(result.episodes) - 1}: {path.name}, {len(episode.frames)} '
                 f'frames, {_label_text(episode)}, {episode.outcome.get("outcome", "?")}')
    if writer is None:
        raise ExportError('no episode to export: ' + '; '.join(
            f'{p.name}: {why}' for p, why in result.skipped))
    writer.close()
    return result


def _read(path: Path, fps: int | None) -> EpisodeFrames:
    return read_frames(path, fps)


def _whole_rate(hz: float) -> int:
    rate = round(hz)
    return rate if rate > 0 and abs(hz - rate) <= RATE_TOLERANCE * hz else 0


def _left_out(episode: EpisodeFrames, options: ExportOptions) -> str:
    if options.only_labelled and episode.label is None:
        return 'not labelled (--only-labelled)'
    if options.success_only and (episode.label is None or not episode.label.success):
        return 'not labelled a success (--success-only)'
    return ''


def _check_names(writer: LeRobotWriter, episode: EpisodeFrames) -> None:
    for what, theirs, ours in (('action', episode.action_names, writer.action_names),
                               ('state', episode.state_names, writer.state_names),
                               ('cameras', episode.views, writer.views)):
        if theirs != ours:
            raise DatasetShapeError(f'{what} {theirs}, where the dataset has {ours} (export '
                                    'episodes of another arm or camera set to their own folder)')


def _episode_data(episode: EpisodeFrames) -> EpisodeData:
    frames = episode.frames
    label, outcome = episode.label, episode.outcome
    columns = {
        'label': '' if label is None else 'success' if label.success else 'failure',
        'success': None if label is None else label.success,
        'notes': '' if label is None else label.notes,
        'labelled_at': '' if label is None else label.labelled_at,
        'outcome': str(outcome.get('outcome', '')), 'reason': str(outcome.get('reason', '')),
        'model': episode.model, 'action_space': episode.action_space,
        'holds': episode.holds, 'underruns': int(outcome.get('underruns') or 0),
        'late_frames': episode.late_frames, 'image_max_age_s': episode.image_max_age_s,
        'restamped': episode.restamped, 'control_hz': episode.control_hz,
        'truncated': episode.truncated, 'recording': episode.path.name,
    }
    return EpisodeData(
        task=episode.instruction or '(no instruction)',
        actions=np.array([f.action for f in frames], dtype=np.float32),
        states=np.array([f.state for f in frames], dtype=np.float32),
        images={view: [f.images[view] for f in frames] for view in episode.views},
        columns=columns)


def _label_text(episode: EpisodeFrames) -> str:
    label = episode.label
    return 'unlabelled' if label is None else 'success' if label.success else 'failure'
