"""
The optional parts, the local gateway and the demo: run them, or say what to install.

A robot that runs only the node has none of their modules (setup.py's extras).
"""

from collections.abc import Sequence
import importlib
import importlib.util
import sys

from sequence_ai_ros import stop_signals
from sequence_ai_ros.cli.names import DEMO_MODULE, GATEWAY_EXECUTABLE, PROG

GATEWAY_MODULES = ('starlette', 'uvicorn', 'numpy', 'PIL')
DEMO_MODULES = ('matplotlib',)
OPTIONAL_HINT = {
    'gateway': 'pip install "sequence_ai_ros[gateway]" (starlette has no rosdep key)',
    'demo': 'pip install "sequence_ai_ros[gateway,demo]"',
}


def missing_modules(names: Sequence[str]) -> list[str]:
    """Return those of the top-level modules `names` that cannot be imported here."""
    return [name for name in names if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules (set to None)
        return False


def _missing_extra(prog: str, extra: str, modules: Sequence[str]) -> bool:
    """Print, and return True, if an optional part cannot run for want of `modules`."""
    missing = missing_modules(modules)
    if missing:
        them = 'it' if len(missing) == 1 else 'them'
        print(f'{prog}: needs {", ".join(missing)}, not installed here (optional: the policy '
              f'node does not need {them}): {OPTIONAL_HINT[extra]}', file=sys.stderr)
    return bool(missing)


def run_gateway(argv: list[str], prog: str = f'{PROG} gateway') -> int:
    """Run the local gateway with `argv`, or say what it lacks; return the exit status."""
    if _missing_extra(prog, 'gateway', GATEWAY_MODULES):
        return 2
    try:
        from sequence_ai_ros.gateway import server
    except ImportError as exc:
        print(f'{prog}: needs the gateway extras ({OPTIONAL_HINT["gateway"]}): {exc}',
              file=sys.stderr)
        return 2
    return server.main(argv, prog=prog)


def gateway_main() -> int:
    """Run the `sequence_ai_gateway` executable (ros2 run, launch files), or say what it lacks."""
    # Before the gateway's imports: a signal while they load is a request to stop, not a crash.
    with stop_signals.stop_on_signals():
        return run_gateway(sys.argv[1:], prog=GATEWAY_EXECUTABLE)


def run_demo(argv: list[str]) -> int:
    """Run the demo with `argv`, or say what it lacks; return the exit status."""
    if _missing_extra(f'{PROG} demo', 'demo', (*GATEWAY_MODULES, *DEMO_MODULES)):
        return 2
    try:
        runner = importlib.import_module(DEMO_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name not in ('sequence_ai_ros.demo', DEMO_MODULE):
            print(f'{PROG} demo: cannot import {exc.name}: {exc}', file=sys.stderr)
            return 2
        print('demo not built yet', file=sys.stderr)
        return 2
    result = runner.main(argv)
    return result if isinstance(result, int) else 0
