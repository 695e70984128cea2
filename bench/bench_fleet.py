"""
Issue #8's fleet benchmark: many control loops, and namespaced policy nodes, on one gateway.

Run: .venv/bin/python bench/bench_fleet.py [--quick] [--clients 1 8 16 32] [--nodes 1 4 8 12]
     [--seconds S] [--node-seconds S] [--no-clients | --no-nodes] [--out PATH]

Client loops: N Policies, each `run()` (append, prefetch, up to two requests in flight) in a
thread of its own on its own Policy and connections, all started together against one local gateway
process (a real HTTP server at nice 10). The gateway serves a `--policy` plug-in that does the
reference policy's work per call and stamps every action with (loop, request, step), so each
loop checks what it really executed: chunks in observation order, each step once and in order,
each request answered or failed. Rows: N = 1, 8, 16, 32 at the gateway's defaults; then N = 32
past the default's worker limit (more gateway workers, higher request rates, loops split over
processes) to find the next limit; then lingbot-vla-v2-6b, whose latency exceeds its chunk.

Nodes: K namespaced policy nodes (`python -m sequence_ai_ros.node.main`, the model's parameter
file) each with its own simulated arm (`sequence_ai_ros.sim.node`) on one private ROS domain,
against one gateway (reference policy, real time): underruns, holds, CPU per process. Rows:
K = 1, 4, 8, 12, then the largest again with the arms publishing joint states at 50 Hz.

Prints markdown and writes it to /tmp/bench_fleet.md; bench/RESULTS.md is left alone.
"""

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import subprocess
import sys
import time
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

from _fleet_clients import cpu_seconds, LoopResult, run_fleet, synthetic_frames  # noqa: E402
from _fleet_nodes import acts, machine_busy, NodeFleet, NodeRun, Watcher  # noqa: E402
from _record import GATEWAY_NICE, lower_priority, machine, provenance  # noqa: E402
from sequence_ai_ros.client.latency import quantile  # noqa: E402
from sequence_ai_ros.demo.processes import random_domain_id  # noqa: E402
from sequence_ai_ros.gateway.catalogue import load_catalogue, ModelProfile  # noqa: E402
from sequence_ai_ros.gateway.config import GatewayConfig  # noqa: E402
from sequence_ai_ros.gateway.process import GatewayProcess  # noqa: E402

KEY = 'seq_bench_fleet_key_000000000001'
MODEL = 'pi05-droid'
LONG_MODEL = 'lingbot-vla-v2-6b'
DEFAULT_WORKERS = GatewayConfig().concurrency
MORE_WORKERS = 64
CLIENT_SCALE = 0.5
DEFAULT_SECONDS, QUICK_SECONDS = 10.0, 4.0
NODE_SCALE = 1.0
DEFAULT_NODE_SECONDS, QUICK_NODE_SECONDS = 15.0, 8.0
IDLE_S = 3.0
PROCESS_SPLIT = 4
WORKER_START_S = 4.0  # child interpreters import and render before the common start
OUT = Path('/tmp/bench_fleet.md')


@dataclass(frozen=True)
class ClientSpec:
    """One client-loop row: which model, how many loops, how run, against what gateway."""

    model: str
    loops: int
    time_scale: float
    workers: int  # the gateway's --concurrency: inferences at once per model
    processes: int = 0  # 0: every loop a thread of this process

    @property
    def how(self) -> str:
        """Say how the loops were run."""
        return 'threads' if not self.processes else f'{self.processes} processes'


@dataclass
class ClientRow:
    """What one row measured."""

    spec: ClientSpec
    profile: ModelProfile
    window_s: float
    results: list[LoopResult]
    client_cpu: float  # CPU seconds of the loops' process(es) / wall; 1.0 = one core
    gateway_cpu: float
    machine_busy: float  # of all cores, 0..1
    stats: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def total(self, name: str) -> float:
        """Sum a RunOutcome field over the loops."""
        return sum(float(r.outcome.get(name) or 0) for r in self.results)

    @property
    def requests(self) -> int:
        """Count the /v1/act calls the gateway answered."""
        return acts(self.stats)

    @property
    def demanded_per_s(self) -> float:
        """Return the requests per wall second the loops need (append: one per chunk)."""
        return self.spec.loops / self.profile.covers_seconds

    @property
    def moving(self) -> list[float]:
        """Each loop's moving fraction."""
        return [float(r.outcome.get('moving_fraction') or 0.0) for r in self.results]

    def model_s(self, seconds: list[float], q: float) -> float:
        """Return a quantile of wall seconds, in model seconds."""
        value = quantile(seconds, q)
        return float('nan') if value is None else value / self.spec.time_scale

    @property
    def round_trips(self) -> list[float]:
        """Every answer's HTTP round trip (wall s), pooled over the loops."""
        return [t for r in self.results for t, _ in r.timings]

    @property
    def inference(self) -> list[float]:
        """Every answer's server-reported inference time (wall s), pooled."""
        return [ms / 1000.0 for r in self.results for _, ms in r.timings if ms is not None]

    @property
    def outside_inference(self) -> list[float]:
        """Every answer's round trip less its server-reported inference (wall s)."""
        return [t - ms / 1000.0 for r in self.results for t, ms in r.timings if ms is not None]

    @property
    def max_queued(self) -> int:
        """Return the most requests the gateway ever held waiting for a worker."""
        return int(self.stats['models'].get(self.profile.id, {}).get('max_queued', 0))


