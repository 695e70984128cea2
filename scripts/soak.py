#!/usr/bin/env python3
"""
The chaos soak: one policy node through `--minutes` of randomized faults, invariants checked.

Usage: `.venv/bin/python scripts/soak.py --minutes 20 --seed 7 [--out soak.json]
[--doc docs/RELIABILITY.md]` (or `make soak`). What it runs and checks: test/soak_harness.py.
It prints a table, writes the report as JSON, and with --doc replaces the soak section of
that file. Exit status: 0 when no command was unsafe, no hold late, no step failed and the
node process is alive without a traceback; 1 otherwise.
"""

import argparse
import json
from pathlib import Path
import random
import sys
import tempfile

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'test'))

import conftest  # noqa: E402,F401 (a ROS domain of its own, loopback only, as the tests run)
from ros_harness import RosSide  # noqa: E402
from soak_harness import soak  # noqa: E402
from soak_report import replace_section, section, table  # noqa: E402


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
    side = RosSide()
    try:
        report = soak(side, args.minutes, seed,
                      progress=(lambda line: None) if args.quiet else
                      (lambda line: print(line, flush=True)))
    finally:
        side.close()
    print(table(report))
    out = Path(args.out or Path(tempfile.gettempdir()) / f'soak-{seed}.json')
    out.write_text(json.dumps(report, indent=1) + '\n', encoding='utf-8')
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
