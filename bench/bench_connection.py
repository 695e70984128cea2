"""
Connection cost: the local gateway over TLS behind a user-space latency proxy.

Run: .venv/bin/python -m bench.bench_connection [--calls N] [--latency-ms MS] [--out PATH]
     [--proxy-mode process|thread]

The gateway serves HTTPS (a self-signed certificate made with the openssl CLI), warm, with no
simulated inference time (--latency-median-s 0), so the network is most of a call. FaultProxy
adds --latency-ms each way (a 40 ms round trip by default) plus one round trip before a new
connection's first byte, as its TCP handshake would cost over a real link. Each proxy runs in
a process of its own (`sequence-ai-ros proxy`, the default), so its relaying does not take the
GIL from the client being timed; --proxy-mode thread runs them in this process instead.
Measured side by side, interleaved call by call (the order rotates each round) so drift hits
every approach:

  new connection  a fresh httpx.Client per /v1/act, same TLS trust and body as ours
  ours            sequence_ai_ros Policy.predict on its kept-alive connection
  published       sequence-ai 0.1.0's predict, unmodified (trusts the certificate through
                  $SSL_CERT_FILE, which its httpx honours)
  server time     ours straight to the gateway, no proxy: what no network can go below
and, to tell the emulator's cost from the client's:
  bare            a kept-alive httpx.Client posting the same bytes, through its own proxy
  bare direct     the same, straight to the gateway
  0 ms proxy      ours through a FaultProxy with no latency

The limit is server time + one round trip, call by call. Each call is bracketed by the
gateway's own connection count (GatewayProcess.stats()), so connections are counted by the
server, not assumed. Prints a markdown table and verdicts, and writes them to --out.
"""

import argparse
from collections.abc import Callable, Iterator
import contextlib
import json
import math
import os
from pathlib import Path
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import httpx
from sequence_ai_ros import connect, Policy
from sequence_ai_ros.client import ImageFrame, Observation, Proprioception
from sequence_ai_ros.faults import FaultProxy, ProxyProcess, ProxyStats
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.node.images import encode_raw_image
from sequence_ai_ros.sim.render import SceneRenderer
from sequence_ai_ros.world import arm_model

from ._record import command_line, machine, provenance

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

try:
    import sequence_ai
except ImportError:  # the published client is a dev requirement, not a runtime one
    sequence_ai = None  # type: ignore[assignment]

KEY = 'seq_bench_connection_key_000001'
MODEL = 'accounts/sequences/models/pi05-droid'
CATALOGUE = REPO / 'sequence_ai_ros' / 'gateway' / 'catalogue.json'
HOSTED_HANDSHAKE_MS = 184.9  # PROTOCOL.md: the seed's measured handshake on the hosted gateway
WARMUP_ROUNDS = 3
TARGET = 1.05  # ours within 5% of the limit
DEFAULT_OUT = '/tmp/bench_connection.md'

NEW, OURS, PUBLISHED, DIRECT = 'new connection', 'ours', 'published', 'server time'
BARE, BARE_DIRECT, ZERO = 'bare', 'bare direct', '0 ms proxy'
PROXIED = (NEW, OURS, PUBLISHED, BARE, ZERO)
PROCESS, THREAD = 'process', 'thread'
PROXY_MODES = {
    PROCESS: 'in a process of its own (`sequence-ai-ros proxy`)',
    THREAD: "in this process (a FaultProxy thread, sharing the clients' GIL)",
}


def make_certificate(folder: str) -> tuple[str, str]:
    """Make a self-signed certificate for 127.0.0.1 with the openssl CLI, as the tests do."""
    openssl = shutil.which('openssl')
    if openssl is None:
        sys.exit('bench_connection: needs the openssl CLI to make a certificate')
    cert, key = os.path.join(folder, 'cert.pem'), os.path.join(folder, 'key.pem')
    subprocess.run([openssl, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
                    '-keyout', key, '-out', cert, '-subj', '/CN=127.0.0.1',
                    '-addext', 'subjectAltName=IP:127.0.0.1'], check=True, capture_output=True)
    return cert, key


