"""The `sequence-ai-ros` command line: its subcommands, and the two that own their flags."""

import argparse
from collections.abc import Sequence
import sys

from sequence_ai_ros import __version__, stop_signals
from sequence_ai_ros.cli.extras import run_demo, run_gateway
from sequence_ai_ros.cli.names import PROG

# These own their flags: everything after the word goes to them untouched.
DELEGATED = ('gateway', 'demo')
# These run until SIGINT or SIGTERM, then stop cleanly and exit 0; the others are interrupted
# as any command is (a check cut short is not a success).
RUN_UNTIL_SIGNAL = ('gateway', 'demo', 'proxy')


def build_parser() -> argparse.ArgumentParser:
    """Build the command-line parser (gateway and demo are listed; their flags are theirs)."""
    parser = argparse.ArgumentParser(
        prog=PROG, description='Drive a ROS 2 arm from a cloud-served robot policy: inspect '
        'the catalogue, diagnose a set-up, run the local gateway or the demo.')
    # Here rather than at the top: `main` installs the handlers before the imports they need.
    from sequence_ai_ros.cli import dataset_commands, doctor_command, models, proxy, report_command

    parser.add_argument('--version', action='version', version=f'%(prog)s {__version__}')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)
    for module in (models, doctor_command, proxy, report_command, dataset_commands):
        module.add_command(commands)
    commands.add_parser('gateway', add_help=False,
                        help='run the local gateway (see `sequence-ai-ros gateway --help`)')
    commands.add_parser('demo', add_help=False,
                        help='run the simulated-arm demo (see `sequence-ai-ros demo --help`)')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in RUN_UNTIL_SIGNAL:
        with stop_signals.stop_on_signals():
            return _run(args)
    return _run(args)


def _run(args: list[str]) -> int:
    if args and args[0] in DELEGATED:
        return (run_gateway if args[0] == 'gateway' else run_demo)(args[1:])
    parsed = build_parser().parse_args(args)
    code: int = parsed.handler(parsed)
    return code
