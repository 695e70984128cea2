"""
The chaos soak: for N minutes, a randomized schedule of faults over one running node.

Steps are drawn with a seeded random.Random, uniformly, from every kind of the operator
session (operator_plan.steps: network faults through the FaultProxy, bad and stale inputs, the
safety gate, refusals, the gateway restarted cold, lifecycle calls, the hold service absent or
refusing, bad calls) and the soak's own (soak_steps: the gateway killed, frozen with SIGSTOP,
latency spikes). Each step checks itself as in the session; the soak goes on after a failed
one (recording it) unless the node process is gone. Invariants, all along:

- unsafe commands, all counted, must be 0: a command the robot's audit refuses as it arrives
  (operator_robot: any while no episode runs, non-finite, a value or a step of a bad answer's
  marker, outside the limits, more than max_step_change from the previous); a moving command
  after a hold was due (so none while an input is stale: the deadline of a stale-input fault
  is when this side stopped sending it + its timeout + one period of it + one control period
  + MARGIN_S); anything after an episode's final hold;
- every hold that was due came by that deadline (the time to see the fault, one control
  period and MARGIN_S; for the gateway gone, one control period and MARGIN_S after the plan
  in hand ran dry), counted late otherwise;
- the node process alive, no traceback in its log;
- no leak: resident memory, file descriptors and threads of the node sampled every SAMPLE_S
  on a thread, with a least-squares slope per hour (after the first WARMUP_S of runs longer
  than 3 minutes); threads and sockets back at the baseline after every step.
"""

import collections
import contextlib
import json
from pathlib import Path
import random
import threading
import time

from operator_harness import operator_session, Session
from operator_plan import run_step, steps
from ros_harness import log_faults
from sequence_ai_ros.harness.proc_stats import resident_kib, thread_count
from sequence_ai_ros.harness.soak_report import machine
from soak_steps import SOAK_STEPS
from system.test_node_lifecycle_abuse import settle

SAMPLE_S = 5.0
WARMUP_S = 60.0
NAMESPACE = 'soak'


class Sampler:
    """Samples (seconds since start, RSS KiB, open fds, threads) of a process on a thread."""

    def __init__(self, pid: int, period_s: float = SAMPLE_S) -> None:
        self.pid, self.period_s = pid, period_s
        self.started = time.monotonic()
        self.samples: list[tuple[float, int, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        try:
            fds = len(list(Path(f'/proc/{self.pid}/fd').iterdir()))
            self.samples.append((round(time.monotonic() - self.started, 1),
                                 resident_kib(self.pid), fds, thread_count(self.pid)))
        except (OSError, RuntimeError):  # the process is gone: the soak says so elsewhere
            pass

    def _run(self) -> None:
        self.sample()
        while not self._stop.wait(self.period_s):
            self.sample()

    def __enter__(self) -> 'Sampler':
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sample()


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, value) points, per hour; None under three points."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return None
    cov = sum((t - mean_t) * (v - mean_v) for t, v in points)
    return round(cov / var * 3600.0, 2)


def slopes(samples: list[tuple[float, int, int, int]], minutes: float) -> dict[str, float | None]:
    """Slopes per hour of RSS (KiB), fds and threads, past the warm-up of a long run."""
    skip = WARMUP_S if minutes >= 3 else 0.0
    kept = [s for s in samples if s[0] >= skip] or samples
    return {name: slope_per_hour([(s[0], s[i]) for s in kept])
            for i, name in ((1, 'rss_kib'), (2, 'fds'), (3, 'threads'))}


def soak(ros, minutes: float, seed: int, progress=print) -> dict:
    """Run the soak for `minutes` with `seed`; return its report (soak_report formats it)."""
    rng = random.Random(seed)
    kinds = steps() + SOAK_STEPS
    runs: collections.Counter = collections.Counter()
    areas = {step.name: step.area for step in kinds}
    failures: list[dict] = []
    unsafe: list[str] = []
    started, where = time.monotonic(), machine()
    with operator_session(ros, NAMESPACE) as s, Sampler(s.node.pid) as sampler:
        baseline = s.baseline
        deadline = time.monotonic() + minutes * 60.0  # the set-up is not soak time
        while time.monotonic() < deadline and s.node.process.proc.poll() is None:
            step = rng.choice(kinds)
            runs[step.name] += 1
            try:
                record = run_step(s, step)
                progress(f'{time.monotonic() - started:7.1f} s  {step.name}: {record.summary}')
            except Exception as exc:  # noqa: BLE001 (recorded; the soak goes on)
                failures.append({'step': step.name, 'at_s': round(time.monotonic() - started, 1),
                                 'error': f'{type(exc).__name__}: {exc}'[:3000]})
                progress(f'{time.monotonic() - started:7.1f} s  {step.name}: FAILED {exc}'[:400])
                _recover(s)
            unsafe += [text for _, text in s.robot.violations] + s.unsafe
            s.robot.violations.clear()
            s.unsafe.clear()
        alive = s.node.process.proc.poll() is None
        final = settle(s.node.pid, baseline) if alive else None
        log = s.node.process.log()
        report = _report(s, minutes, seed, time.monotonic() - started, runs, areas, failures,
                         unsafe, alive, baseline, final, log)
    report['machine'] = where
    report['samples'] = sampler.samples
    report['slopes_per_hour'] = slopes(sampler.samples, minutes)
    return report


def _recover(s: Session) -> None:
    with contextlib.suppress(Exception):
        s.recover()


def _report(s: Session, minutes: float, seed: int, wall_s: float, runs, areas, failures,
            unsafe, alive, baseline, final, log) -> dict:
    late = [h for h in s.holds if h[1] is None or h[1] > h[2]]
    outcomes = collections.Counter(_outcome(text) for text in s.robot.outcomes)
    return {
        'minutes': minutes, 'seed': seed, 'wall_s': round(wall_s, 1),
        'steps': sum(runs.values()), 'faults_by_kind': dict(sorted(runs.items())),
        'areas': {name: areas[name] for name in runs},
        'episodes': len(s.robot.outcomes), 'outcomes': dict(outcomes),
        'unsafe_commands': len(unsafe), 'unsafe': unsafe[:20],
        'holds_due': len(s.holds), 'holds_late': len(late), 'late': late[:20],
        # The hold closest to its bound: (what, seconds, seconds allowed).
        'tightest_hold': max((h for h in s.holds if h[1] is not None),
                             key=lambda h: h[1] / h[2], default=None),
        'failures': failures, 'stalls': s.stalls, 'process_alive': alive,
        'tracebacks': len(log_faults(log)), 'baseline': list(baseline),
        'final': list(final) if final else None,
        'rss_kib': [s.rss_kib[0][1], s.rss_kib[-1][1]],
    }


def _outcome(text: str) -> str:
    return json.loads(text).get('outcome', '?')
