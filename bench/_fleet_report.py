"""The fleet bench's tables, progress lines and column definitions."""

import argparse

from sequence_ai_ros.client import quantile
from sequence_ai_ros.harness.report import table

from ._fleet_nodes import NodeRun
from ._fleet_rows import (
    break_kinds,
    ClientRow,
    IDLE_S,
    lost,
    main_thread,
    mean,
    NODE_SCALE,
    node_values,
    others,
    own_cpu,
    pair,
    pct,
)
from ._record import GATEWAY_NICE


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
    seen, cost = [], []
    for row in rows:
        spec, moving = row.spec, row.moving
        served = row.requests / row.window_s
        rt, path = row.round_trips, row.outside_inference
        breaks = sum(r.breaks for r in row.results)
        kinds = break_kinds(row)
        errors = [r.error for r in row.results if r.error]
        note = f' ({len(errors)} loops raised)' if errors else ''
        seen.append([
            spec.model, spec.loops, spec.how, spec.workers, f'{spec.time_scale:g}',
            f'{row.demanded_per_s:.1f} / {served:.1f}',
            f'{100 * sum(moving) / len(moving):.1f} ({100 * min(moving):.1f}){note}',
            f'{row.total("underruns"):.0f} ({row.total("underrun_s") / spec.time_scale:.1f})',
            f'{breaks}{f" ({kinds})" if breaks else ""}', f'{row.total("stale_chunks"):.0f}',
            f'{lost(row)} / {sum(r.failed for r in row.results)}',
            pair(row.model_s(rt, 0.5), row.model_s(rt, 0.99)),
            pair(row.model_s(path, 0.5), row.model_s(path, 0.99)), row.max_queued])
        per_request = 1000.0 * row.gateway_cpu * row.window_s / max(1, row.requests)
        cost.append([
            spec.model, spec.loops, spec.how, f'{spec.time_scale:g}', f'{served:.1f}',
            f'{pct(row.client_cpu)} ({pct(row.client_cpu / spec.loops)})',
            pct(row.gateway_cpu), f'{per_request:.1f}',
            f'{pct(row.machine_busy)} '
            f'({pct(others(row.machine_busy, row.client_cpu + row.gateway_cpu))})',
            row.stats.get('connections', 0), row.requests])
    return (table(['model', 'loops', 'run as', 'gateway workers', 'time scale',
                   'req/s needed / served', 'moving % mean (min)', 'underruns (s)',
                   'sequence breaks', 'skipped chunks (reported stale)', 'lost / failed',
                   'round trip p50 / p99', 'of which not inference p50 / p99', 'most queued'],
                  seen, 'lrlrrrrrrrrrrr'),
            table(['model', 'loops', 'run as', 'time scale', 'served req/s',
                   'client CPU (per loop)', 'gateway CPU', 'gateway CPU per request (ms)',
                   'machine busy (others)', 'connections', 'requests'], cost, 'lrlrrrrrrrr'))


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
    cells = []
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

        def total(name: str, outcomes: list = outcomes) -> int:
            return sum(int(o.get(name) or 0) for o in outcomes)

        cells.append([
            f'{row.count}{label}', f'{done}/{row.count}{failure}',
            f'{100 * sum(moving) / len(moving):.1f} ({100 * min(moving):.1f})',
            total('underruns'), total('holds'), total('stale_chunks'),
            pair(quantile(latency, 0.5), quantile(latency, 0.99)),
            pair(quantile(server, 0.5), quantile(server, 0.99)),
            f'{pct(row.idle_cpu.get("policy_node", 0.0))} / {pct(mean(nodes))} '
            f'({pct(max(nodes, default=0.0))}) [{pct(mean(main_thread(row, "policy_node")))}]',
            f'{pct(mean(sims))} [{pct(mean(main_thread(row, "sim_arm")))}]',
            pct(row.gateway_cpu),
            f'{pct(row.machine_busy)} ({pct(others(row.machine_busy, own_cpu(row)))})',
            f'{row.requests_per_s:.1f}'])
    return table(['policy nodes (+ sim arms)', 'episodes completed', 'moving % mean (min)',
                  'underruns', 'holds', 'skipped chunks (stale)',
                  'node-seen latency p50 / p99 (s)', 'server inference p50 / p99 (s)',
                  'CPU per node: idle / running mean (max) [main thread]',
                  'CPU per sim arm [main thread]', 'gateway CPU', 'machine busy (others)',
                  'req/s'], cells, 'r' * 13)


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
