"""The `sequence-ai-ros` command: models, doctor, gateway, proxy and demo."""

import argparse
from collections.abc import Sequence
import importlib
import importlib.util
import math
import signal
import sys
import threading
from typing import Any

import httpx

from . import __version__
from .client.config import DEFAULT_BASE_URL, resolve_base_url
from .client.transport import certificate_refusal, error_for, tls_context
from .doctor import (
    ca_file_hint,
    DEFAULT_SAMPLES,
    DEFAULT_WAIT_S,
    DoctorOptions,
    EXIT_CODES,
    run_doctor,
)

PROG = 'sequence-ai-ros'
# The executables ros2 run and the launch files name (setup.py's console_scripts).
GATEWAY_EXECUTABLE = 'sequence_ai_gateway'
DEMO_MODULE = 'sequence_ai_ros.demo.runner'
# These own their flags: everything after the word goes to them untouched.
DELEGATED = ('gateway', 'demo')
BASE_URL_HELP = f'gateway URL (default: $SEQUENCES_BASE_URL, else {DEFAULT_BASE_URL})'
CA_FILE_HELP = ("trust only the CA certificates in this PEM file, instead of the system's, "
                "e.g. a gateway's self-signed certificate")
# What the local gateway and the demo import beyond the node's needs (setup.py's extras); a
# robot that runs only the node has none of them.
GATEWAY_MODULES = ('starlette', 'uvicorn', 'numpy', 'PIL')
DEMO_MODULES = ('matplotlib',)
OPTIONAL_HINT = {
    'gateway': 'pip install "sequence_ai_ros[gateway]" (starlette has no rosdep key)',
    'demo': 'pip install "sequence_ai_ros[gateway,demo]"',
}

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


PROXY_DESCRIPTION = """\
Relay a local port to a gateway on this machine through a slower link, to rehearse a robot
against the network it will really have: point its base_url at the printed URL (https:// if
the gateway serves TLS, which passes through untouched). Only loopback addresses are accepted.
Runs until Ctrl-C or SIGTERM.

For scripts: once it listens, the first line on stdout starts `proxy URL -> ` and is flushed;
the last, as it stops, counts what it relayed."""


def _exit_codes_epilog() -> str:
    lines = ['exit codes (for launch scripts):']
    lines += [f'  {code:>2}  {meaning}' for code, meaning in EXIT_CODES]
    lines.append('example: sequence-ai-ros doctor --wait && ros2 launch sequence_ai_ros ...')
    return '\n'.join(lines)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected a whole number >= 1, got {text!r}')
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float('inf'):
        raise argparse.ArgumentTypeError(f'expected a number of seconds > 0, got {text!r}')
    return value


def _milliseconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f'expected milliseconds >= 0, got {text!r}')
    return value


def _kbps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f'expected kilobits per second > 0, got {text!r}')
    return value


def _ca_file(text: str) -> str:
    # Load it now, so a wrong path is a usage error rather than a failed check later.
    try:
        tls_context(text)
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f'cannot use {text!r} as a CA file: {exc}') from exc
    return text


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(':')
    try:
        number = int(port)
    except ValueError:
        number = 0
    if not host or not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f'expected HOST:PORT, e.g. 127.0.0.1:8765, got {text!r}')
    return host.strip('[]'), number


