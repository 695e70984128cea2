#!/usr/bin/env python3
"""
Load `sequence-ai-ros export --format lerobot` datasets with LeRobot itself (make test-dataset).

Usage: `python3 scripts/dataset_venv.py --kilted-python .venv/bin/python [--venv DIR]
[--python PYTHON3.12] [PYTEST ARGS]`.

lerobot 0.5 and later need Python >= 3.12, and the ROS 2 wheels this package tests with are
built for 3.11, so LeRobot gets a venv of its own (cached in DIR, `.venv/dataset` by default):
test/dataset/requirements.txt with pytest, no ROS and not this package. The tests there record
episodes and export them on `--kilted-python` (the project's venv) as processes, then load the
dataset in this one. The venv is large: PyPI's torch for Linux is a CUDA build.

If no Python 3.12 is found (PATH, then pyenv's versions), it says so and exits 0 (skipped).
"""

import argparse
import os
from pathlib import Path
import shutil
import subprocess
import sys

import cached_venv

REPO = cached_venv.REPO
REQUIREMENTS = REPO / 'test' / 'dataset' / 'requirements.txt'
FROM_DEV = ('pytest',)
PROBE = ('import lerobot, torch, sys; print(sys.version.split()[0], "lerobot", '
         'lerobot.__version__, "torch", torch.__version__)')


def python312() -> str | None:
    """Return a Python 3.12 interpreter: python3.12 on PATH, else pyenv's newest 3.12."""
    found = shutil.which('python3.12')
    if found and _runs(found):
        return found
    root = os.environ.get('PYENV_ROOT') or str(Path.home() / '.pyenv')
    if shutil.which('pyenv'):
        answer = subprocess.run(['pyenv', 'root'], capture_output=True, text=True)
        root = answer.stdout.strip() or root
    candidates = sorted(Path(root).glob('versions/3.12*/bin/python3.12'))
    return str(candidates[-1]) if candidates and _runs(str(candidates[-1])) else None


def main(argv: list[str]) -> int:
    """Build (or reuse) the venv, then run test/dataset in it."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--venv', type=Path, default=REPO / '.venv' / 'dataset')
    parser.add_argument('--python', default=None, help='a Python 3.12 (default: found)')
    parser.add_argument('--kilted-python', required=True,
                        help="the project's venv's interpreter: records and exports episodes")
    args, pytest_args = parser.parse_known_args(argv)
    python = args.python or python312()
    if python is None:
        print('SKIPPED: no Python 3.12 here (python3.12 on PATH or pyenv versions/3.12*); '
              'lerobot 0.5 and later need it')
        return 0
    requirements = [*cached_venv.pins(REQUIREMENTS, lambda name: True),
                    *cached_venv.pins(REPO / 'requirements-dev.txt', FROM_DEV.__contains__)]
    # Stamped by the pins alone (and the interpreter): a rebuild downloads gigabytes.
    interpreter = cached_venv.ensure(args.venv.resolve(), python, (), requirements)
    env = cached_venv.client_environment(args.kilted_python, 'SEQUENCE_AI_ROS_KILTED_PYTHON')
    cached_venv.run(interpreter, '-c', PROBE, env=env, cwd='/')
    tests = cached_venv.with_default_tests(pytest_args, ('test/dataset',))
    print('== LeRobot loads the export; episodes recorded and exported on', args.kilted_python,
          flush=True)
    # Its own configuration: test/conftest.py sets up ROS, which this venv does not have.
    command = [interpreter, '-m', 'pytest', '-c', 'test/dataset/pytest.ini',
               '--rootdir', 'test/dataset', *tests]
    return subprocess.run(command, env=env, cwd=REPO).returncode


def _runs(python: str) -> bool:
    return subprocess.run([python, '-c', 'import sys'], capture_output=True).returncode == 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
