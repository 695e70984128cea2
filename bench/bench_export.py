"""
The export benchmark: the LeRobot export's time per recorded minute and peak memory.

`sequence-ai-ros export --format lerobot` on folders of N recordings.

Run: .venv/bin/python -m bench.bench_export [--episodes 5 20 47] [--minutes 1] [--distinct 4]
     [--time-scale 0.25]
     .venv/bin/python -m bench.bench_export --from DIR   (a folder of the node's recordings, e.g.
     the operator session's: exported once, as they are)

Records `--distinct` real run(record=...) episodes of `--minutes` model minutes each (pi05-droid
at 15 Hz against the local gateway, played at `--time-scale`: two camera views as the node
sends them, one request a chunk), then for each N a folder of N recordings (the distinct ones
repeated, each file a copy) is exported by the command line in a process of its own: its wall
time, its peak resident memory (the child's ru_maxrss) and the dataset's size. A recorded
minute is 900 frames (a minute of commands at 15 Hz), whatever the time scale it was played at.
Prints a table.
"""

import argparse
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
import time

from sequence_ai_ros.world import arm_model

from ._record import command_line, header

RATE_HZ = 15.0
MODEL = 'pi05-droid'
KEY = 'seq_bench_export_key_0000000000001'


def record(folder: Path, count: int, minutes: float, time_scale: float) -> list[Path]:
    """Record `count` episodes of `minutes` model minutes into `folder`."""
    import sequence_ai_ros as sai
    from sequence_ai_ros.gateway.process import GatewayProcess
    from sequence_ai_ros.node.images import encode_raw_image
    from sequence_ai_ros.sim.render import SceneRenderer

    renderer = SceneRenderer(320, 240)

    def frame(q: list[float], view: str) -> sai.ImageFrame:
        pixels = (renderer.exterior if view == 'exterior_1' else renderer.wrist)(q, (0.5, 0.2))
        height, width = pixels.shape[:2]
        data = encode_raw_image('rgb8', width, height, width * 3, pixels.tobytes()).base64()
        return sai.ImageFrame(view=view, data=data)

    paths = []
    with GatewayProcess(['--time-scale', str(time_scale), '--start-warm'],
                        keys={KEY: 10_000_000}) as gateway:
        for number in range(count):
            q = list(arm_model.HOME)

            def observe(q: list[float] = q) -> sai.Observation:
                return sai.Observation(
                    images=[frame(q, v) for v in ('exterior_1', 'wrist')],
                    proprioception=sai.Proprioception(joint_positions=list(q), gripper=0.0),
                    instruction='reach the red disc')

            def act(action: list[float], q: list[float] = q) -> None:
                q[:] = [p + v / RATE_HZ for p, v in zip(q, action[:7])]

            path = folder / f'distinct_{number}.mcap'
            with sai.connect(MODEL, api_key=KEY, base_url=gateway.base_url) as policy:
                policy.run(observe, act, validate=lambda action: True, record=path,
                           max_actions=int(minutes * 60 * RATE_HZ))
            paths.append(path)
    return paths


def export_once(folder: Path, out: Path) -> tuple[float, float, str]:
    """Export `folder` in a child process; (seconds, peak RSS MB of the child, its last line)."""
    code = ('import resource, sys\n'
            'from sequence_ai_ros.cli.command import main\n'
            'status = main(sys.argv[1:])\n'
            'print("maxrss_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n'
            'sys.exit(status)\n')
    started = time.monotonic()
    result = subprocess.run([sys.executable, '-c', code, 'export', '--format', 'lerobot',
                             str(folder), '--out', str(out)], capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f'export failed: {result.stderr[-2000:]}')
    lines = result.stdout.strip().splitlines()
    rss_kb = float(lines[-1].split()[1])
    return seconds, rss_kb / 1024.0, lines[-2]


def size_mb(folder: Path) -> float:
    """Return the bytes under `folder`, in MB."""
    return sum(p.stat().st_size for p in folder.rglob('*') if p.is_file()) / 1e6


def export_folder(source: Path, argv: list[str] | None, started: float) -> int:
    """Export the recordings in `source` once and print their row."""
    recordings = sorted(source.glob('*.mcap'))
    if not recordings:
        raise SystemExit(f'bench_export: no .mcap file in {source}')
    with tempfile.TemporaryDirectory(prefix='bench_export_') as tmp:
        out = Path(tmp) / 'dataset'
        seconds, rss_mb, summary = export_once(source, out)
        frames = int(summary.split(' episodes, ')[1].split(' frames')[0])
        exported = int(summary.split(' episodes, ')[0].split()[-1])
        out_mb = size_mb(out)
    print(header(command_line('bench.bench_export', argv), time.monotonic() - started))
    print(f'{len(recordings)} recordings in {source}; {summary}\n')
    print('| recordings | exported episodes | frames | export s | peak RSS MB | recordings MB '
          '| dataset MB |')
    print('|---:|---:|---:|---:|---:|---:|---:|')
    print(f'| {len(recordings)} | {exported} | {frames} | {seconds:.1f} | {rss_mb:.0f} | '
          f'{sum(p.stat().st_size for p in recordings) / 1e6:.1f} | {out_mb:.1f} |')
    return 0


def main(argv: list[str] | None = None) -> int:
    """Record, export each folder, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--episodes', type=int, nargs='+', default=[5, 20, 47])
    parser.add_argument('--minutes', type=float, default=1.0)
    parser.add_argument('--distinct', type=int, default=4)
    parser.add_argument('--time-scale', type=float, default=0.25)
    parser.add_argument('--from', dest='source', type=Path, default=None, metavar='DIR',
                        help='export this folder of recordings instead of recording episodes')
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.source is not None:
        return export_folder(args.source, argv, started)
    with tempfile.TemporaryDirectory(prefix='bench_export_') as tmp:
        root = Path(tmp)
        (root / 'distinct').mkdir()
        sources = record(root / 'distinct', args.distinct, args.minutes, args.time_scale)
        recorded_mb = sum(p.stat().st_size for p in sources) / 1e6 / len(sources)
        rows = []
        for count in args.episodes:
            folder = root / f'n{count}'
            folder.mkdir()
            for number in range(count):
                shutil.copyfile(sources[number % len(sources)], folder / f'{number:04d}.mcap')
            seconds, rss_mb, summary = export_once(folder, root / f'dataset_{count}')
            frames = int(summary.split(' episodes, ')[1].split(' frames')[0])
            minutes = frames / RATE_HZ / 60.0
            rows.append((count, minutes, frames, seconds, seconds / minutes, rss_mb,
                         size_mb(folder), size_mb(root / f'dataset_{count}')))
            shutil.rmtree(folder)
            shutil.rmtree(root / f'dataset_{count}')
    print(header(command_line('bench.bench_export', argv), time.monotonic() - started))
    print(f'{args.distinct} distinct {MODEL} episodes of {args.minutes:g} model min '
          f'({recorded_mb:.2f} MB each), two 224x224 views; the export in a process of its own\n')
    print('| recordings | recorded min | frames | export s | s per recorded min | '
          'peak RSS MB | recordings MB | dataset MB |')
    print('|---:|---:|---:|---:|---:|---:|---:|---:|')
    for count, minutes, frames, seconds, per_minute, rss, source_mb, out_mb in rows:
        print(f'| {count} | {minutes:.1f} | {frames} | {seconds:.1f} | {per_minute:.2f} | '
              f'{rss:.0f} | {source_mb:.1f} | {out_mb:.1f} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
