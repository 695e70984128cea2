"""What every benchmark writes next to its table: the command, the machine, the code."""

from collections.abc import Sequence
from datetime import datetime, timezone
import os
from pathlib import Path
import platform
import subprocess
import sys
from typing import Any

from sequence_ai_ros.harness import proc_stats

REPO = Path(__file__).resolve().parents[1]
# The gateway stands in for a remote server: on this machine it shares the cores with the
# control loop, so it runs at a lower priority to steal fewer of the loop's ticks.
GATEWAY_NICE = 10


def lower_priority(pid: int | None, nice: int = GATEWAY_NICE) -> bool:
    """Renice a process the bench started (the gateway, by default to GATEWAY_NICE)."""
    return proc_stats.lower_priority(pid, nice)


def machine() -> str:
    """Describe the CPU model, cores, Python and date, for the record."""
    date = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    return (f'{proc_stats.cpu_model()}, {os.cpu_count()} cores, Python '
            f'{platform.python_version()} ({platform.system()} {platform.release()}), {date}')


def provenance(ignore: tuple[str, ...] = ('bench/RESULTS.md',)) -> str:
    """Return the commit measured and the tracked files that differed from it."""
    try:
        head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', 'diff', '--name-only', 'HEAD'], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return 'not a git checkout'
    dirty = [name for name in dirty if name not in ignore]  # the benches write RESULTS.md
    return f'commit {head}' + (f' plus uncommitted changes to {", ".join(dirty)}'
                               if dirty else '')


def command_line(module: str, argv: Sequence[str] | None) -> str:
    """Return how the bench was run, as one would type it from the repository root."""
    return ' '.join(['.venv/bin/python', '-m', module, *(sys.argv[1:] if argv is None else argv)])


def header(command: str, runtime_s: float) -> str:
    """Return the lines that open a bench's section: command, machine, code, runtime."""
    return (f'Command: `{command}`  \nMachine: {machine()}  \nCode: {provenance()}  \n'
            f'Runtime: {runtime_s / 60:.1f} min.')


def write_results_section(path: Path, heading: str, body: str) -> None:
    """Replace (or append) one bench's `heading` section of RESULTS.md, leaving the rest."""
    text = path.read_text(encoding='utf-8') if path.exists() else '# Benchmark results\n'
    section = f'{heading}\n\n{body.strip()}\n'
    start = text.find(heading)
    if start < 0:
        text = text.rstrip('\n') + '\n\n' + section
    else:
        end = text.find('\n## ', start + len(heading))
        text = text[:start] + section + (text[end:] if end >= 0 else '')
    path.write_text(text, encoding='utf-8')


def print_and_write(sections: Sequence[str], results: Path, heading: str, write: bool) -> None:
    """Print a bench's sections; with `write`, make them its section of RESULTS.md."""
    body = '\n\n'.join(sections)
    print('\n' + body)
    if write:
        write_results_section(results, heading, body)
        print(f'\nwrote {results}')
    else:
        print(f'\n(--quick or short run: {results} left alone; --write to update it)')


def add_results_options(parser: Any, default: Path, section: str) -> None:
    """Add --results, --write and --no-write: where a bench's section goes, and whether."""
    parser.add_argument('--results', type=Path, default=default,
                        help=f'markdown file whose {section} section to write '
                        '(default bench/RESULTS.md)')
    write = parser.add_mutually_exclusive_group()
    write.add_argument('--write', action='store_true', default=None,
                       help='update RESULTS.md even for a --quick or shorter run')
    write.add_argument('--no-write', dest='write', action='store_false', help='only print')