def observation() -> Observation:
    """Build two 224x224 JPEG views of the simulated arm, encoded as the ROS node sends them."""
    renderer = SceneRenderer(320, 240)
    images = []
    for view in ('exterior_1', 'wrist'):
        pixels = getattr(renderer, 'exterior' if view == 'exterior_1' else 'wrist')(
            arm_model.HOME, (0.5, 0.2))
        height, width = pixels.shape[:2]
        frame = encode_raw_image('rgb8', width, height, width * 3, pixels.tobytes())
        images.append(ImageFrame(view=view, data=frame.base64()))
    return Observation(images=images, instruction='reach the red disc',
                       proprioception=Proprioception(
                           joint_positions=[float(v) for v in arm_model.HOME], gripper=0.0))


def published_observation(ours: Observation) -> Any:
    wire = ours.to_wire()
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(f['view'], f['data']) for f in wire['images']],
        proprioception=sequence_ai.Proprioception(**wire['proprioception']),
        instruction=wire['instruction'])


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@contextlib.contextmanager
def env_var(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


class Bench:
    """The gateway, one proxy per proxied approach, and a client per approach."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack,
                 cert: str, key: str) -> None:
        self.args = args
        self.trust = ssl.create_default_context(cafile=cert)
        self.gateway = stack.enter_context(GatewayProcess(
            ['--start-warm', '--latency-median-s', '0', '--keep-alive-s', '600',
             '--log-level', 'warning'], keys={KEY: 10 ** 9}, certfile=cert, keyfile=key))
        self.proxies: dict[str, FaultProxy | ProxyProcess] = {}
        for name in PROXIED:  # one each, so each proxy's counters are one approach's
            latency_s = 0.0 if name == ZERO else args.latency_ms / 1000
            proxy = self.proxies[name] = self.proxy(latency_s)
            proxy.start()
            stack.callback(proxy.close)
        self.obs = observation()
        self.body = json.dumps({'model': MODEL, 'observation': self.obs.to_wire()},
                               allow_nan=False)
        ours = stack.enter_context(self.policy(self.proxies[OURS].url('https')))
        direct = stack.enter_context(self.policy(self.gateway.base_url))
        zero = stack.enter_context(self.policy(self.proxies[ZERO].url('https')))
        bare = stack.enter_context(self.client(self.proxies[BARE].url('https')))
        bare_direct = stack.enter_context(self.client(self.gateway.base_url))
        self.calls: dict[str, Callable[[], Any]] = {
            NEW: self.new_connection, OURS: lambda: ours.predict(self.obs),
            DIRECT: lambda: direct.predict(self.obs), BARE: lambda: self.post(bare),
            BARE_DIRECT: lambda: self.post(bare_direct), ZERO: lambda: zero.predict(self.obs)}
        if sequence_ai is not None and not args.no_published:
            with env_var('SSL_CERT_FILE', cert):  # read when its httpx.Client is made
                self.published = stack.enter_context(sequence_ai.connect(
                    'pi05-droid', api_key=KEY, base_url=self.proxies[PUBLISHED].url('https')))
            published_obs = published_observation(self.obs)
            self.calls[PUBLISHED] = lambda: self.published.predict(published_obs)
        self.samples: dict[str, list[float]] = {name: [] for name in self.calls}
        self.connections: dict[str, int] = dict.fromkeys(self.calls, 0)

    def proxy(self, latency_s: float) -> FaultProxy | ProxyProcess:
        if self.args.proxy_mode == PROCESS:
            return ProxyProcess('127.0.0.1', self.gateway.port, latency_s=latency_s)
        proxy = FaultProxy('127.0.0.1', self.gateway.port)
        proxy.latency_s = latency_s
        return proxy

    def proxy_stats(self) -> dict[str, ProxyStats]:
        """Return each proxy's counters; a proxy process gives them as it stops."""
        out = {}
        for name, proxy in self.proxies.items():
            if isinstance(proxy, FaultProxy):
                out[name] = proxy.stats()
                continue
            stats = proxy.close()
            if stats is None:
                sys.exit(f'bench_connection: the {name!r} proxy process gave no counters: '
                         f'{proxy.stderr}')
            out[name] = stats
        return out

    def policy(self, base_url: str) -> Policy:
        # /v1/act, as the published 0.1.0 client beside it, through the same delaying proxy.
        return connect(MODEL, api_key=KEY, base_url=base_url, verify=self.trust,
                       protocol='v1')

    def client(self, base_url: str) -> httpx.Client:
        return httpx.Client(base_url=base_url, verify=self.trust, timeout=30.0,
                            headers={'Authorization': f'Bearer {KEY}',
                                     'Content-Type': 'application/json'})

    def post(self, client: httpx.Client) -> None:
        response = client.post('/v1/act', content=self.body)
        response.raise_for_status()
        response.json()

    def new_connection(self) -> None:
        with self.client(self.proxies[NEW].url('https')) as client:
            self.post(client)

    def tls_version(self) -> str:
        with httpx.Client(verify=self.trust) as client:
            with client.stream('GET', self.gateway.base_url + '/v1/health') as response:
                stream = response.extensions['network_stream']
                return str(stream.get_extra_info('ssl_object').version())

    def run(self) -> None:
        names = list(self.calls)
        for round_ in range(WARMUP_ROUNDS + self.args.calls):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                before = self.gateway.stats()['connections']
                began = time.perf_counter()
                self.calls[name]()
                elapsed = time.perf_counter() - began
                self.connections[name] += self.gateway.stats()['connections'] - before
                if round_ >= WARMUP_ROUNDS:
                    self.samples[name].append(elapsed * 1000)
            if round_ and round_ % 20 == 0:
                print(f'  {round_} rounds', flush=True)


def chunk_rows() -> list[tuple[str, float]]:
    models = json.loads(CATALOGUE.read_text())['models']
    return [(m['name'], m['action_horizon'] / m['control_hz'] * 1000) for m in models
            if m.get('endpoint') == 'act']


def paired(bench: Bench, a: str, b: str) -> float:
    """Return the median over rounds of a's call minus b's, taken in the same round."""
    return statistics.median(x - y for x, y in zip(bench.samples[a], bench.samples[b]))


def report(bench: Bench, args: argparse.Namespace, tls: str, runtime: float,
           command: str, proxies: dict[str, ProxyStats]) -> str:
    rtt = 2 * args.latency_ms
    s = bench.samples
    limit = [d + rtt for d in s[DIRECT]]
    med = {name: statistics.median(v) for name, v in s.items()}
    med['limit'] = statistics.median(limit)
    p90 = {name: quantile(v, 0.9) for name, v in s.items()}
    p90['limit'] = quantile(limit, 0.9)
    labels = {
        NEW: '(a) new connection per call (fresh httpx.Client, TLS)',
        OURS: '(b) ours: Policy.predict, kept-alive connection',
        PUBLISHED: '(c) published sequence-ai 0.1.0 predict',
        DIRECT: '(d) server time: ours direct to the gateway, no proxy',
        'limit': f'limit = (d) + one round trip ({rtt:g} ms)',
        BARE: 'bare kept-alive httpx.Client, same bytes, through the proxy',
        BARE_DIRECT: 'bare kept-alive httpx.Client, direct',
        ZERO: 'ours through a 0 ms proxy',
    }
    calls = args.calls + WARMUP_ROUNDS
    lines = ['| approach | median ms | p90 ms | median / limit | gateway connections '
             f'({calls} calls) |', '|---|---:|---:|---:|---:|']
    for name in (NEW, OURS, PUBLISHED, DIRECT, 'limit', BARE, BARE_DIRECT, ZERO):
        if name not in med:
            continue
        conns = '-' if name == 'limit' else str(bench.connections[name])
        lines.append(f'| {labels[name]} | {med[name]:.1f} | {p90[name]:.1f} | '
                     f'{med[name] / med["limit"]:.3f} | {conns} |')
    ratio = med[OURS] / med['limit']
    saving = med[NEW] - med[OURS]
    # The emulator's own cost, seen by the simplest client; the rest of ours' excess is ours.
    proxy_cost = paired(bench, BARE, BARE_DIRECT) - rtt
    excess = paired(bench, OURS, DIRECT) - rtt
    corrected = (med[OURS] - proxy_cost) / med['limit']
    late = proxies[OURS]
    where = ('in its own process' if args.proxy_mode == PROCESS
             else "in this process, under the clients' GIL")
    verdicts = [
        f'- Ours / limit = {ratio:.3f} (median {med[OURS]:.1f} ms vs {med["limit"]:.1f} ms): '
        + ('within 5% of the limit.' if ratio <= TARGET else 'NOT within 5% of the limit.'),
        f'- Keeping the connection saves {saving:.1f} ms per call (medians; paired per round: '
        f'{paired(bench, NEW, OURS):.1f} ms): {saving / rtt:.1f} round trips of {rtt:g} ms, '
        'the TCP and TLS 1.3 handshakes plus the certificate work.',
        f'- Above the limit, per call (paired medians): ours {excess:+.2f} ms; a bare httpx '
        f"client through the same kind of proxy {proxy_cost:+.2f} ms, which is the proxy's "
        f'own cost (relaying in Python, {where}; and its timers wake '
        f'{1000 * late.late_s / max(1, late.deliveries):.2f} ms late per delivered chunk on '
        'average, as asyncio rounds epoll timeouts up to whole ms). '
        f'Left for our client: {excess - proxy_cost:+.2f} ms; ours / limit without the '
        f"proxy's cost: {corrected:.3f}. At 0 ms latency the "
        f'proxy costs {paired(bench, ZERO, DIRECT):+.2f} ms per call.',
    ]
    if PUBLISHED in med:
        verdicts.append(
            f'- Published sequence-ai 0.1.0: median {med[PUBLISHED]:.1f} ms; ours '
            f'{paired(bench, OURS, PUBLISHED):+.1f} ms against it, paired. Both keep one '
            f'connection ({bench.connections[PUBLISHED]} and {bench.connections[OURS]} seen by '
            'the gateway): on connection reuse the two clients are the same.')
    kept = ', '.join(f'{name} {bench.connections[name]}' for name in bench.calls
                     if name != NEW)
    accepted = proxies[NEW].accepted
    verdicts.append(
        f'- New connection per call: the gateway saw {bench.connections[NEW]} connections for '
        f'{calls} calls (its proxy accepted {accepted}; the gateway counts distinct client '
        '(host, port) pairs, so an ephemeral port the kernel hands out again counts once); '
        f'the kept-alive approaches: {kept}.')
    share = ['| model | chunk ms | saving here, share of chunk | hosted handshake '
             f'({HOSTED_HANDSHAKE_MS} ms), share |', '|---|---:|---:|---:|']
    for name, chunk_ms in chunk_rows():
        share.append(f'| {name} | {chunk_ms:.0f} | {saving:.1f} ms = '
                     f'{100 * saving / chunk_ms:.1f}% | '
                     f'{100 * HOSTED_HANDSHAKE_MS / chunk_ms:.1f}% |')
    header = (f'Command: `{command}`  \nMachine: {machine()}  \nCode: {provenance()}  \n'
              f'Gateway: local, HTTPS ({tls}, self-signed RSA 2048), warm, no simulated '
              f'inference (--latency-median-s 0), same machine. Link: FaultProxy '
              f'{PROXY_MODES[args.proxy_mode]}, {args.latency_ms:g} ms each way ({rtt:g} ms '
              'round trip, one more for a new '
              f"connection's TCP handshake). {args.calls} timed calls per approach after "
              f'{WARMUP_ROUNDS} warm-up rounds, interleaved. Runtime {runtime:.0f} s.')
    return '\n\n'.join([
        f'## Connection: kept alive vs new per call, over TLS and a {rtt:g} ms round trip',
        header, '\n'.join(lines), '\n'.join(verdicts),
        'Saving per call as a share of each catalogue chunk (what a refill has to fit in):',
        '\n'.join(share)]) + '\n'


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--calls', type=int, default=100, metavar='N',
                        help='timed calls per approach (default %(default)s)')
    parser.add_argument('--latency-ms', type=float, default=20.0, metavar='MS',
                        help='one-way latency the proxy adds (default %(default)s)')
    parser.add_argument('--proxy-mode', choices=tuple(PROXY_MODES), default=PROCESS,
                        help='where each proxy runs: process, `sequence-ai-ros proxy` in a '
                        'child (default); thread, a FaultProxy in this process')
    parser.add_argument('--no-published', action='store_true',
                        help='leave out the published sequence-ai client')
    parser.add_argument('--out', default=DEFAULT_OUT,
                        help='also write the markdown here (default %(default)s)')
    args = parser.parse_args(argv)
    if args.calls < 5 or args.latency_ms < 0:
        parser.error('--calls must be >= 5 and --latency-ms >= 0')
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = command_line('bench.bench_connection', argv)
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        cert, key = make_certificate(folder)
        bench = Bench(args, stack, cert, key)
        tls = bench.tls_version()
        print(f'bench_connection: {args.calls} calls x {len(bench.calls)} approaches, '
              f'{args.latency_ms:g} ms each way, {tls}, proxies '
              f'{PROXY_MODES[args.proxy_mode]}', flush=True)
        bench.run()
        text = report(bench, args, tls, time.monotonic() - began, command, bench.proxy_stats())
    print(text)
    Path(args.out).write_text(text)
    print(f'(written to {args.out})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
