"""What every benchmark writes next to its table: the machine, the code, and a quiet gateway."""

from datetime import datetime, timezone
import os
from pathlib import Path
import platform
import subprocess

REPO = Path(__file__).resolve().parents[1]
# The gateway stands in for a remote server: on this machine it shares the cores with the
# control loop, so it runs at a lower priority to steal fewer of the loop's ticks.
GATEWAY_NICE = 10


def lower_priority(pid: int | None, nice: int = GATEWAY_NICE) -> bool:
    """Renice every thread of a process we started (Linux); False where that is not possible."""
    if pid is None:
        return False
    try:
        threads = [int(t) for t in os.listdir(f'/proc/{pid}/task')]
    except OSError:
        threads = [pid]
    try:
        for tid in threads:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
    except (OSError, AttributeError):
        return False
    return True


def machine() -> str:
    """Describe the CPU model, cores, Python and date, for the record."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    date = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    return (f'{cpu}, {os.cpu_count()} cores, Python {platform.python_version()} '
            f'({platform.system()} {platform.release()}), {date}')


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
