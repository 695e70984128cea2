#!/usr/bin/env python3
"""
The chaos soak: one policy node through `--minutes` of randomized faults, invariants checked.

Usage: `.venv/bin/python scripts/soak.py --minutes 20 --seed 7 [--out soak.json]
[--doc docs/RELIABILITY.md]` (or `make soak`). What it runs and checks: test/soak_harness.py,
through the soak's own test (test/system/test_soak.py), run here for `--minutes` under pytest
(the tests' set-up: a ROS domain of its own, loopback only; no rerun). It prints a table,
writes the report as JSON, and with --doc replaces the soak section of that file. Exit status:
0 when no command was unsafe, no hold late, no step failed and the node process is alive
without a traceback; 1 otherwise (the test's own pass or fail is not the verdict: its counts
and growth bounds are sized for its one-minute run).
"""

import argparse
import json
import os
from pathlib import Path
import random
import subprocess
import sys
import tempfile

from sequence_ai_ros.harness.soak_report import replace_section, section, table

REPO = Path(__file__).resolve().parents[1]
SOAK_TEST = 'test/system/test_soak.py::test_a_short_soak_keeps_every_invariant'


def run_soak(minutes: float, seed: int, out: Path, quiet: bool) -> dict | None:
    """Run the soak's test for `minutes` with `seed`; return its report, None if it wrote none."""
    out.unlink(missing_ok=True)
    env = dict(os.environ, SEQUENCE_AI_ROS_SOAK_MINUTES=str(minutes),
               SEQUENCE_AI_ROS_SOAK_SEED=str(seed), SEQUENCE_AI_ROS_SOAK_REPORT=str(out))
    subprocess.call([sys.executable, '-m', 'pytest', SOAK_TEST, '-q', '-p', 'no:cacheprovider',
                     '-p', 'no:rerunfailures', *(() if quiet else ('-s',))], cwd=REPO, env=env)
    return json.loads(out.read_text(encoding='utf-8')) if out.exists() else None


def main() -> int:
    """Run the soak, print its table, write its JSON (and doc section); 0 if it all held."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--minutes', type=float, default=20.0)
    parser.add_argument('--seed', type=int, default=None,
                        help='seed of the schedule (default: drawn and printed)')
    parser.add_argument('--out', default=None,
                        help='JSON report (default: soak-<seed>.json in the temp folder)')
    parser.add_argument('--doc', default=None,
                        help='markdown file whose soak section to replace, e.g. '
                             'docs/RELIABILITY.md')
    parser.add_argument('--quiet', action='store_true', help='no line per step')
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    print(f'soak: {args.minutes:g} minutes, seed {seed}', flush=True)
    out = Path(args.out or Path(tempfile.gettempdir()) / f'soak-{seed}.json').resolve()
    report = run_soak(args.minutes, seed, out, args.quiet)
    if report is None:
        print(f'the soak wrote no report ({out}): its set-up failed, see above')
        return 1
    print(table(report))
    print(f'report: {out}')
    if args.doc:
        command = f'scripts/soak.py --minutes {args.minutes:g} --seed {seed}'
        doc = Path(args.doc)
        text = doc.read_text(encoding='utf-8') if doc.exists() else ''
        doc.write_text(replace_section(text, section(report, command)), encoding='utf-8')
        print(f'soak section: {doc}')
    held = report['unsafe_commands'] == 0 and report['holds_late'] == 0 and \
        not report['failures'] and report['process_alive'] and report['tracebacks'] == 0
    return 0 if held else 1


if __name__ == '__main__':
    sys.exit(main())
