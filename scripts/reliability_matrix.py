#!/usr/bin/env python3
"""
Rerun every fault test and write docs/RELIABILITY.md from the rows they record.

Usage: `.venv/bin/python scripts/reliability_matrix.py [--out docs/RELIABILITY.md] [pytest args]`
(or `make reliability`). The rows come from the tests that use the `fault_matrix` fixture (their
files are run whole); a row counts as survived only if its test passed.
Exit status: 0 when every case survived with zero unsafe commands, 1 otherwise.
"""

import argparse
from collections import Counter
from datetime import datetime, timezone
import json
import os
from pathlib import Path
import platform
import subprocess
import sys
import tempfile
import time
from xml.etree import ElementTree

from sequence_ai_ros.harness.fault_matrix import AREAS, OUT_ENV
from sequence_ai_ros.harness.soak_report import keep_section

REPO = Path(__file__).resolve().parents[1]

_COLUMNS = ('case', 'what happened', 'time to hold (s)', 'commands after fault',
            'sockets before → after', 'threads before → after', 'survived')


def fault_test_files() -> list[str]:
    """Return the test files that record rows, whole: a case may build on the file's others."""
    return sorted(str(path) for path in (REPO / 'test').glob('*/test_*.py')
                  if 'fault_matrix' in path.read_text(encoding='utf-8'))


def run_fault_tests(pytest_args: list[str]) -> tuple[list[dict], int, float, list[str]]:
    """Run the files; return their rows, pytest's exit status, the wall time, failed tests."""
    with tempfile.TemporaryDirectory() as folder:
        out, junit = Path(folder) / 'rows.jsonl', Path(folder) / 'junit.xml'
        env = dict(os.environ, **{OUT_ENV: str(out)})
        started = time.monotonic()
        status = subprocess.call(
            [sys.executable, '-m', 'pytest', *fault_test_files(), '-q', '-p', 'no:cacheprovider',
             '-p', 'no:rerunfailures',
             f'--junitxml={junit}', *pytest_args], cwd=REPO, env=env)
        wall = time.monotonic() - started
        lines = out.read_text(encoding='utf-8').splitlines() if out.exists() else []
        failed = _failed_tests(junit)
    return [json.loads(line) for line in lines], status, wall, failed


def _failed_tests(junit: Path) -> list[str]:
    # A test that fails before it records its row leaves no row: name it all the same.
    if not junit.exists():
        return []
    failed = []
    for case in ElementTree.parse(junit).iter('testcase'):
        if case.find('failure') is not None or case.find('error') is not None:
            failed.append(f'{case.get("classname")}::{case.get("name")}')
    return failed


def _cell(value: object) -> str:
    if value is None:
        return '-'
    if isinstance(value, float):
        return f'{value:.3f}'
    if isinstance(value, list) and len(value) == 2:
        return f'{value[0]} → {value[1]}'
    return str(value).replace('|', '\\|').replace('\n', ' ')


def render(rows: list[dict], status: int, wall_s: float, failed: list[str]) -> str:
    """Return the markdown of docs/RELIABILITY.md."""
    survived = sum(row['survived'] for row in rows)
    unsafe = sum(int(row['unsafe_commands']) for row in rows)
    per_area = Counter(row['area'] for row in rows)
    now = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO, text=True,
                            capture_output=True).stdout.strip() or 'unknown'
    lines = [
        '# Reliability: the fault matrix',
        '',
        'Every row is a test of the suite (the gateway, the client and the node run as real '
        'processes; network faults come from `sequence_ai_ros.faults.FaultProxy` on loopback). '
        'A row says *survived* only if its test passed, i.e. every assertion about typed '
        'errors, holds, commands and leaks held.',
        '',
        'Regenerate: `.venv/bin/python scripts/reliability_matrix.py` (or `make reliability`).  ',
        f'Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
        f'Python {platform.python_version()} ({platform.system()} {platform.release()}), '
        f'{now}, commit {commit}; {wall_s / 60:.1f} min; load average at the end '
        f'(1, 5, 15 min): {", ".join(f"{load:.2f}" for load in os.getloadavg())}.',
        '',
        '## Counts',
        '',
        f'- cases tried: **{len(rows)}**',
        f'- survived: **{survived}**',
        f'- unsafe commands sent (must be 0): **{unsafe}**',
        f'- failed tests: {len(failed)} (pytest exit status {status})',
        '- per area: ' + ', '.join(
            f'{area} {per_area[area]}' for area in AREAS if per_area[area]),
        '',
        '**time to hold**: from the fault to the hold command (or the hold service call) as '
        'the robot side saw it. **commands after fault**: trajectory commands published after '
        'the hold and before the next explicit start. **unsafe** (in the counts): commands '
        'derived from a fault (a malformed chunk, a stale input) that reached the command '
        'topic or the arm.',
    ]
    for area in AREAS:
        area_rows = [row for row in rows if row['area'] == area]
        if not area_rows:
            continue
        lines += ['', f'## {area[0].upper()}{area[1:]}', '',
                  '| ' + ' | '.join(_COLUMNS) + ' |',
                  '|' + '---|' * len(_COLUMNS)]
        for row in area_rows:
            cells = (row['case'], row['outcome'], row['time_to_hold_s'],
                     row['commands_after_fault'], row['sockets'], row['threads'],
                     'yes' if row['survived'] and not row['unsafe_commands'] else '**NO**')
            lines.append('| ' + ' | '.join(_cell(cell) for cell in cells) + ' |')
    if failed:
        lines += ['', '## Failed tests (a failure before a row was recorded leaves no row)',
                  ''] + [f'- `{test}`' for test in failed]
    return '\n'.join(lines) + '\n'


def main() -> int:
    """Run the fault tests, write the matrix, and return 0 only if every case survived."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--out', default=str(REPO / 'docs' / 'RELIABILITY.md'))
    args, pytest_args = parser.parse_known_args()
    rows, status, wall, failed = run_fault_tests(pytest_args)
    out = Path(args.out)
    old = out.read_text(encoding='utf-8') if out.exists() else ''
    # The soak's section is scripts/soak.py's to write: carried over as it is.
    out.write_text(keep_section(render(rows, status, wall, failed), old), encoding='utf-8')
    bad = [row for row in rows if not row['survived'] or row['unsafe_commands']]
    print(f'{len(rows)} cases, {len(rows) - len(bad)} survived, '
          f'{sum(int(r["unsafe_commands"]) for r in rows)} unsafe commands -> {args.out}')
    return 0 if rows and not bad and status == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
