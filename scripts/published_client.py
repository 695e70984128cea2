#!/usr/bin/env python3
"""
Run the published sequence-ai 0.51.5 client, unmodified, against the local gateway.

Usage: `python3 scripts/published_client.py --gateway-python .venv/bin/python [--venv DIR]
[--python python3.11] [PYTEST ARGS]`.

Builds a venv of test/published/requirements.txt (cached in DIR, `.venv/published` by default):
the published client and its wire models, nothing of this package installed. The tests in
test/published run there, this repository only on their path for GatewayProcess, and start the
gateway on `--gateway-python` (the Kilted venv's, with the gateway's own pins) as a separate
process, as a robot reaches a server.

If the interpreter is not there, it says so and exits 0 (skipped), naming what is missing.
"""

from pathlib import Path
import shutil
import subprocess
import sys

import cached_venv

REPO = cached_venv.REPO
REQUIREMENTS = REPO / 'test' / 'published' / 'requirements.txt'
PROBE = ('import sys, sequence_ai, sequence_base; from importlib.metadata import version; '
         'print(sys.version.split()[0], "sequence-ai", version("sequence-ai"), '
         '"sequence-base", version("sequence-base"))')


def main(argv: list[str]) -> int:
    """Build (or reuse) the venv, then run test/published in it."""
    args, pytest_args = cached_venv.client_arguments(argv, __doc__, 'published', 'python3.11')
    if shutil.which(args.python) is None:
        print(f'SKIPPED: {args.python} is not on PATH; the published client needs Python 3.11')
        return 0
    requirements = cached_venv.pins(REQUIREMENTS, lambda name: True)
    venv = args.venv.resolve()
    python = cached_venv.ensure(venv, args.python, [REQUIREMENTS, Path(__file__)], requirements)
    env = cached_venv.client_environment(args.gateway_python)
    cached_venv.run(python, '-c', PROBE, env=env, cwd='/')
    tests = cached_venv.with_default_tests(pytest_args, ['test/published'])
    print('== the published sequence-ai client; the gateway on', args.gateway_python, flush=True)
    # Its own conftest only: the repository's (test/conftest.py) is the Kilted venv's.
    return subprocess.run([python, '-m', 'pytest', '--confcutdir', 'test/published', *tests],
                          env=env, cwd=REPO).returncode


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
