"""
The `gateway` command: parse flags, build the app, serve it with uvicorn until SIGINT or SIGTERM.

A signal is a request to stop (sequence_ai_ros.stop_signals): at start-up the gateway stops
before it serves; when serving, uvicorn shuts down gracefully (requests in flight get up to 3 s);
either way the process exits 0.

Durations given on the command line are model seconds; `--time-scale S` multiplies every
one of them (latency, cold start, idle timeout, step time, retry_after_s) and divides the
control rate, so a test at S = 0.02 sees the same ratios 50 times faster.
"""

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
import logging
import os
import shutil
import socket
import sys
from typing import Any

from sequence_ai_ros import stop_signals

from .app import create_app
from .config import DirectSettings, GatewayConfig, PROTOCOLS, SCENARIOS
from .keys import KEYS_ENV, load_keys, load_robot_keys

LOG = logging.getLogger('sequence_ai_ros.gateway')
__all__ = ['build_parser', 'create_app', 'main']


def build_parser(prog: str = 'gateway') -> argparse.ArgumentParser:
    """Build the parser of the command-line flags (shared with `sequence-ai-ros gateway`)."""
    defaults = GatewayConfig()
    direct = defaults.direct
    parser = argparse.ArgumentParser(
        prog=prog, description='Serve the sequence-ai wire contract locally, with reference '
        "policies and the hosted catalogue's timing.")
    add = parser.add_argument
    add('--host', default=defaults.host, help='address to bind (default %(default)s)')
    add('--port', type=int, default=defaults.port, help='port (default %(default)s)')
    add('--time-scale', type=float, default=defaults.time_scale, metavar='S',
        help='multiply every duration by S and divide control rates by S (default 1.0)')
    add('--scenario', choices=SCENARIOS, default=defaults.scenario,
        help='latency scenario: steady = the profile; heavy_tail = 1%% of calls 3-5x slower; '
        'step = latency doubles after --step-after-s of uptime; fast = median 0.15 s')
    add('--step-after-s', type=float, default=defaults.step_after_s, metavar='SECONDS',
        help='uptime before the step scenario doubles latency (model s, default 30)')
    add('--latency-median-s', type=float, default=None, metavar='SECONDS',
        help="override every model's median latency (model s; 0 = no simulated latency)")
    add('--cold-start-s', type=float, default=None, metavar='SECONDS',
        help="override every model's cold start (model s; catalogue: 100)")
    add('--idle-cold-s', type=float, default=defaults.idle_cold_s, metavar='SECONDS',
        help='a model idle this long goes cold again (model s, default 900)')
    add('--start-warm', action='store_true', help='start with every model warm')
    add('--concurrency', type=int, default=defaults.concurrency, metavar='N',
        help='inferences at once per model; more wait in FIFO order (default 16)')
    add('--max-body-bytes', type=int, default=defaults.max_body_bytes, metavar='BYTES',
        help='larger request bodies get 413 (default 8 MiB)')
    add('--body-timeout-s', type=float, default=defaults.body_timeout_s, metavar='SECONDS',
        help='a request body that sends nothing for this long gets 408 (real seconds, not '
        'scaled; default %(default)s)')
    add('--keys-file', default=None, metavar='PATH',
        help=f'API keys, "seq_xxx <credit>" per line; also ${KEYS_ENV}="seq_a=100,seq_b=5". '
        'A robot key names the one deployment it may use (direct protocol): "seq_robot_x '
        '<credit> <deployment>", "seq_robot_x=<credit>@<deployment>". With neither, auth is '
        'disabled')
    add('--seed', type=int, default=defaults.seed, help="seed of the server's random draws")
    add('--policy', default=None, metavar='MODULE:FACTORY',
        help='serve your own policy: factory(profile) -> object with act(observation, '
        'options, rng) (see sequence_ai_ros.gateway.policy_api)')
    add('--openpi', default=None, metavar='WS_URL',
        help="serve --openpi-model from openpi's websocket policy server (ws://host:port), "
        'warm and with no simulated latency')
    add('--openpi-model', default=defaults.openpi_model, metavar='NAME',
        help='the catalogue model the openpi server is (default %(default)s)')
    add('--catalogue', default=None, metavar='PATH', help='another catalogue.json')
    add('--certfile', default=None, help='TLS certificate (PEM); serve HTTPS')
    add('--keyfile', default=None, help='TLS private key (PEM)')
    add('--keep-alive-s', type=int, default=defaults.keep_alive_s, metavar='SECONDS',
        help='idle keep-alive connection timeout (default 75; robots hold one open)')
    add('--ray', action='store_true', help='serve on Ray Serve: a local Ray on loopback, the '
        'policy as replicas behind one ingress (pip install "sequence_ai_ros[ray]")')
    add('--ray-address', default=None, metavar='ADDR',
        help='serve on the existing Ray cluster at ADDR (implies --ray)')
    add('--replicas', type=int, default=1, metavar='N', help='policy replicas on Ray (default 1)')
    add('--max-replicas', type=int, default=0, metavar='M',
        help='autoscale the policy replicas from N up to M by queue length (Ray only)')
    add('--protocol', choices=PROTOCOLS, default=None,
        help='wire fronts: v1 (POST /v1/act), direct (connect + an HTTPS worker, as the '
        'sequence-ai client 0.51 speaks), or both (default; v1 with --ray)')
    add('--worker-port', type=int, default=direct.worker_port, metavar='PORT',
        help="the direct worker's HTTPS port (default 0: any free one, named in the connect "
        'answer)')
    add('--worker-url', default=None, metavar='URL',
        help="the worker's address in the connect answer when robots reach it elsewhere than "
        'the bound one (a load balancer or a TCP proxy in front: https://host:port; its TLS '
        'must pass through untouched, the certificate is pinned)')
    add('--seats', type=int, default=direct.seats, metavar='N',
        help='robots served at once per deployment on the direct protocol (default %(default)s)')
    add('--seat-queue', action='store_true',
        help='when every seat is taken, a robot waits in line (503, queue_position) instead of '
        'being refused busy (429)')
    add('--seat-ttl-s', type=float, default=direct.seat_ttl_s, metavar='SECONDS',
        help='a seat no keepalive reached for this long is freed (model s, default %(default)s)')
    add('--lease-ttl-s', type=float, default=direct.lease_ttl_s, metavar='SECONDS',
        help="a direct secret's lease; a connect renews it (model s, default %(default)s)")
    add('--request-timeout-s', type=float, default=direct.request_timeout_s, metavar='SECONDS',
        help='an act running longer is answered 504 timeout (model s, default %(default)s)')
    add('--unlisted', action='store_true',
        help='list no robot deployment on /v1/models, as the hosted service does: they are '
        'reached by name only')
    add('--log-level', default=defaults.log_level,
        choices=('critical', 'error', 'warning', 'info', 'debug'))
    return parser


