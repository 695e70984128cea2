"""`sequence-ai-ros label` and `sequence-ai-ros export`: from recorded episodes to a dataset."""

import argparse
from pathlib import Path
import sys
from typing import Any

from sequence_ai_ros.cli.arguments import positive_int
from sequence_ai_ros.cli.names import PROG

LABEL_DESCRIPTION = f"""\
Label a recorded episode a success or a failure, with notes (the label goes beside the
recording, EPISODE.label.json; labelling again replaces it). The policy node's
~/label_episode service does the same for the episode it has just run.

  {PROG} label EPISODE.mcap --success [--notes TEXT]
  {PROG} label EPISODE.mcap --failure --notes 'dropped the cup'"""

EXPORT_DESCRIPTION = f"""\
Export recorded episodes as a dataset: one episode per recording, a frame per command sent (on
the control-rate grid), observation.state, action, observation.images.<view> as video, the
instruction as the task, the label, outcome, model, holds and underruns per episode. Format
lerobot: LeRobot's v3.0 (lerobot 0.4-0.6 load it with LeRobotDataset(repo_id, root=DIR)).

  {PROG} export --format lerobot ~/.ros/sequence_ai/episodes --out DIR [--success-only]"""


def add_command(commands: Any) -> None:
    """Add `label` and `export` to the command line's subcommands."""
    label = commands.add_parser('label', help='label a recorded episode a success or failure',
                                description=LABEL_DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    label.add_argument('episode', type=Path, help='the episode file (.mcap)')
    verdict = label.add_mutually_exclusive_group(required=True)
    verdict.add_argument('--success', dest='success', action='store_true', default=None)
    verdict.add_argument('--failure', dest='success', action='store_false')
    label.add_argument('--notes', default='', help="the operator's notes")
    label.set_defaults(handler=run_label)

    export = commands.add_parser('export', help='export recorded episodes as a dataset',
                                 description=EXPORT_DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument('episodes', nargs='+', type=Path,
                        help='episode files (.mcap), or folders of them')
    export.add_argument('--format', required=True, choices=('lerobot',))
    export.add_argument('--out', required=True, type=Path, help='a new (or empty) folder')
    export.add_argument('--repo-id', default='local/sequence_ai_episodes',
                        help="the dataset's name, as LeRobotDataset(repo_id, root=DIR) takes it")
    export.add_argument('--fps', type=positive_int,
                        help="frames a second (default: the first episode's control rate)")
    export.add_argument('--only-labelled', action='store_true',
                        help='leave out episodes without a label')
    export.add_argument('--success-only', action='store_true',
                        help='only episodes labelled a success')
    export.set_defaults(handler=run_export)


def run_label(args: argparse.Namespace) -> int:
    """Write the label; return the exit status."""
    from sequence_ai_ros.record.labels import label_episode, label_path, LabelError

    try:
        label = label_episode(args.episode, args.success, args.notes)
    except (LabelError, OSError) as exc:
        print(f'{PROG} label: {exc}', file=sys.stderr)
        return 2
    verdict = 'success' if label.success else 'failure'
    print(f'{args.episode}: {verdict} ({label.labelled_at}), in {label_path(args.episode)}')
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Export the episodes; return the exit status."""
    try:
        from sequence_ai_ros.dataset.export import export, ExportError, ExportOptions
    except ImportError as exc:
        print(f'{PROG} export needs pyarrow, PyAV, numpy and Pillow ({exc}): '
              "pip install 'sequence_ai_ros[record,dataset]'", file=sys.stderr)
        return 2
    options = ExportOptions(out=args.out, repo_id=args.repo_id, fps=args.fps,
                            only_labelled=args.only_labelled, success_only=args.success_only)
    try:
        result = export(args.episodes, options, progress=print)
    except ExportError as exc:
        print(f'{PROG} export: {exc}', file=sys.stderr)
        return 2
    left = f', {len(result.skipped)} left out' if result.skipped else ''
    print(f'{args.out}: {len(result.episodes)} episodes, {result.frames} frames at '
          f'{result.fps} fps{left}; load with LeRobotDataset({args.repo_id!r}, '
          f'root={str(args.out)!r})')
    return 0
