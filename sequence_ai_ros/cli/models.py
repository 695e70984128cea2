"""`sequence-ai-ros models`: the public catalogue (GET /v1/models) as a table, no key needed."""

import argparse
from collections.abc import Sequence
import sys
from typing import Any

import httpx
from sequence_ai_ros import __version__
from sequence_ai_ros.cli.arguments import BASE_URL_HELP, ca_file, CA_FILE_HELP, seconds
from sequence_ai_ros.cli.names import PROG
from sequence_ai_ros.client import (
    certificate_refusal,
    DEFAULT_TIMEOUT_S,
    error_for,
    resolve_base_url,
    tls_context,
)
from sequence_ai_ros.doctor import ca_file_hint


def add_command(commands: Any) -> None:
    """Add `models` and its flags to the command line's subcommands."""
    models = commands.add_parser(
        'models', help='list the public model catalogue (no key needed)',
        description='Print the public model catalogue (GET /v1/models) as a table. '
        'No key is needed.')
    models.add_argument('--base-url', metavar='URL', help=BASE_URL_HELP)
    models.add_argument('--ca-file', type=ca_file, metavar='PATH', help=CA_FILE_HELP)
    models.add_argument('--endpoint', metavar='NAME',
                        help='only models of this endpoint, e.g. act')
    models.add_argument('--timeout', type=seconds, default=DEFAULT_TIMEOUT_S,
                        metavar='SECONDS', help='per-request timeout (default %(default)s)')
    models.set_defaults(handler=run_models)


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


def run_models(args: argparse.Namespace) -> int:
    """Print the catalogue the gateway lists; return the exit status (1 if it cannot)."""
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