# -- client loops -------------------------------------------------------------------------------

def client_specs(args: argparse.Namespace) -> list[ClientSpec]:
    """Return the rows to run: the defaults' sweep, then past the worker and CPU limits."""
    specs = [ClientSpec(MODEL, n, CLIENT_SCALE, DEFAULT_WORKERS) for n in args.clients]
    top = max(args.clients)
    if args.quick:
        return specs + [ClientSpec(MODEL, top, 0.2, MORE_WORKERS)]
    return specs + [
        ClientSpec(MODEL, top, CLIENT_SCALE, MORE_WORKERS),
        ClientSpec(MODEL, top, CLIENT_SCALE, MORE_WORKERS, PROCESS_SPLIT),
        ClientSpec(MODEL, top, 0.3, MORE_WORKERS),
        ClientSpec(MODEL, top, 0.2, MORE_WORKERS),
        ClientSpec(MODEL, top, 0.2, MORE_WORKERS, PROCESS_SPLIT),
        ClientSpec(LONG_MODEL, 8, CLIENT_SCALE, DEFAULT_WORKERS),
        ClientSpec(LONG_MODEL, 16, CLIENT_SCALE, DEFAULT_WORKERS),
    ]


def fleet_gateway(scale: float, workers: int, plugin: bool = True) -> GatewayProcess:
    """Make a warm gateway (not yet started), serving the stamping plug-in if asked."""
    args = ['--time-scale', f'{scale:g}', '--start-warm', '--seed', '0',
            '--log-level', 'warning', '--concurrency', str(workers)]
    env = {}
    if plugin:
        args += ['--policy', '_fleet_policy:make_fleet_policy']
        env['PYTHONPATH'] = os.pathsep.join([str(HERE), str(REPO)])
    return GatewayProcess(args, keys={KEY: 10 ** 9}, env=env)


