"""`sequence-ai-ros doctor`: its flags and exit codes; the checks are sequence_ai_ros.doctor's."""

import argparse
from typing import Any

from sequence_ai_ros.cli.arguments import (
    BASE_URL_HELP,
    ca_file,
    CA_FILE_HELP,
    positive_int,
    seconds,
)
from sequence_ai_ros.client import DEFAULT_TIMEOUT_S
from sequence_ai_ros.doctor import (
    DEFAULT_SAMPLES,
    DEFAULT_WAIT_S,
    DoctorOptions,
    EXIT_CODES,
    run_doctor,
)

DOCTOR_DESCRIPTION = """\
Answer, in order, the questions behind "it does not work", one line each with OK, WARN or
FAIL and a hint, stopping at the first FAIL:
  1 key        is there an API key, and where did it come from (shown masked, never whole)
  2 gateway    does GET /v1/health answer ok (backend, auth)
  3 model      is the model in the public catalogue
  4 key valid  does a real POST /v1/act get past 401
  5 credit     ... and past 402
  6 latency    GET /v1/models over a new connection per call vs one reused connection
  7 warm       did the test call find the model warm, or answer 503 warming

Checks 4, 5 and 7 make ONE real /v1/act call, which costs one credit when it is served (a
224x224 plain frame per camera view, zero joints). --no-act skips them (key validity is then
unknown: WARN). A cold model is a WARN: doctor does not wait for it unless --wait."""


def _exit_codes_epilog() -> str:
    lines = ['exit codes (for launch scripts):']
    lines += [f'  {code:>2}  {meaning}' for code, meaning in EXIT_CODES]
    lines.append('example: sequence-ai-ros doctor --wait && ros2 launch sequence_ai_ros ...')
    return '\n'.join(lines)


def add_command(commands: Any) -> None:
    """Add `doctor` and its flags to the command line's subcommands."""
    doctor = commands.add_parser(
        'doctor', help='check key, gateway, model, credit, latency and warmth (1 credit)',
        description=DOCTOR_DESCRIPTION, epilog=_exit_codes_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    doctor.add_argument('--model', default='pi05-droid',
                        help='model to check, bare or full id (default %(default)s)')
    doctor.add_argument('--base-url', metavar='URL', help=BASE_URL_HELP)
    doctor.add_argument('--ca-file', type=ca_file, metavar='PATH',
                        help=CA_FILE_HELP + ', for every connection doctor makes')
    doctor.add_argument('--api-key-file', metavar='PATH',
                        help='read the key from this file (first non-comment line) instead of '
                        '$SEQUENCES_API_KEY or the credentials file; there is deliberately no '
                        '--api-key, which would leave the key in ps and shell history')
    doctor.add_argument('--samples', type=positive_int, default=DEFAULT_SAMPLES, metavar='N',
                        help='latency samples per connection style (default %(default)s)')
    doctor.add_argument('--no-act', dest='act', action='store_false',
                        help='skip the /v1/act call (and its credit): checks 4, 5, 7 become WARN')
    doctor.add_argument('--wait', type=seconds, nargs='?', const=DEFAULT_WAIT_S,
                        default=None, metavar='SECONDS',
                        help='if the model is cold, wait for it to warm (up to SECONDS, default '
                        f'{DEFAULT_WAIT_S:g}) and retry the test call')
    doctor.add_argument('--timeout', type=seconds, default=DEFAULT_TIMEOUT_S,
                        metavar='SECONDS', help='per-request timeout (default %(default)s)')
    doctor.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the checks the flags ask for; return doctor's exit code."""
    return run_doctor(DoctorOptions(
        model=args.model, base_url=args.base_url, api_key_file=args.api_key_file,
        samples=args.samples, act=args.act, wait_s=args.wait, timeout_s=args.timeout,
        ca_file=args.ca_file))
