"""
Run every bench/bench_*.py module in turn (what `make bench` does).

Run: .venv/bin/python -m bench.run_all [--only SUBSTRING ...]

Each runs as `python -m bench.<name>` in its own process with this interpreter, one after
another so that no two benchmarks share the machine. The exit status is non-zero if any
bench failed.
"""

import argparse
from pathlib import Path
import subprocess
import sys
import time

HERE = Path(__file__).resolve().parent


def scripts(only: list[str]) -> list[Path]:
    """List the bench scripts, sorted, optionally those whose name contains a substring."""
    found = sorted(HERE.glob('bench_*.py'))
    return [p for p in found if not only or any(s in p.name for s in only)]


def main(argv: list[str] | None = None) -> int:
    """Run the scripts and summarise; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--only', nargs='+', default=[], metavar='SUBSTRING',
                        help='run only the scripts whose file name contains one of these')
    args = parser.parse_args(argv)
    selected = scripts(args.only)
    if not selected:
        print('no bench scripts matched', file=sys.stderr)
        return 1
    results = []
    for script in selected:
        print(f'==> {script.name}', flush=True)
        began = time.monotonic()
        code = subprocess.call([sys.executable, '-m', f'bench.{script.stem}'],
                               cwd=HERE.parent)
        results.append((script.name, code, time.monotonic() - began))
        print(f'<== {script.name}: exit {code} in {time.monotonic() - began:.0f} s\n', flush=True)
    print('summary:')
    for name, code, seconds in results:
        print(f'  {"ok  " if code == 0 else "FAIL"} {name} ({seconds:.0f} s, exit {code})')
    return 0 if all(code == 0 for _, code, _ in results) else 1


if __name__ == '__main__':
    sys.exit(main())