def run_in_processes(spec: ClientSpec, base_url: str, actions: int,
                     at_start: Callable[[], object]
                     ) -> tuple[list[LoopResult], float, float, list[str]]:
    """
    Split the loops over child processes; return results, their CPU s, wall s, warnings.

    `at_start` is called at the common start, after the children have imported and rendered.
    """
    start_at = time.monotonic() + WORKER_START_S
    ids = list(range(spec.loops))
    share = -(-spec.loops // spec.processes)
    children = [subprocess.Popen(
        [sys.executable, str(HERE / '_fleet_clients.py'), '--base-url', base_url, '--key', KEY,
         '--model', spec.model, '--actions', str(actions), '--start-at', repr(start_at),
         '--clients', *[str(c) for c in ids[i:i + share]]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(0, spec.loops, share)]
    results: list[LoopResult] = []
    cpu, caught = 0.0, []
    try:
        time.sleep(max(0.0, start_at - time.monotonic()))
        at_start()
        for child in children:
            out, err = child.communicate(timeout=600)
            if child.returncode != 0:
                raise RuntimeError(f'client worker exited with {child.returncode}:\n'
                                   f'{err[-2000:]}')
            body = json.loads(out.strip().splitlines()[-1])
            cpu += float(body['cpu_s'])
            caught += body['warnings']
            for item in body['results']:
                item['timings'] = [tuple(t) for t in item['timings']]
                results.append(LoopResult(**item))
    finally:
        for child in children:  # only on a failure or Ctrl-C are any still running
            if child.poll() is None:
                child.kill()
                child.wait()
    return results, cpu, time.monotonic() - start_at, caught


def run_client_row(spec: ClientSpec, seconds: float, frames: tuple[str, str]) -> ClientRow:
    """Start a fresh gateway, run the loops, and collect what they and the gateway saw."""
    profile = load_catalogue(time_scale=spec.time_scale).get(spec.model)
    assert profile is not None
    chunks = max(3, round(seconds / profile.covers_seconds))
    actions = chunks * profile.action_horizon
    with fleet_gateway(spec.time_scale, spec.workers) as gateway:
        lower_priority(gateway.pid)
        pid = gateway.pid or 0
        if spec.processes:
            # Sampled at the common start; the children measure their own CPU from there.
            marks: list[Any] = []
            results, client_s, wall, caught = run_in_processes(
                spec, gateway.base_url, actions,
                lambda: marks.extend([cpu_seconds(pid), machine_busy()]))
            gw0, busy0 = marks
        else:
            start_at = time.monotonic() + 0.2
            gw0, busy0, own0 = cpu_seconds(pid), machine_busy(), cpu_seconds()
            results, caught = run_fleet(gateway.base_url, KEY, spec.model,
                                        list(range(spec.loops)), actions, frames, start_at)
            wall = time.monotonic() - start_at
            client_s = cpu_seconds() - own0
        gw1, busy1 = cpu_seconds(pid), machine_busy()
        stats = gateway.stats()
    return ClientRow(spec, profile, wall, results, client_s / wall, (gw1 - gw0) / wall,
                     (busy1[0] - busy0[0]) / max(1.0, busy1[1] - busy0[1]), stats, caught)


# -- namespaced nodes ---------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeSpec:
    """One node row: how many namespaces, and what the simulated arms are told."""

    count: int
    sim_args: tuple[str, ...] = ()
    label: str = ''


def node_specs(args: argparse.Namespace) -> list[NodeSpec]:
    """Return the node rows: the sweep, then the largest again with half the joint-state rate."""
    specs = [NodeSpec(k) for k in args.nodes]
    if not args.quick:
        specs.append(NodeSpec(max(args.nodes), ('-p', 'joint_state_rate_hz:=50.0'),
                              'joint states 50 Hz'))
    return specs


def run_node_rows(specs: list[NodeSpec], seconds: float) -> list[NodeRun]:
    """One row per spec: a fresh gateway, K sims and K nodes, one episode each, all at once."""
    domain = random_domain_id()
    profile = load_catalogue(time_scale=NODE_SCALE).get(MODEL)
    assert profile is not None
    actions = round(seconds * profile.control_hz)
    rows = []
    for spec in specs:
        count = spec.count
        print(f'nodes: {count} policy nodes + {count} sim arms {spec.label}, {actions} actions '
              'each ...', flush=True)
        with fleet_gateway(NODE_SCALE, DEFAULT_WORKERS, plugin=False) as gateway:
            lower_priority(gateway.pid)
            watcher = Watcher(domain)
            fleet = NodeFleet(count, model=MODEL, gateway=gateway, api_key=KEY,
                              domain_id=domain, time_scale=NODE_SCALE, actions=actions,
                              watcher=watcher, sim_args=spec.sim_args)
            try:
                fleet.start()
                row = fleet.run(seconds, IDLE_S)
                row.label = spec.label
                if row.failure:
                    print(f'  FAILED: {row.failure}\n{fleet.log_tails()}', flush=True)
            finally:
                fleet.close()
                watcher.close()
        rows.append(row)
        print(f'  {node_line(row)}', flush=True)
    return rows


# -- the report -----------------------------------------------------------------------------

def pct(value: float) -> str:
    """Format a 0..1 share as a percentage."""
    return f'{100 * value:.1f}%'


def pair(a: float | None, b: float | None, digits: int = 2) -> str:
    """Format two numbers as `a / b`."""
    def one(v: float | None) -> str:
        return '-' if v is None or v != v else f'{v:.{digits}f}'
    return f'{one(a)} / {one(b)}'


def lost(row: ClientRow) -> int:
    """Count requests with no fate, and answered chunks skipped without being reported."""
    unplayed = sum(r.unplayed for r in row.results)
    return sum(r.lost for r in row.results) + max(0, unplayed - int(row.total('stale_chunks')))


def break_kinds(row: ClientRow) -> str:
    """Name the kinds of break seen, if any."""
    kinds: dict[str, int] = {}
    for result in row.results:
        for name, value in result.check.items():
            if value:
                kinds[name] = kinds.get(name, 0) + int(value)
    return ', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))


def client_line(row: ClientRow) -> str:
    """One progress line."""
    moving = row.moving
    rt = row.round_trips
    return (f'{row.spec.model} N={row.spec.loops} {row.spec.how} x{row.spec.time_scale:g} '
            f'workers {row.spec.workers}: moving {100 * sum(moving) / len(moving):.1f}% '
            f'(min {100 * min(moving):.1f}%) underruns {row.total("underruns"):.0f} breaks '
            f'{sum(r.breaks for r in row.results)} stale {row.total("stale_chunks"):.0f} lost '
            f'{lost(row)} rt p99 {row.model_s(rt, 0.99):.2f} model s, client CPU '
            f'{pct(row.client_cpu)} gateway CPU {pct(row.gateway_cpu)} '
            f'{row.requests / row.window_s:.1f} req/s [{row.window_s:.1f} s]')


def client_tables(rows: list[ClientRow]) -> tuple[str, str]:
    """Return the loops' table and the cost table."""
    seen = ['| model | loops | run as | gateway workers | time scale | req/s needed / served | '
            'moving % mean (min) | underruns (s) | sequence breaks | skipped chunks (reported '
            'stale) | lost / failed | round trip p50 / p99 | of which not inference p50 / p99 '
            '| most queued |',
            '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    cost = ['| model | loops | run as | time scale | served req/s | client CPU (per loop) | '
            'gateway CPU | gateway CPU per request (ms) | machine busy (others) | connections '
            '| requests |',
            '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for row in rows:
        spec, moving = row.spec, row.moving
        served = row.requests / row.window_s
        rt, path = row.round_trips, row.outside_inference
        breaks = sum(r.breaks for r in row.results)
        kinds = break_kinds(row)
        errors = [r.error for r in row.results if r.error]
        note = f' ({len(errors)} loops raised)' if errors else ''
        seen.append(
            f'| {spec.model} | {spec.loops} | {spec.how} | {spec.workers} | '
            f'{spec.time_scale:g} | {row.demanded_per_s:.1f} / {served:.1f} | '
            f'{100 * sum(moving) / len(moving):.1f} ({100 * min(moving):.1f}){note} | '
            f'{row.total("underruns"):.0f} ({row.total("underrun_s") / spec.time_scale:.1f}) | '
            f'{breaks}{f" ({kinds})" if breaks else ""} | {row.total("stale_chunks"):.0f} | '
            f'{lost(row)} / {sum(r.failed for r in row.results)} | '
            f'{pair(row.model_s(rt, 0.5), row.model_s(rt, 0.99))} | '
            f'{pair(row.model_s(path, 0.5), row.model_s(path, 0.99))} | {row.max_queued} |')
        per_request = 1000.0 * row.gateway_cpu * row.window_s / max(1, row.requests)
        cost.append(
            f'| {spec.model} | {spec.loops} | {spec.how} | {spec.time_scale:g} | {served:.1f} | '
            f'{pct(row.client_cpu)} ({pct(row.client_cpu / spec.loops)}) | '
            f'{pct(row.gateway_cpu)} | {per_request:.1f} | {pct(row.machine_busy)} '
            f'({pct(others(row.machine_busy, row.client_cpu + row.gateway_cpu))}) | '
            f'{row.stats.get("connections", 0)} | {row.requests} |')
    return '\n'.join(seen), '\n'.join(cost)


def node_values(row: NodeRun, role: str) -> list[float]:
    """CPU shares of every process of one role over the running window."""
    return [s.cpu[role] for s in row.spaces if role in s.cpu]


def main_thread(row: NodeRun, role: str) -> list[float]:
    """CPU shares of the main (rclpy executor) thread of every process of one role."""
    return [s.main_thread[role] for s in row.spaces if role in s.main_thread]


def node_line(row: NodeRun) -> str:
    """One progress line."""
    outcomes = [s.outcome or {} for s in row.spaces]
    nodes = node_values(row, 'policy_node')
    sims = node_values(row, 'sim_arm')
    done = sum(o.get('outcome') == 'completed' for o in outcomes)
    underruns = sum(int(o.get('underruns') or 0) for o in outcomes)
    return (f'{row.count} nodes: completed {done}/{row.count} underruns {underruns} '
            f'node CPU {pct(sum(nodes) / max(1, len(nodes)))} sim CPU '
            f'{pct(sum(sims) / max(1, len(sims)))} machine {pct(row.machine_busy)}'
            + (f' FAILED {row.failure.splitlines()[0]}' if row.failure else ''))


def node_table(rows: list[NodeRun]) -> str:
    """Return the namespaced nodes' table."""
    lines = ['| policy nodes (+ sim arms) | episodes completed | moving % mean (min) | '
             'underruns | holds | skipped chunks (stale) | node-seen latency p50 / p99 (s) | '
             'server inference p50 / p99 (s) | CPU per node: idle / running mean (max) '
             '[main thread] | CPU per sim arm [main thread] | gateway CPU | machine busy '
             '(others) | req/s |',
             '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for row in rows:
        outcomes = [s.outcome or {} for s in row.spaces]
        moving = [float(o.get('moving_fraction') or 0.0) for o in outcomes]
        latency = [float(c['latency_s']) for s in row.spaces for c in s.chunks
                   if c.get('latency_s') is not None]
        server = [float(c['server_inference_ms']) / 1000.0 for s in row.spaces for c in s.chunks
                  if c.get('server_inference_ms') is not None]
        nodes, sims = node_values(row, 'policy_node'), node_values(row, 'sim_arm')
        done = sum(o.get('outcome') == 'completed' for o in outcomes)
        failure = f' ({row.failure.splitlines()[0][:80]})' if row.failure else ''
        label = f' ({row.label})' if row.label else ''
        lines.append(
            f'| {row.count}{label} | {done}/{row.count}{failure} | '
            f'{100 * sum(moving) / len(moving):.1f} ({100 * min(moving):.1f}) | '
            f'{sum(int(o.get("underruns") or 0) for o in outcomes)} | '
            f'{sum(int(o.get("holds") or 0) for o in outcomes)} | '
            f'{sum(int(o.get("stale_chunks") or 0) for o in outcomes)} | '
            f'{pair(quantile(latency, 0.5), quantile(latency, 0.99))} | '
            f'{pair(quantile(server, 0.5), quantile(server, 0.99))} | '
            f'{pct(row.idle_cpu.get("policy_node", 0.0))} / '
            f'{pct(mean(nodes))} ({pct(max(nodes, default=0.0))}) '
            f'[{pct(mean(main_thread(row, "policy_node")))}] | {pct(mean(sims))} '
            f'[{pct(mean(main_thread(row, "sim_arm")))}] | {pct(row.gateway_cpu)} | '
            f'{pct(row.machine_busy)} ({pct(others(row.machine_busy, own_cpu(row)))}) | '
            f'{row.requests_per_s:.1f} |')
    return '\n'.join(lines)


def own_cpu(row: NodeRun) -> float:
    """Return the CPU (1.0 = one core) of every process of a node row, this one included."""
    return (sum(node_values(row, 'policy_node')) + sum(node_values(row, 'sim_arm'))
            + row.gateway_cpu + row.bench_cpu)


def others(busy: float, ours: float) -> float:
    """Return the share of all cores that processes other than the bench's kept busy."""
    return max(0.0, busy - ours / (os.cpu_count() or 1))


def mean(values: list[float]) -> float:
    """Return the arithmetic average, or nan when empty."""
    return sum(values) / len(values) if values else float('nan')


def findings(clients: list[ClientRow], nodes: list[NodeRun]) -> list[str]:
    """Where scaling stops and why, in numbers from this run."""
    out = []
    base = [r for r in clients if r.spec.model == MODEL and r.spec.workers == DEFAULT_WORKERS
            and not r.spec.processes]
    if base:
        top = max(base, key=lambda r: r.spec.loops)
        chunk_model_s = top.profile.action_horizon / top.profile.native_hz
        latency = mean([x / r.spec.time_scale for r in base for x in r.inference])
        n_star = DEFAULT_WORKERS * chunk_model_s / latency
        intro = (
            f"- **First limit: the gateway's workers.** The local gateway runs at most "
            f'{DEFAULT_WORKERS} inferences per model at once (`--concurrency`, default) and '
            f'queues the rest in FIFO order, as the hosted gateway queues. With a mean '
            f'inference of {latency:.2f} model s, {DEFAULT_WORKERS} workers serve '
            f'{DEFAULT_WORKERS / latency:.1f} requests per model second, and each {MODEL} loop '
            f'needs one per {chunk_model_s:.2f} s chunk: about {n_star:.0f} loops. ')
        if top.max_queued == 0:
            out.append(intro + f'Up to N = {top.spec.loops} nothing waited for a worker.')
        else:
            calm = [r.spec.loops for r in base if r.max_queued == 0]
            out.append(
                intro + f'At N = {top.spec.loops} the loops needed {top.demanded_per_s:.1f} '
                f'req/s (wall) and got {top.requests / top.window_s:.1f}; up to '
                f'{top.max_queued} requests waited for a worker, the round trip p99 grew to '
                f'{top.model_s(top.round_trips, 0.99):.2f} model s, and the arms moved '
                f'{100 * mean(top.moving):.1f}% of the time ({top.total("underruns"):.0f} '
                'underruns)'
                + (f'; at N <= {max(calm)} nothing queued' if calm else '')
                + '. A capacity limit of the model server, not of the client or the host'
                + (f': with {MORE_WORKERS} workers the same loops keep moving (next rows).'
                   if any(r.spec.workers == MORE_WORKERS for r in clients) else '.'))
    more = [r for r in clients if r.spec.model == MODEL and r.spec.workers == MORE_WORKERS]
    if more:
        busiest = max(more, key=lambda r: r.gateway_cpu)
        per_request = [1000.0 * r.gateway_cpu * r.window_s / max(1, r.requests) for r in more]
        ms = sorted(per_request)[len(per_request) // 2]
        ceiling = 1000.0 / ms
        path_p99 = busiest.outside_inference
        text = (
            f"- **Next limit: the gateway's one process.** Past the worker limit, the gateway "
            f'process spends {ms:.1f} ms of CPU per request (median over the '
            f'{MORE_WORKERS}-worker rows: HTTP parsing in uvicorn/h11, JSON, two JPEG decodes, '
            "and the reference policy's planning, which holds the GIL). One process uses at "
            f'most one core, so it tops out near {ceiling:.0f} requests per wall second on this '
            f'CPU, i.e. about {ceiling:.0f} real-time {MODEL} loops (one request per second '
            f'each). The busiest row (time scale {busiest.spec.time_scale:g}, '
            f'{busiest.demanded_per_s:.0f} req/s needed, '
            f'{busiest.requests / busiest.window_s:.0f} served) had the gateway at '
            f'{pct(busiest.gateway_cpu)} of a core and the machine {pct(busiest.machine_busy)} '
            'busy')
        if busiest.gateway_cpu < 0.7:
            text += '; this run did not come near the ceiling.'
        else:
            text += (f'; the time a request spent outside inference rose to p99 '
                     f'{busiest.model_s(path_p99, 0.99):.2f} model s, and the arms moved '
                     f'{100 * mean(busiest.moving):.1f}% (min {100 * min(busiest.moving):.1f}%).')
        out.append(text)
    threads = {(r.spec.time_scale, r.spec.loops): r for r in more if not r.spec.processes}
    for row in (r for r in more if r.spec.processes):
        twin = threads.get((row.spec.time_scale, row.spec.loops))
        if twin is None:
            continue
        per_process = row.client_cpu / row.spec.processes
        out.append(
            f'- **Client loops: threads or processes** (N = {row.spec.loops}, time scale '
            f'{row.spec.time_scale:g}): {twin.spec.loops} threads in one process used '
            f'{pct(twin.client_cpu)} of a core ({pct(twin.client_cpu / twin.spec.loops)} per '
            f'loop) and moved {100 * mean(twin.moving):.1f}% (p99 round trip '
            f'{twin.model_s(twin.round_trips, 0.99):.2f} model s) while the gateway got '
            f'{pct(twin.gateway_cpu)} of a core; {row.spec.how} used {pct(row.client_cpu)} in '
            f'all and moved {100 * mean(row.moving):.1f}% (p99 '
            f'{row.model_s(row.round_trips, 0.99):.2f} model s) while the gateway got '
            f'{pct(row.gateway_cpu)}. '
            + ('Neither came near a full core, so the GIL does not limit the loops; where the '
               'two differ, the moving share follows the CPU the gateway got on the shared '
               'machine.' if max(twin.client_cpu, per_process) < 0.6 else
               "The loops' one process is near a full core: there the GIL limits, and "
               'processes help.'))
    breaks = sum(r.breaks for row in clients for r in row.results)
    if clients:
        out.append(
            f'- **Order.** {breaks} sequence breaks over '
            f'{sum(len(r.results) for r in clients)} loop runs and '
            f'{sum(r.requests for r in clients)} requests, at every N; '
            f'{sum(lost(r) for r in clients)} lost. Chunks skipped under overload were all '
            'reported by the engine as stale (an older answer that arrived after a newer one '
            'had to be played to keep the arm moving), never played out of order.')
    if nodes:
        out.append(node_findings(nodes))
    return out


def node_findings(nodes: list[NodeRun]) -> str:
    """Say what one namespace costs, where the host saturates, and what the joint rate does."""
    sweep = [r for r in nodes if not r.label] or nodes
    # Per-namespace cost from the largest row the host could still serve in full: a saturated
    # row shows what each process got, not what it wanted.
    calm = max([r for r in sweep if r.machine_busy < 0.9] or sweep[:1], key=lambda r: r.count)
    node_cpu = mean(node_values(calm, 'policy_node'))
    sim_cpu = mean(node_values(calm, 'sim_arm'))
    cores = os.cpu_count() or 1
    text = (
        f'- **Namespaced nodes.** With {calm.count} namespace{"s" if calm.count > 1 else ""} '
        'each policy node used '
        f'{pct(node_cpu)} of a core while running, '
        f'{pct(mean(main_thread(calm, "policy_node")))} of it in its main thread (the rclpy '
        'executor and every callback; DDS and the request workers share the rest), and '
        f'{pct(calm.idle_cpu.get("policy_node", 0.0))} configured but idle: the subscriptions '
        'alone (joint states at 100 Hz, two raw camera topics at 15 Hz) cost most of it, the '
        'control tick, the engine and the requests little. Each simulated arm used '
        f'{pct(sim_cpu)} ({pct(mean(main_thread(calm, "sim_arm")))} main thread). One namespace '
        f'costs {pct(node_cpu + sim_cpu)}, so {cores} cores hold about '
        f'{cores / (node_cpu + sim_cpu):.0f} with nothing else running; the gateway is no '
        f'factor ({pct(calm.gateway_cpu)} at {calm.requests_per_s:.1f} req/s).')
    if calm.machine_busy >= 0.9:
        text += (f' (Other work kept the machine {pct(calm.machine_busy)} busy even then, so '
                 'these shares are what each process got, less than it would take alone.)')
    top = max(sweep, key=lambda r: r.count)
    if top is not calm:
        text += (f' At {top.count} namespaces the machine was {pct(top.machine_busy)} busy and '
                 f'the arms moved {100 * mean(node_moving(top)):.1f}% '
                 f'(min {100 * min(node_moving(top)):.1f}%) with '
                 f'{sum(int((s.outcome or {}).get("underruns") or 0) for s in top.spaces)} '
                 "underruns: the host's CPU, spent in rclpy callbacks, is where it stops.")
        latency = [float(c['latency_s']) for s in top.spaces for c in s.chunks
                   if c.get('latency_s') is not None]
        server = [float(c['server_inference_ms']) / 1000.0 for s in top.spaces
                  for c in s.chunks if c.get('server_inference_ms') is not None]
        if latency and server and quantile(latency, 0.5) > 1.5 * quantile(server, 0.5):
            text += (f' There, a chunk took {quantile(latency, 0.5):.2f} s (median) from '
                     f'capture to the node against {quantile(server, 0.5):.2f} s of server '
                     f'inference: the request threads, and the gateway at nice {GATEWAY_NICE} '
                     'on the same cores, waited for CPU (a remote gateway would not be '
                     "starved, the nodes' own threads would).")
    for half in (r for r in nodes if r.label):
        text += (f' With the arms publishing joint states at 50 Hz ({half.count} namespaces) a '
                 f'node used {pct(mean(node_values(half, "policy_node")))} and an arm '
                 f'{pct(mean(node_values(half, "sim_arm")))}, the machine was '
                 f'{pct(half.machine_busy)} busy and the arms moved '
                 f'{100 * mean(node_moving(half)):.1f}%: the per-message cost at the '
                 'joint-state rate is the largest share, and the first thing to lower.')
    return text


def node_moving(row: NodeRun) -> list[float]:
    """Each node's moving fraction from its episode outcome."""
    return [float((s.outcome or {}).get('moving_fraction') or 0.0) for s in row.spaces]


# -- main -----------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Build the command line."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='a smoke run: fewer rows, shorter runs (about 2 minutes)')
    parser.add_argument('--clients', type=int, nargs='+', default=None,
                        help='client loop counts at the gateway defaults (default 1 8 16 32; '
                        '--quick 1 8)')
    parser.add_argument('--nodes', type=int, nargs='+', default=None,
                        help='namespaced node counts (default 1 4 8 12; --quick 1 2)')
    parser.add_argument('--seconds', type=float, default=None,
                        help=f'wall seconds of motion per client-loop row (default '
                        f'{DEFAULT_SECONDS:g}; --quick {QUICK_SECONDS:g})')
    parser.add_argument('--node-seconds', type=float, default=None,
                        help=f'wall seconds per node episode (default {DEFAULT_NODE_SECONDS:g}; '
                        f'--quick {QUICK_NODE_SECONDS:g})')
    skip = parser.add_mutually_exclusive_group()
    skip.add_argument('--no-clients', action='store_true', help='only the nodes')
    skip.add_argument('--no-nodes', action='store_true', help='only the client loops')
    parser.add_argument('--out', type=Path, default=OUT,
                        help='markdown file (default %(default)s)')
    args = parser.parse_args(argv)
    if args.clients is None:
        args.clients = [1, 8] if args.quick else [1, 8, 16, 32]
    if args.nodes is None:
        args.nodes = [1, 2] if args.quick else [1, 4, 8, 12]
    if args.seconds is None:
        args.seconds = QUICK_SECONDS if args.quick else DEFAULT_SECONDS
    if args.node_seconds is None:
        args.node_seconds = QUICK_NODE_SECONDS if args.quick else DEFAULT_NODE_SECONDS
    return args


def definitions(args: argparse.Namespace) -> str:
    """Say what every column means."""
    return (
        "**Client loops**: each loop is `Policy.run(join='append')` (prefetch, at most two "
        'requests in flight) on its own Policy (its own connections), acting on a synthetic '
        'observation (one rendered scene, two 224x224 JPEG q92 frames); all loops start '
        'together and each plays '
        f'{args.seconds:g} wall s of chunks. A fresh gateway per row (warm, nice '
        f'{GATEWAY_NICE}, key auth) serves a plug-in that runs the reference policy and '
        'stamps each action with (loop, request, step). Latencies are in model seconds (wall '
        '/ time scale) so rows at different scales compare. **req/s needed** = loops / chunk '
        '(wall), what append mode asks to keep every arm moving. **moving %** = RunOutcome.'
        'moving_fraction, mean (min) over loops. **sequence breaks**, read from the stamps of '
        'what each loop executed: an action of another loop, a chunk older than one already '
        'played, a step repeated or skipped inside a chunk, a chunk left before its last step '
        'or entered after its first. **skipped chunks**: answered, never played, reported by '
        'RunOutcome.stale_chunks. **lost**: sent and neither answered nor failed, or skipped '
        'without being reported. **round trip**: the HTTP call as the loop timed it; **not '
        "inference**: the round trip less the server's own `perf.inference_ms` (queueing for "
        'a worker, HTTP, JSON, CPU contention); the stats endpoint carries no latency, so the '
        "server-side figure is the one each answer reports. **most queued**: the stats' "
        '`max_queued`. **client CPU**: CPU time of the process(es) running the loops / wall '
        '(100% = one core), **gateway CPU** likewise for the gateway process, **machine busy**: '
        'all cores from /proc/stat, and in brackets the share of processes other than the '
        "bench's (other users of this machine). **connections**: "
        'distinct client ports the gateway saw.\n\n'
        f'**Nodes**: K namespaces `/fleet_k<K>_<i>`, each a `sim_arm` (joint states 100 Hz, two '
        "raw 320x240 camera frames at 15 Hz) and a `policy_node` (the model's own "
        'config file, as the demo starts it) as separate processes on one private ROS domain, '
        f'against one gateway (reference policy, time scale {NODE_SCALE:g}: real time, 15 Hz '
        f'control, ~0.78 s latency). Each node runs one episode of {args.node_seconds:g} s; '
        'all are activated together. **CPU per node, idle**: configured but not active over '
        f'{IDLE_S:g} s (subscriptions and diagnostics only); **running**: over the window '
        "when every episode was running. Underruns, holds and stale chunks are the nodes' own "
        '`~/episode_outcome`; latencies are from their `~/chunks` events.')


def main(argv: list[str] | None = None) -> int:
    """Run the rows, print the markdown and write it to --out."""
    args = parse_args(argv)
    began = time.monotonic()
    clients: list[ClientRow] = []
    nodes: list[NodeRun] = []
    try:
        if not args.no_clients:
            frames = synthetic_frames()
            for spec in client_specs(args):
                row = run_client_row(spec, args.seconds, frames)
                clients.append(row)
                print(client_line(row), flush=True)
        if not args.no_nodes:
            nodes = run_node_rows(node_specs(args), args.node_seconds)
    except KeyboardInterrupt:
        print('interrupted: every process this bench started has been stopped')
        return 130
    runtime = time.monotonic() - began
    command = ' '.join(['.venv/bin/python', 'bench/bench_fleet.py',
                        *(sys.argv[1:] if argv is None else argv)])
    parts = [
        f'Command: `{command}`  \nMachine: {machine()}  \nCode: {provenance()}  \n'
        f'Runtime: {runtime / 60:.1f} min. The machine is shared: other processes ran during '
        'the rows, so CPU shares and tail latencies carry their noise ("machine busy" shows '
        'it).',
        definitions(args),
    ]
    if clients:
        seen, cost = client_tables(clients)
        warned = sorted({w.split(':')[0] for r in clients for w in r.warnings})
        parts += ['### Client loops against one gateway\n\n' + seen,
                  '### What it cost\n\n' + cost]
        if warned:
            parts.append('Engine warnings raised (recorded, not printed): '
                         + '; '.join(f'`{w}`' for w in warned) + '.')
    if nodes:
        parts.append('### Namespaced policy nodes, each with its own simulated arm\n\n'
                     + node_table(nodes))
    found = findings(clients, nodes)
    if found:
        parts.append('### Where it stops scaling, and why\n\n' + '\n'.join(found))
    body = '\n\n'.join(parts) + '\n'
    print('\n' + body)
    args.out.write_text('## Fleet\n\n' + body)
    print(f'wrote {args.out}')
    failed = [r for r in nodes if r.failure]
    broken = sum(r.breaks for row in clients for r in row.results)
    return 1 if failed or broken or sum(lost(row) for row in clients) else 0


if __name__ == '__main__':
    sys.exit(main())
