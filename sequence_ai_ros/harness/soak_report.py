"""
The soak's report: a table for the terminal, and its section of docs/RELIABILITY.md.

The section sits between BEGIN and END; `scripts/soak.py --doc` replaces it (or appends it),
and scripts/reliability_matrix.py, which writes the rest of that file, carries it over.
"""

from datetime import datetime, timezone
from importlib import metadata
import os
import platform
import subprocess

BEGIN = '<!-- soak: written by scripts/soak.py; scripts/reliability_matrix.py keeps it -->'
END = '<!-- /soak -->'


def table(report: dict) -> str:
    """Return the report as a plain-text table."""
    kinds = report['faults_by_kind']
    width = max(map(len, kinds), default=10)
    lines = [f'{"fault (step kind)":<{width}}  {"area":<15} runs',
             *(f'{name:<{width}}  {report["areas"][name]:<15} {n:4d}'
               for name, n in kinds.items()), '']
    slopes = report['slopes_per_hour']
    first, last = report['samples'][0], report['samples'][-1]
    lines += [
        f'minutes            {report["minutes"]:g} (wall {report["wall_s"]:.0f} s), seed '
        f'{report["seed"]}',
        f'steps              {report["steps"]}',
        f'episodes           {report["episodes"]} {report["outcomes"]}',
        f'unsafe commands    {report["unsafe_commands"]}',
        f'holds due / late   {report["holds_due"]} / {report["holds_late"]} (closest to '
        f'its bound: {_tightest(report)})',
        f'failed steps       {len(report["failures"])}',
        f'stalls of the test side (steps rerun) {len(report["stalls"])}',
        f'node process       {"alive" if report["process_alive"] else "GONE"}, '
        f'{report["tracebacks"]} tracebacks in its log',
        f'RSS (KiB)          {first[1]} -> {last[1]}, slope {slopes["rss_kib"]} per hour',
        f'file descriptors   {first[2]} -> {last[2]}, slope {slopes["fds"]} per hour',
        f'threads            {first[3]} -> {last[3]}, slope {slopes["threads"]} per hour',
    ]
    lines += [f'FAILED {f["step"]} at {f["at_s"]} s: {f["error"][:300]}'
              for f in report['failures']]
    return '\n'.join(lines)


def section(report: dict, command: str) -> str:
    """Return the markdown section of docs/RELIABILITY.md for `report`, made by `command`."""
    slopes = report['slopes_per_hour']
    first, last = report['samples'][0], report['samples'][-1]
    outcomes = ', '.join(f'{k} {v}' for k, v in sorted(report['outcomes'].items()))
    process = 'alive' if report['process_alive'] else '**gone**'
    lines = [
        BEGIN, '', '## Soak: one node through a randomized schedule of faults', '',
        f'`{command}` ({report.get("machine") or machine()}; {report["wall_s"] / 60:.1f} min '
        'of wall time).', '',
        'One policy node process behind a FaultProxy, its robot played by the test side, for '
        'the minutes below: steps drawn with the seed from every kind of the operator session '
        "(test/operator_plan.py) and the soak's own (test/soak_steps.py), each checking its "
        "episode's outcome, hold, /diagnostics and the baseline of threads and sockets. "
        '**Unsafe**: a command received while no episode runs, non-finite, carrying a value '
        'of a bad answer, outside the limits or more than max_step_change from the previous '
        "one, motion after a hold that was due, anything after an episode's final hold. "
        "**Late hold**: later than the fault's detection time + one control period + 0.5 s.",
        '',
        '| minutes | steps | episodes | unsafe commands | holds due / late | failed steps '
        '| node process |',
        '|---:|---:|---:|---:|---:|---:|---|',
        f'| {report["minutes"]:g} | {report["steps"]} | {report["episodes"]} | '
        f'**{report["unsafe_commands"]}** | {report["holds_due"]} / {report["holds_late"]} | '
        f'{len(report["failures"])} | {process}, {report["tracebacks"]} tracebacks |',
        '', f'Episode outcomes: {outcomes}. The hold closest to its bound: '
        f'{_tightest(report)}. Steps rerun after a stall of the test side itself: '
        f'{len(report["stalls"])}.', '',
        f'Leak: the node process sampled every 5 s, least-squares slope per hour'
        f'{" after the first minute" if report["minutes"] >= 3 else ""}. Resident memory is '
        'what /proc reports: heap that the allocator keeps after a free counts too, so its '
        'slope bounds a leak from above.', '',
        '| | first | last | slope per hour |', '|---|---:|---:|---:|',
        f'| resident memory (KiB) | {first[1]} | {last[1]} | {slopes["rss_kib"]} |',
        f'| file descriptors | {first[2]} | {last[2]} | {slopes["fds"]} |',
        f'| threads | {first[3]} | {last[3]} | {slopes["threads"]} |',
        '', 'Faults injected, by kind:', '', '| kind | area | times |', '|---|---|---:|',
        *(f'| {name} | {report["areas"][name]} | {n} |'
          for name, n in report['faults_by_kind'].items()),
    ]
    if report['failures']:
        lines += ['', 'Failed steps:', '',
                  *(f'- {f["step"]} at {f["at_s"]} s: `{f["error"][:300]}`'
                    for f in report['failures'])]
    return '\n'.join(lines + ['', END]) + '\n'


def replace_section(doc: str, block: str) -> str:
    """Return `doc` with its soak section replaced by `block` (appended if it has none)."""
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        return doc.rstrip('\n') + '\n\n' + block if doc.strip() else block
    return doc[:start] + block.rstrip('\n') + doc[end + len(END):]


def keep_section(new_doc: str, old_doc: str) -> str:
    """Return `new_doc` carrying the soak section of `old_doc` over, if it had one."""
    start, end = old_doc.find(BEGIN), old_doc.find(END)
    if start < 0 or end < start:
        return new_doc
    return replace_section(new_doc, old_doc[start:end + len(END)] + '\n')


def _tightest(report: dict) -> str:
    hold = report['tightest_hold']
    return 'none' if hold is None else f'{hold[0]}, {hold[1]} s of {hold[2]} s'


def machine() -> str:
    """Return the machine, Python, rclpy, time and commit, for the record of a run."""
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], text=True,
                            capture_output=True).stdout.strip() or 'unknown'
    try:
        rclpy = f'rclpy {metadata.version("ros-rclpy")}'
    except metadata.PackageNotFoundError:
        rclpy = 'rclpy'
    now = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    return (f'{platform.machine()}, {os.cpu_count()} cores, Python '
            f'{platform.python_version()}, {rclpy}, {now}, commit {commit}')