def config_from_args(args: argparse.Namespace) -> GatewayConfig:
    """Make a GatewayConfig from parsed flags, with keys read from the file and environment."""
    if bool(args.certfile) != bool(args.keyfile):
        raise ValueError('--certfile and --keyfile go together')
    on_ray = bool(args.ray or args.ray_address)
    protocol = args.protocol or ('v1' if on_ray else 'both')
    if on_ray and protocol != 'v1':
        # The worker would have to sit beside Ray Serve's ingress, with seats and episodes
        # shared between replicas: not done; --ray serves /v1/act only.
        raise ValueError(f'--protocol {protocol} is not served on Ray: --ray serves v1 only '
                         '(see docs/PROTOCOL.md)')
    if args.worker_url and protocol == 'v1':
        raise ValueError('--worker-url names the direct worker: not with --protocol v1')
    return GatewayConfig(
        host=args.host, port=args.port, time_scale=args.time_scale, scenario=args.scenario,
        step_after_s=args.step_after_s, latency_median_s=args.latency_median_s,
        cold_start_s=args.cold_start_s, idle_cold_s=args.idle_cold_s,
        start_warm=args.start_warm, concurrency=args.concurrency,
        max_body_bytes=args.max_body_bytes, body_timeout_s=args.body_timeout_s,
        keys=load_keys(args.keys_file), robot_keys=load_robot_keys(args.keys_file),
        seed=args.seed, policy=args.policy,
        catalogue=args.catalogue, certfile=args.certfile, keyfile=args.keyfile,
        keep_alive_s=args.keep_alive_s, log_level=args.log_level,
        openpi=args.openpi, openpi_model=args.openpi_model, protocol=protocol,
        unlisted=args.unlisted,
        direct=DirectSettings(seats=args.seats, queue=args.seat_queue,
                              seat_ttl_s=args.seat_ttl_s, lease_ttl_s=args.lease_ttl_s,
                              request_timeout_s=args.request_timeout_s,
                              worker_host=args.host, worker_port=args.worker_port,
                              worker_url=args.worker_url))


def main(argv: Sequence[str] | None = None, prog: str = 'gateway') -> int:
    """Run the gateway until SIGINT or SIGTERM; returns the exit status (0 after a signal)."""
    with stop_signals.stop_on_signals():
        return _main(argv, prog)


def _main(argv: Sequence[str] | None, prog: str) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format='%(asctime)s %(levelname)s %(name)s: %(message)s')
    try:
        config = config_from_args(args)
        app = None if args.ray or args.ray_address else create_app(config)
    except (ValueError, OSError, ImportError, AttributeError) as exc:
        parser.exit(2, f'{parser.prog}: error: {exc}\n')
    if args.ray or args.ray_address:
        return _serve_on_ray(parser, args, config)
    if not config.keys:
        LOG.warning('no API keys (--keys-file or %s): auth is disabled, every call is '
                    'accepted', KEYS_ENV)
    scheme = 'https' if config.certfile else 'http'
    LOG.info('serving %s://%s:%d (auth %s, scenario %s, time scale %g, %s policy)',
             scheme, config.host, config.port, 'keys' if config.keys else 'disabled',
             config.scenario, config.time_scale, config.policy or 'reference')
    if not stop_signals.requested():  # a signal during start-up: nothing to serve
        try:
            _serve(app, config)
        except OSError as exc:  # the worker's port taken (uvicorn reports its own port's)
            parser.exit(1, f'{parser.prog}: error: direct worker: {exc}\n')
    if stop_signals.requested():
        # A request uvicorn gave up on may still hold a worker thread (a policy server that
        # does not answer), which the interpreter would wait for: every answer is sent.
        stop_signals.exit_now_if_threads_linger(0)
    return 0


