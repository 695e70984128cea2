"""
A venv built once from pinned requirements and reused while its inputs are unchanged.

The venv's directory holds a `.stamp-<hash>` of every file that decides its contents; a run
whose hash differs builds it again from scratch. Used by scripts/sourced_ros.py,
scripts/jammy_pins.py and scripts/published_client.py.
"""

import argparse
from collections.abc import Callable, Iterable
import hashlib
import os
from pathlib import Path
import shutil
import subprocess
import sys

from pin_set import distribution, requirement_lines

REPO = Path(__file__).resolve().parents[1]
PIP = ('-m', 'pip', 'install', '--quiet', '--disable-pip-version-check')


def pins(path: Path, keep: Callable[[str], bool]) -> list[str]:
    """Return the requirement lines of `path` (includes followed) whose distribution `keep`s."""
    return [line for line in requirement_lines(path) if keep(distribution(line))]


def with_default_tests(pytest_args: list[str], defaults: Iterable[str]) -> list[str]:
    """Return `pytest_args`, with `defaults` added when they name no test file or folder."""
    named = any(arg.split('::')[0].endswith('.py') or (REPO / arg).is_dir()
                for arg in pytest_args if not arg.startswith('-'))
    return pytest_args if named else [*pytest_args, *defaults]


def stamp(inputs: Iterable[Path], extra: str = '') -> str:
    """Return a short hash of the files' contents (and `extra`)."""
    digest = hashlib.sha1(extra.encode())
    for path in inputs:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def run(*command: str | Path, **kwargs: object) -> None:
    """Run a build step, echoed; exit with its status if it fails."""
    print('+', ' '.join(str(c) for c in command), flush=True)
    result = subprocess.run([str(c) for c in command], **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure(venv: Path, python: str, inputs: Iterable[Path], requirements: list[str],
           after: Callable[[Path], None] | None = None) -> Path:
    """
    Return `venv`'s interpreter, building the venv first unless its stamp matches.

    `requirements` are installed into a fresh venv made by `python`; `after(venv)` then
    finishes it (more installs, checks). The stamp is written last, so a failed build is
    retried on the next run.
    """
    interpreter = shutil.which(python)
    if interpreter is None:
        sys.exit(f'{python} not found: this check needs it on PATH')
    marker = venv / f'.stamp-{stamp(inputs, python + chr(0).join(requirements))}'
    if marker.exists():
        return venv / 'bin' / 'python'
    shutil.rmtree(venv, ignore_errors=True)
    run(interpreter, '-m', 'venv', venv)
    listing = venv / 'requirements.txt'
    listing.write_text('\n'.join(requirements) + '\n')
    run(venv / 'bin' / 'python', *PIP, '-r', listing)
    if after is not None:
        after(venv)
    marker.touch()
    return venv / 'bin' / 'python'


def client_arguments(argv: list[str], doc: str, venv: str,
                     python: str) -> tuple[argparse.Namespace, list[str]]:
    """
    Parse a client venv's flags (--venv, --python, --gateway-python); the rest go to pytest.

    `venv` names its folder under .venv, `python` its default interpreter.
    """
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument('--venv', type=Path, default=REPO / '.venv' / venv)
    parser.add_argument('--python', default=python)
    parser.add_argument('--gateway-python', required=True,
                        help='an interpreter with requirements.txt installed, for the gateway')
    return parser.parse_known_args(argv)


def client_environment(python: str,
                       variable: str = 'SEQUENCE_AI_ROS_GATEWAY_PYTHON') -> dict[str, str]:
    """
    Return the environment a venv's own pytest runs in: not the caller's venv or PYTHONPATH.

    `variable` names `python`, the project's interpreter its tests start servers with.
    """
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    env[variable] = str(Path(python).absolute())
    return env
