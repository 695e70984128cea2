"""
The episode-recording benchmark: the policy node's tick with recording on and off, and the size.

Run: .venv/bin/python -m bench.bench_recording [--seconds S | --quick] [--rates 15 50]
     [--models pi05-droid ...] [--no-write | --write] [--results PATH]

The control-tick bench's set-up (bench.bench_control_tick: a real node process, the robot
played over DDS with joint states at 100 Hz and two raw 320x240 frames at 15 Hz, a fresh local
gateway per node run, one recorder process stamping every command) runs the policy node at
each rate twice, with `record` true (into the bench's temporary directory) and false, the
order alternating from rate to rate; then one episode per catalogue model at its own control
rate with recording on, for the file's bytes per minute. The node runs on rclpy's
EventsExecutor where this rclpy has one, else the single-threaded executor. Dropped records
come from the node's /diagnostics ('recording dropped'). The default run writes the
Recording section of bench/RESULTS.md (or --results); --quick (10 s per run) only prints,
unless --write.
"""

import argparse
import importlib.util
import os
from pathlib import Path
import sys
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from sequence_ai_ros.demo.configs import config_file
from sequence_ai_ros.gateway.catalogue import load_catalogue
import yaml

from ._record import add_results_options, command_line, header, print_and_write
from ._recording_report import episode_file, FileFigures, report
from .bench_control_tick import Bench, LATENCY_S, RESULTS, WARMUP_S, WIDE_LIMIT_RAD

DEFAULT_SECONDS = 40.0
QUICK_SECONDS = 10.0
IDLE_S = 1.0  # the tick bench's configured-not-active window: not reported here
MODELS = ('pi05-droid', 'cosmos3-edge-policy-droid', 'lingbot-va-5b', 'lingbot-vla-v2-6b')
# What a model's shipped parameter file sets that shapes its requests (how many, how large);
# the rest stays the bench's, so every model meets the same robot and the same limits.
MODEL_FIELDS = ('join_mode', 'max_inflight', 'smooth_seam', 'prefetch', 'image_size',
                'jpeg_quality')
SECTION = '## Recording'
ON, OFF = 'rec_on', 'rec_off'