def _serve(app: Any, config: GatewayConfig) -> None:
    """Serve `app` (and the direct worker beside it) with uvicorn until asked to stop."""
    import asyncio

    import uvicorn  # here, so that building the parser stays cheap for the umbrella CLI

    class StopOnRequest(uvicorn.Server):
        # uvicorn's own handlers re-raise the signal once it has shut down, and the process
        # dies of it (-2, -15): a launcher reports a crash. A second signal changes nothing:
        # the graceful shutdown is bounded (timeout_graceful_shutdown) and ends as it began.
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            def stop(signum: int) -> None:
                if app.state.direct is not None:
                    app.state.direct.draining = True  # answers still sent say `draining`
                self.should_exit = True

            with stop_signals.on_signal(stop):
                self.should_exit = self.should_exit or stop_signals.requested()
                yield

        def install_signal_handlers(self) -> None:  # the same, for uvicorn before 0.29
            pass

    def server(asgi: Any, port: int, certfile: str | None, keyfile: str | None) -> Any:
        return StopOnRequest(uvicorn.Config(
            asgi, host=config.host, port=port, log_level=config.log_level,
            timeout_keep_alive=config.keep_alive_s, timeout_graceful_shutdown=3,
            # Our own lines carry no headers; uvicorn's access lines are off to keep it that
            # way, and forwarded headers are ignored so stats see the real peer of each
            # connection.
            access_log=False, proxy_headers=False, ssl_certfile=certfile, ssl_keyfile=keyfile,
            # uvicorn's 'auto' picks httptools and uvloop when installed (ray[serve] brings
            # them); the gateway's framing answers (400 on a short Content-Length, 408, 413)
            # are h11's.
            http='h11', loop='asyncio'))

    servers: list[tuple[Any, list[socket.socket] | None]] = [
        (server(app, config.port, config.certfile, config.keyfile), None)]
    with _worker_listener(app, config) as worker:
        if worker is not None:
            sock, certificate = worker
            servers.insert(0, (server(app.state.worker.app(), sock.getsockname()[1],
                                      certificate.certfile, certificate.keyfile), [sock]))
        asyncio.run(_serve_all(servers))


async def _serve_all(servers: list[tuple[Any, list[socket.socket] | None]]) -> None:
    """Serve every listener (the worker first, so it answers before the gateway does)."""
    import asyncio

    tasks = []
    for server, sockets in servers:
        tasks.append(asyncio.create_task(server.serve(sockets)))
        while not server.started and not tasks[-1].done():
            await asyncio.sleep(0.01)
    # One listener stopping (a signal, a failed bind) stops the other too.
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for server, _ in servers:
        server.should_exit = True
    await asyncio.gather(*tasks)


@contextmanager
def _worker_listener(app: Any, config: GatewayConfig) -> Iterator[Any]:
    """Bind the direct worker's socket and make its certificate; None without the protocol."""
    direct = app.state.direct
    if direct is None:
        yield None
        return
    from .direct.tls import make_certificate

    host = config.host
    reachable = '127.0.0.1' if host in ('0.0.0.0', '') else host
    certificate = make_certificate(reachable)
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say it (else every
    # answer waits out a delayed ACK, 40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, config.direct.worker_port))
        port = sock.getsockname()[1]
        bound = (f'https://[{reachable}]:{port}' if ':' in reachable
                 else f'https://{reachable}:{port}')
        direct.worker_url = config.direct.worker_url or bound
        direct.fingerprint = certificate.fingerprint
        LOG.info('direct worker at %s%s (certificate sha256 %s)', bound,
                 '' if direct.worker_url == bound else f', reached at {direct.worker_url}',
                 certificate.fingerprint)
        yield sock, certificate
    finally:
        sock.close()
        shutil.rmtree(os.path.dirname(certificate.keyfile), ignore_errors=True)


def _serve_on_ray(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  config: GatewayConfig) -> int:
    try:
        from .ray_serve.application import Scaling
        from .ray_serve.launch import serve_on_ray
        scaling = Scaling(args.replicas, args.max_replicas, args.ray_address, os.getpid())
    except ImportError as exc:
        parser.exit(2, f'{parser.prog}: error: --ray needs ray[serve] '
                    f'(pip install "sequence_ai_ros[ray]"): {exc}\n')
    except ValueError as exc:
        parser.exit(2, f'{parser.prog}: error: {exc}\n')
    return serve_on_ray(config, scaling)


if __name__ == '__main__':
    sys.exit(main())
