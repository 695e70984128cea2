#!/usr/bin/env python3
"""
Run the client's and the node's pure-Python tests on Ubuntu 22.04's Python 3.10 and packages.

Usage: `python3 scripts/jammy_pins.py --gateway-python .venv/bin/python [--venv DIR]
[--python python3.10] [PYTEST ARGS]`.

A Humble robot runs Python 3.10 with numpy, Pillow and httpx from apt
(requirements-jammy.txt pins those versions). This builds a venv of them (cached in DIR,
`.venv/jammy` by default) with pytest and this package, no ROS, and runs the test files that
import no rclpy. The gateway those tests talk to needs Python 3.11 (its own pins), so it runs
on `--gateway-python` as a server process, as it would off the robot.

If the interpreter is not there, it says so and exits 0 (skipped), naming what is missing.
"""

from pathlib import Path
import shutil
import subprocess
import sys

import cached_venv

REPO = cached_venv.REPO
# The test files that import no rclpy and no gateway module in the test process.
# (Not the hypothesis-driven ones: the pinned hypothesis wants Python 3.11.)
DEFAULT_TESTS = ('test/realtime/test_client.py', 'test/realtime/test_client_faults.py',
                 'test/realtime/test_client_direct.py', 'test/unit/test_client_direct_parts.py',
                 'test/unit/test_client_direct_tls.py', 'test/unit/test_client_playback.py',
                 'test/unit/test_engine.py', 'test/unit/test_images.py',
                 'test/unit/test_stamped_actions.py')
FROM_DEV = ('pytest', 'pytest-rerunfailures')
# The package's imports, checked after the build: the client and the node's pure parts load.
PROBE = ('import numpy, PIL, httpx, sys; '
         'import sequence_ai_ros.client, sequence_ai_ros.node.images; '
         'print(sys.version.split()[0], numpy.__version__, PIL.__version__, httpx.__version__)')


def main(argv: list[str]) -> int:
    """Build (or reuse) the venv, then run pytest in it against a gateway on another Python."""
    args, pytest_args = cached_venv.client_arguments(argv, __doc__, 'jammy', 'python3.10')
    if not _runs(args.python):
        print(f'SKIPPED: {args.python} is not an interpreter that runs here; Ubuntu 22.04 has '
              'it as python3.10')
        return 0
    requirements = [*cached_venv.pins(REPO / 'requirements-jammy.txt', lambda name: True),
                    *cached_venv.pins(REPO / 'requirements-dev.txt', FROM_DEV.__contains__)]
    inputs = [REPO / 'requirements-jammy.txt', REPO / 'requirements-dev.txt',
              REPO / 'setup.py', Path(__file__), Path(cached_venv.__file__)]

    def finish(venv: Path) -> None:
        cached_venv.run(venv / 'bin' / 'python', *cached_venv.PIP, '--no-deps', '-e', REPO)

    venv = args.venv.resolve()
    python = cached_venv.ensure(venv, args.python, inputs, requirements, after=finish)
    env = cached_venv.client_environment(args.gateway_python)
    cached_venv.run(python, '-c', PROBE, env=env, cwd='/')
    tests = cached_venv.with_default_tests(pytest_args, DEFAULT_TESTS)
    print('== Python 3.10, Ubuntu 22.04 pins; the gateway on', args.gateway_python, flush=True)
    return subprocess.run([python, '-m', 'pytest', *tests], env=env, cwd=REPO).returncode


def _runs(python: str) -> bool:
    # A version manager's shim is on PATH even where that version is not installed.
    if shutil.which(python) is None:
        return False
    return subprocess.run([python, '-c', 'import sys'], capture_output=True).returncode == 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
