"""
The fleet benchmark: many control loops, and namespaced policy nodes, on one gateway.

Run: .venv/bin/python -m bench.bench_fleet [--quick] [--clients 1 8 16 32] [--nodes 1 4 8 12]
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
from dataclasses import dataclass
import json
from pathlib import Path
import subprocess
import sys
import time
from typing import Any

from sequence_ai_ros.gateway.catalogue import load_catalogue
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.child_processes import random_domain_id
from sequence_ai_ros.harness.proc_stats import busy_share, cpu_seconds, machine_jiffies

from ._fleet_clients import LoopResult, run_fleet, synthetic_frames
from ._fleet_findings import findings
from ._fleet_nodes import NodeFleet, NodeRun, Watcher
from ._fleet_report import client_line, client_tables, definitions, node_line, node_table
from ._fleet_rows import (
    ClientRow,
    ClientSpec,
    DEFAULT_WORKERS,
    IDLE_S,
    LONG_MODEL,
    lost,
    MODEL,
    MORE_WORKERS,
    NODE_SCALE,
)
from ._record import command_line, header, lower_priority, REPO

KEY = 'seq_bench_fleet_key_000000000001'
CLIENT_SCALE = 0.5
DEFAULT_SECONDS, QUICK_SECONDS = 10.0, 4.0
DEFAULT_NODE_SECONDS, QUICK_NODE_SECONDS = 15.0, 8.0
PROCESS_SPLIT = 4
WORKER_START_S = 4.0  # child interpreters import and render before the common start
OUT = Path('/tmp/bench_fleet.md')


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
    if plugin:
        args += ['--policy', 'bench._fleet_policy:make_fleet_policy']
    return GatewayProcess(args, keys={KEY: 10 ** 9}, import_paths=[REPO])


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
        [sys.executable, '-m', 'bench._fleet_clients', '--base-url', base_url, '--key', KEY,
         '--model', spec.model, '--actions', str(actions), '--start-at', repr(start_at),
         '--clients', *[str(c) for c in ids[i:i + share]]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
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
                lambda: marks.extend([cpu_seconds(pid), machine_jiffies()]))
            gw0, busy0 = marks
        else:
            start_at = time.monotonic() + 0.2
            gw0, busy0, own0 = cpu_seconds(pid), machine_jiffies(), cpu_seconds()
            results, caught = run_fleet(gateway.base_url, KEY, spec.model,
                                        list(range(spec.loops)), actions, frames, start_at)
            wall = time.monotonic() - start_at
            client_s = cpu_seconds() - own0
        gw1, busy1 = cpu_seconds(pid), machine_jiffies()
        stats = gateway.stats()
    return ClientRow(spec, profile, wall, results, client_s / wall, (gw1 - gw0) / wall,
                     busy_share(busy0, busy1), stats, caught)


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
    command = command_line('bench.bench_fleet', argv)
    parts = [
        header(command, runtime) + ' The machine is shared: other processes ran during the '
        'rows, so CPU shares and tail latencies carry their noise ("machine busy" shows it).',
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