class RecordingBench(Bench):
    """The tick bench's machinery, planned as recording on/off per rate, then one run a model."""

    def __init__(self, args: argparse.Namespace) -> None:
        catalogue = load_catalogue()
        self.model_rates: dict[str, float] = {}
        for model in args.models:
            profile = catalogue.get(model)
            if profile is None:
                raise SystemExit(f'{model}: not in the gateway catalogue')
            self.model_rates[model] = profile.control_hz
        self.spaces = {m: catalogue.get(m).action_space for m in args.models}  # type: ignore
        self.dropped: dict[str, int] = {}
        self.recording: dict[str, str] = {}
        self.files: dict[int, FileFigures] = {}
        self._diagnostics: Any = None
        super().__init__(args)

    def plan(self) -> None:
        """Plan recording on and off at each rate (order alternating), then each model's run."""
        executor = self.args.executors[0]
        for repeat in range(self.args.repeats):
            for i, rate in enumerate(self.args.rates):
                # Swap the order from pair to pair, for each rate too: a drift in the shared
                # machine's load does not always land on the same side.
                for state in ((ON, OFF) if (repeat + i) % 2 == 0 else (OFF, ON)):
                    self.add('node', executor, rate, f'{state}_{repeat + 1}')
        for model in self.args.models:
            self.add('model', executor, self.model_rates[model], model.replace('-', '_'))

    def model_of(self, run: Any) -> str:
        return next((m for m in self.args.models if m.replace('-', '_') == run.label),
                    'pi05-droid')

    def node_params(self, run: Any) -> dict[str, object]:
        """Return recording on or off; a model run takes its model and request-shaping fields."""
        params = super().node_params(run)
        params.update(record=not run.label.startswith(OFF), hardware_id=self.namespace(run))
        if run.kind == 'model':
            model = self.model_of(run)
            shipped = yaml.safe_load(config_file(model).read_text())['/**']['ros__parameters']
            params.update({k: shipped[k] for k in MODEL_FIELDS if k in shipped}, model=model)
        return params

    def on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if 'recording dropped' in values:
                self.dropped[status.hardware_id] = int(values['recording dropped'])
                self.recording[status.hardware_id] = values.get('recording', '')

    def run_node(self, run: Any) -> None:
        assert self.ros is not None
        if self._diagnostics is None:
            # The robot's node spins in its own thread in this process: it hears /diagnostics.
            self._diagnostics = self.ros.node.create_subscription(
                DiagnosticArray, '/diagnostics', self.on_diagnostics, 10)
        try:
            super().run_node(run)
        finally:
            if not run.label.startswith(OFF):
                # Read after the node stopped: the writer thread has finished the file.
                path = episode_file(Path(str(self.node_params(run)['record_dir'])))
                if path is not None:
                    self.files[run.index] = FileFigures.read(path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=None,
                        help=f'measured seconds per run (default {DEFAULT_SECONDS:g}; '
                        f'--quick {QUICK_SECONDS:g})')
    parser.add_argument('--quick', action='store_true', help=f'{QUICK_SECONDS:g} s per run')
    parser.add_argument('--rates', type=float, nargs='+', default=[15.0, 50.0],
                        help='control rates of the on/off comparison in Hz (default 15 50)')
    parser.add_argument('--repeats', type=int, default=2,
                        help='on/off pairs per rate, the order alternating (default 2)')
    parser.add_argument('--models', nargs='*', default=list(MODELS),
                        help='catalogue models to measure bytes per minute for (default: all '
                        'four; none to skip)')
    add_results_options(parser, RESULTS, 'Recording')
    args = parser.parse_args(argv)
    if args.seconds is None:
        args.seconds = QUICK_SECONDS if args.quick else DEFAULT_SECONDS
    if args.write is None:
        args.write = args.seconds >= DEFAULT_SECONDS
    args.models = list(dict.fromkeys(args.models))
    # The tick bench's robot and windows, as its defaults.
    args.idle_seconds, args.joint_rate, args.camera_rate = IDLE_S, 100.0, 15.0
    args.camera_size = (320, 240)
    events = importlib.util.find_spec('rclpy.experimental') is not None
    args.executors = ['events' if events else 'single']
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the bench, print the tables, and update RESULTS.md for a full run."""
    args = parse_args(argv)
    began, load_before = time.monotonic(), os.getloadavg()
    tables = RecordingBench(args).run_and_report(
        'recording', f' on/off, models {", ".join(args.models) or "none"}, executor '
        f'{args.executors[0]}', report)
    if tables is None:
        return 130
    ticks, on_off, models = tables
    runtime = time.monotonic() - began
    load = ' / '.join(', '.join(f'{v:.1f}' for v in loads)
                      for loads in (load_before, os.getloadavg()))
    width, height = args.camera_size
    sections = [
        header(command_line('bench.bench_recording', argv), runtime) + f'  \nLoad average '
        f'(1, 5, 15 min) at the start / the end: {load} ({os.cpu_count()} cores).',
        f"The control-tick bench's set-up (see Control tick): `python -m "
        'sequence_ai_ros.node.main` on the '
        f'**{args.executors[0]}** executor, pi05-droid through a fresh local gateway per run '
        f'(time scale 1.0, warm, median latency {LATENCY_S:g} s, seed 0), the robot played '
        f'from the bench (joint states {args.joint_rate:g} Hz, two raw {width}x{height} '
        f'frames {args.camera_rate:g} Hz, held still, limits +-{WIDE_LIMIT_RAD:g} rad), one '
        f'recorder process stamping every command. At each rate the node runs {args.repeats} '
        "time(s) with `record: true` (into the bench's temporary directory) and as often with "
        '`record: false`, the order alternating from pair to pair; each measures '
        f'{args.seconds:g} s after '
        f'{WARMUP_S:g} s of warm-up. **jitter** = |receipt period - nominal period|; **CPU** '
        "= the node process's utime+stime / wall (100% = one core) [main thread]; **dropped** "
        "= the node's last /diagnostics 'recording dropped' (messages the writer queue "
        "refused); **bytes/min** = the finished file's size / the span of its messages. The "
        'machine is shared with other work: compare rows within this run, not across runs.',
        '### Tick, recording on and off\n\n' + ticks,
        "### On / off, same run\n\nThe target: recording widens the tick's p99 jitter by at "
        "most 10% (on / off <= 1.10). Each cell is the median over the rate's windows; "
        '**pairs within** counts the back-to-back pairs whose own ratio meets the target. On a '
        "shared machine one window's p99 moves with the load.\n\n" + on_off,
    ]
    if models:
        sections.append(
            "### Bytes per minute per model\n\nOne episode each at the model's catalogue "
            "control rate, recording on, with the bench's cameras and robot; from each "
            "model's shipped parameter file only " f'{", ".join(MODEL_FIELDS)} (what shapes its '
            'requests). **frames** = the share of the file that is the camera frames as '
            'encoded for the gateway.\n\n' + models)
    print_and_write(sections, args.results, SECTION, args.write)
    return 0


if __name__ == '__main__':
    sys.exit(main())
