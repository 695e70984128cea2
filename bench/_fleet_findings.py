"""The fleet bench's findings: where scaling stops and why, in numbers from the run."""

import os

from sequence_ai_ros.client import quantile

from ._fleet_nodes import NodeRun
from ._fleet_rows import (
    ClientRow,
    DEFAULT_WORKERS,
    lost,
    main_thread,
    mean,
    MODEL,
    MORE_WORKERS,
    node_moving,
    node_values,
    pct,
)
from ._record import GATEWAY_NICE


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