def build_parser() -> argparse.ArgumentParser:
    """Build the command-line parser (gateway and demo are listed; their flags are theirs)."""
    parser = argparse.ArgumentParser(
        prog=PROG, description='Drive a ROS 2 arm from a cloud-served robot policy: inspect '
        'the catalogue, diagnose a set-up, run the local gateway or the demo.')
    parser.add_argument('--version', action='version', version=f'%(prog)s {__version__}')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)

    models = commands.add_parser(
        'models', help='list the public model catalogue (no key needed)',
        description='Print the public model catalogue (GET /v1/models) as a table. '
        'No key is needed.')
    models.add_argument('--base-url', metavar='URL', help=BASE_URL_HELP)
    models.add_argument('--ca-file', type=_ca_file, metavar='PATH', help=CA_FILE_HELP)
    models.add_argument('--endpoint', metavar='NAME',
                        help='only models of this endpoint, e.g. act')
    models.add_argument('--timeout', type=_positive_float, default=30.0, metavar='SECONDS',
                        help='per-request timeout (default %(default)s)')
    models.set_defaults(handler=_models)

    doctor = commands.add_parser(
        'doctor', help='check key, gateway, model, credit, latency and warmth (1 credit)',
        description=DOCTOR_DESCRIPTION, epilog=_exit_codes_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    doctor.add_argument('--model', default='pi05-droid',
                        help='model to check, bare or full id (default %(default)s)')
    doctor.add_argument('--base-url', metavar='URL', help=BASE_URL_HELP)
    doctor.add_argument('--ca-file', type=_ca_file, metavar='PATH',
                        help=CA_FILE_HELP + ', for every connection doctor makes')
    doctor.add_argument('--api-key-file', metavar='PATH',
                        help='read the key from this file (first non-comment line) instead of '
                        '$SEQUENCES_API_KEY or the credentials file; there is deliberately no '
                        '--api-key, which would leave the key in ps and shell history')
    doctor.add_argument('--samples', type=_positive_int, default=DEFAULT_SAMPLES, metavar='N',
                        help='latency samples per connection style (default %(default)s)')
    doctor.add_argument('--no-act', dest='act', action='store_false',
                        help='skip the /v1/act call (and its credit): checks 4, 5, 7 become WARN')
    doctor.add_argument('--wait', type=_positive_float, nargs='?', const=DEFAULT_WAIT_S,
                        default=None, metavar='SECONDS',
                        help='if the model is cold, wait for it to warm (up to SECONDS, default '
                        f'{DEFAULT_WAIT_S:g}) and retry the test call')
    doctor.add_argument('--timeout', type=_positive_float, default=30.0, metavar='SECONDS',
                        help='per-request timeout (default %(default)s)')
    doctor.set_defaults(handler=_doctor)

    proxy = commands.add_parser(
        'proxy', help='relay to a local gateway over a slow link (latency, jitter, bandwidth)',
        description=PROXY_DESCRIPTION)
    proxy.add_argument('--upstream', required=True, type=_host_port, metavar='HOST:PORT',
                       help='the gateway to relay to, e.g. 127.0.0.1:8765 (loopback only)')
    proxy.add_argument('--host', default='127.0.0.1',
                       help='address to listen on (loopback only; default %(default)s)')
    proxy.add_argument('--port', type=int, default=0,
                       help='port to listen on (default: a free one, printed at start)')
    proxy.add_argument('--latency-ms', type=_milliseconds, default=0.0, metavar='MS',
                       help='one-way delay added each way: a round trip gains twice this')
    proxy.add_argument('--jitter-ms', type=_milliseconds, default=0.0, metavar='MS',
                       help='random extra delay up to this per chunk, order kept')
    proxy.add_argument('--bandwidth-kbps', type=_kbps, default=None, metavar='KBIT/S',
                       help='cap per direction and connection, in kilobits per second '
                       '(default: unlimited)')
    proxy.set_defaults(handler=_proxy)

    commands.add_parser('gateway', add_help=False,
                        help='run the local gateway (see `sequence-ai-ros gateway --help`)')
    commands.add_parser('demo', add_help=False,
                        help='run the simulated-arm demo (see `sequence-ai-ros demo --help`)')
    return parser


def _cell(value: Any, fmt: str = '') -> str:
    if value is None or value == '':
        return '-'
    if isinstance(value, (list, tuple)):
        return ','.join(str(v) for v in value) or '-'
    return format(value, fmt) if fmt and isinstance(value, (int, float)) else str(value)


def models_table(rows: Sequence[dict[str, Any]]) -> str:
    """Format catalogue rows as an aligned text table."""
    header = ('MODEL', 'ROBOT', 'ACTION SPACE', 'DIM', 'STEPS', 'HZ', 'CHUNK S', 'VIEWS')
    numeric = {'DIM', 'STEPS', 'HZ', 'CHUNK S'}
    table = [header]
    for row in rows:
        steps, hz = row.get('action_horizon'), row.get('control_hz')
        covers = row.get('covers_seconds')
        if covers is None and isinstance(steps, int) and isinstance(hz, (int, float)) and hz:
            covers = steps / hz
        table.append((
            str(row['id']).rsplit('/', 1)[-1], _cell(row.get('robot')),
            _cell(row.get('action_space')), _cell(row.get('action_dim')), _cell(steps),
            _cell(hz, 'g'), _cell(covers, '.2f'), _cell(row.get('camera_views'))))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    out = []
    for line in table:
        cells = [cell.rjust(width) if name in numeric else cell.ljust(width)
                 for cell, width, name in zip(line, widths, header)]
        out.append('  '.join(cells).rstrip())
    return '\n'.join(out)


def _models(args: argparse.Namespace) -> int:
    base_url = resolve_base_url(args.base_url)
    params = {'endpoint': args.endpoint} if args.endpoint else None
    # The catalogue is public: no Authorization header, so the key is not sent where unneeded.
    try:
        response = httpx.get(base_url + '/v1/models', params=params, timeout=args.timeout,
                             headers={'User-Agent': f'sequence_ai_ros/{__version__}'},
                             verify=tls_context(args.ca_file or True))
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        reason = certificate_refusal(exc)
        if reason is not None:
            print(f'{PROG} models: the TLS certificate of {base_url} is not trusted ({reason}); '
                  f'{ca_file_hint(args.ca_file, reason)}', file=sys.stderr)
            return 1
        print(f'{PROG} models: cannot reach {base_url}: {type(exc).__name__}: {exc}',
              file=sys.stderr)
        return 1
    try:
        body = response.json() if response.status_code == 200 else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        message = error_for(response).message if response.status_code != 200 else 'not JSON'
        print(f'{PROG} models: GET {base_url}/v1/models answered {response.status_code}: '
              f'{message}', file=sys.stderr)
        return 1
    rows = [row for row in body.get('data') or () if isinstance(row, dict) and 'id' in row]
    if not rows:
        print(f'{PROG} models: {base_url} lists no models'
              + (f' for endpoint {args.endpoint!r}' if args.endpoint else ''), file=sys.stderr)
        return 1
    print(models_table(rows))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    return run_doctor(DoctorOptions(
        model=args.model, base_url=args.base_url, api_key_file=args.api_key_file,
        samples=args.samples, act=args.act, wait_s=args.wait, timeout_s=args.timeout,
        ca_file=args.ca_file))


def _proxy(args: argparse.Namespace) -> int:
    from .faults import FaultProxy
    from .faults.process import summary_line

    host, port = args.upstream
    try:
        proxy = FaultProxy(host, port, listen_host=args.host, listen_port=args.port)
        proxy.latency_s = args.latency_ms / 1000
        proxy.jitter_s = args.jitter_ms / 1000
        if args.bandwidth_kbps is not None:
            proxy.bandwidth_bytes_per_s = args.bandwidth_kbps * 1000 / 8
        proxy.start()
    except (ValueError, OSError) as exc:
        print(f'{PROG} proxy: {exc}', file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    bandwidth = f'{args.bandwidth_kbps:g} kbit/s' if args.bandwidth_kbps else 'unlimited'
    print(f'proxy {proxy.url()} -> {host}:{port}: latency {args.latency_ms:g} ms each way '
          f'(+{2 * args.latency_ms:g} ms per round trip), jitter up to {args.jitter_ms:g} ms, '
          f'bandwidth {bandwidth}. Ctrl-C to stop.', flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        proxy.close()
        signal.signal(signal.SIGTERM, previous)
    stats = proxy.stats()
    for error in stats.errors:  # the proxy's own bugs, never the peers' doing
        print(f'{PROG} proxy: internal error: {error}', file=sys.stderr)
    print(summary_line(stats), flush=True)
    return 0


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


def _gateway(argv: list[str], prog: str = f'{PROG} gateway') -> int:
    if _missing_extra(prog, 'gateway', GATEWAY_MODULES):
        return 2
    try:
        from .gateway import server
    except ImportError as exc:
        print(f'{prog}: needs the gateway extras ({OPTIONAL_HINT["gateway"]}): {exc}',
              file=sys.stderr)
        return 2
    return server.main(argv, prog=prog)


def gateway_main() -> int:
    """Run the `sequence_ai_gateway` executable (ros2 run, launch files), or say what it lacks."""
    return _gateway(sys.argv[1:], prog=GATEWAY_EXECUTABLE)


def _demo(argv: list[str]) -> int:
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in DELEGATED:
        return (_gateway if args[0] == 'gateway' else _demo)(args[1:])
    parsed = build_parser().parse_args(args)
    code: int = parsed.handler(parsed)
    return code


if __name__ == '__main__':
    sys.exit(main())
