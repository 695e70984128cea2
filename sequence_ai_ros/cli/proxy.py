"""`sequence-ai-ros proxy`: relay to a local gateway over a slower link, to rehearse a robot."""

import argparse
import sys
from typing import Any

from sequence_ai_ros import stop_signals
from sequence_ai_ros.cli.arguments import host_port, kbps, milliseconds
from sequence_ai_ros.cli.names import PROG

PROXY_DESCRIPTION = """\
Relay a local port to a gateway on this machine through a slower link, to rehearse a robot
against the network it will really have: point its base_url at the printed URL (https:// if
the gateway serves TLS, which passes through untouched). Only loopback addresses are accepted.
Runs until Ctrl-C or SIGTERM.

For scripts: once it listens, the first line on stdout starts `proxy URL -> ` and is flushed;
the last, as it stops, counts what it relayed."""


def add_command(commands: Any) -> None:
    """Add `proxy` and its flags to the command line's subcommands."""
    proxy = commands.add_parser(
        'proxy', help='relay to a local gateway over a slow link (latency, jitter, bandwidth)',
        description=PROXY_DESCRIPTION)
    proxy.add_argument('--upstream', required=True, type=host_port, metavar='HOST:PORT',
                       help='the gateway to relay to, e.g. 127.0.0.1:8765 (loopback only)')
    proxy.add_argument('--host', default='127.0.0.1',
                       help='address to listen on (loopback only; default %(default)s)')
    proxy.add_argument('--port', type=int, default=0,
                       help='port to listen on (default: a free one, printed at start)')
    proxy.add_argument('--latency-ms', type=milliseconds, default=0.0, metavar='MS',
                       help='one-way delay added each way: a round trip gains twice this')
    proxy.add_argument('--jitter-ms', type=milliseconds, default=0.0, metavar='MS',
                       help='random extra delay up to this per chunk, order kept')
    proxy.add_argument('--bandwidth-kbps', type=kbps, default=None, metavar='KBIT/S',
                       help='cap per direction and connection, in kilobits per second '
                       '(default: unlimited)')
    proxy.set_defaults(handler=run_proxy)


def run_proxy(args: argparse.Namespace) -> int:
    """Relay until SIGINT or SIGTERM, then print what was relayed; return the exit status."""
    with stop_signals.stop_on_signals():
        return _relay(args)


def _relay(args: argparse.Namespace) -> int:
    from sequence_ai_ros.faults import FaultProxy
    from sequence_ai_ros.faults.process import summary_line

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
    try:
        bandwidth = f'{args.bandwidth_kbps:g} kbit/s' if args.bandwidth_kbps else 'unlimited'
        print(f'proxy {proxy.url()} -> {host}:{port}: latency {args.latency_ms:g} ms each way '
              f'(+{2 * args.latency_ms:g} ms per round trip), jitter up to '
              f'{args.jitter_ms:g} ms, bandwidth {bandwidth}. Ctrl-C to stop.', flush=True)
        stop_signals.wait()
    finally:
        proxy.close()
    stats = proxy.stats()
    for error in stats.errors:  # the proxy's own bugs, never the peers' doing
        print(f'{PROG} proxy: internal error: {error}', file=sys.stderr)
    print(summary_line(stats), flush=True)
    return 0
