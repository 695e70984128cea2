"""`sequence-ai-ros report`: the picture and the outcome table of recorded episodes."""

import argparse
from pathlib import Path
import sys
from typing import Any

from sequence_ai_ros.cli.names import PROG

REPORT_DESCRIPTION = f"""\
Draw a recorded episode (an .mcap file the policy node or run(record=...) wrote): commanded
and measured joints, where chunks join, holds and underruns, the latency of each chunk, the
distance to the target where known; and print its outcome table. With --compare, two episodes
side by side (prefetch on and off, two join modes, two networks). An exported dataset's
episode (`{PROG} export`) is drawn from what the dataset keeps; a panel without data is left out.

  {PROG} report EPISODE.mcap [--out PNG]
  {PROG} report --compare A.mcap B.mcap [--out PNG]
  {PROG} report DATASET_DIR --episode N [--out PNG]"""


def add_command(commands: Any) -> None:
    """Add `report` and its flags to the command line's subcommands."""
    report = commands.add_parser('report', help='draw a recorded episode (.mcap) and its outcome',
                                 description=REPORT_DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    report.add_argument('episode', nargs='?', type=Path,
                        help='the episode file (.mcap), or an exported dataset folder')
    report.add_argument('--episode', dest='index', type=int, default=0, metavar='N',
                        help="a dataset's episode to draw (default 0)")
    report.add_argument('--compare', nargs=2, type=Path, metavar=('A', 'B'),
                        help='two episode files, drawn side by side')
    report.add_argument('--out', type=Path, help='the PNG to write (default: beside the first '
                        'episode, named after it)')
    report.add_argument('--target', nargs=2, type=float, metavar=('X', 'Y'),
                        help="the simulated arm's target (m), to draw the tool's distance to it")
    report.add_argument('--time-scale', type=float, default=1.0,
                        help='wall seconds per model second, as the demo ran (default 1)')
    report.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Draw the episode(s) and print the outcome table; return the exit status."""
    paths: list[Path] = list(args.compare or []) or ([args.episode] if args.episode else [])
    if not paths or (args.compare and args.episode):
        print(f'{PROG} report: give one EPISODE.mcap, or --compare A.mcap B.mcap',
              file=sys.stderr)
        return 2
    if not args.time_scale > 0:
        print(f'{PROG} report: --time-scale must be positive', file=sys.stderr)
        return 2
    try:
        from sequence_ai_ros.demo.plot import render
        from sequence_ai_ros.demo.summary import outcome_table
    except ImportError as exc:
        print(f'{PROG} report draws with matplotlib and numpy, which are missing ({exc}): '
              "pip install 'sequence_ai_ros[demo,record]'", file=sys.stderr)
        return 2
    episodes = []
    for path in paths:
        try:
            episodes.append(_load(path, args.index))
        except (LookupError, ValueError, ImportError) as exc:
            print(f'{PROG} report: {exc}', file=sys.stderr)
            return 2
    for episode in episodes:
        print('\n'.join(episode.describe()))
    target = tuple(args.target) if args.target else None
    scale = args.time_scale
    space = next((e.action_space for e in episodes if e.action_space), '')
    for episode in episodes:
        episode.final_distance = _final_distance(episode, target)
    print(outcome_table(episodes, scale, space))
    out = args.out or _picture_path(paths, args.index)
    chunk = next((e.chunk_s for e in episodes if e.chunk_s), None)
    render(episodes, out, title=_title(episodes), scale=scale,
           chunk_s=None if chunk is None else chunk / scale, join=episodes[0].join,
           target=target)
    print(f'picture: {out}')
    return 0


def _load(path: Path, index: int) -> Any:
    """Read a recording, or an exported dataset's episode; LookupError/ValueError say why."""
    from sequence_ai_ros.record.dependency import RecordingUnavailable
    from sequence_ai_ros.record.recording import load_episode

    if path.is_dir():
        from sequence_ai_ros.dataset.read_back import is_dataset, load_exported_episode

        if not is_dataset(path):
            raise LookupError(f'{path} is a folder but not an exported dataset (no '
                              'meta/info.json)')
        return load_exported_episode(path, index)
    if not path.is_file():
        raise LookupError(f'no such file: {path}')
    try:
        return load_episode(path)
    except RecordingUnavailable as exc:
        raise LookupError(str(exc)) from None


def _picture_path(paths: list[Path], index: int) -> Path:
    first = paths[0]
    if first.is_dir():
        return first.with_name(f'{first.name}_episode_{index}.png')  # not into the dataset
    return first.with_name(first.stem + (f'_vs_{paths[1].stem}' if len(paths) > 1 else '')
                           + '.png')


def _final_distance(episode: Any, target: Any) -> float | None:
    """Return the tool's distance to the target at the last measured joints (simulated arm)."""
    data = episode.data
    if target is None or not data.joint_states or data.arm_joints != 7:
        return None
    import numpy as np
    from sequence_ai_ros.world.arm_model import HOVER_Z, tool_position

    hover = np.array([target[0], target[1], HOVER_Z])
    return float(np.linalg.norm(tool_position(data.joint_states[-1][1][:7]) - hover))


def _title(episodes: list[Any]) -> str:
    first = episodes[0]
    model = str(first.parameters.get('model') or first.contents.metadata.get('model', ''))
    model = model.rsplit('/', 1)[-1]
    return (f'{" vs ".join(e.label for e in episodes)}: {model}, '
            f'{first.action_space or "no chunk"}, join {first.join}')


def main(argv: list[str] | None = None) -> int:
    """Run `report` alone: python -m sequence_ai_ros.cli.report_command EPISODE.mcap."""
    parser = argparse.ArgumentParser(prog=PROG)
    add_command(parser.add_subparsers(dest='command', required=True))
    args = parser.parse_args(['report', *(sys.argv[1:] if argv is None else argv)])
    code: int = args.handler(args)
    return code


if __name__ == '__main__':
    sys.exit(main())
