"""
Numbers, table, targets and the RESULTS.md section of the chunk-engine bench.

Every loop is measured by the same code from its Trace (act() and observe() times on one
clock), so the published client, the naive loop and ours are compared on one definition.
Durations are reported in model seconds (wall seconds / time scale), so they read against the
catalogue's figures whatever the scale.
"""

from dataclasses import dataclass

import numpy as np
from sequence_ai_ros.client import quantile
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.latency import LatencySampler

from ._engine_loops import BLEND_TEXT, RunRecord
from ._engine_sim import SimRun
from ._engine_world import ABSOLUTE_SPACES, STALL_PERIODS

SECTION = '## Chunk engine vs the published client'
OURS = ('append', 'aligned', 'blended')
# Target 3's loops (time-aligned joins) and how its verdict lines name them.
SEAM_LOOPS = {'aligned': 'aligned',
              'blended': f'blended (aligned + {BLEND_TEXT})'}
JOIN_LOOPS = (*SEAM_LOOPS, 'rtc')  # whose joins the comparisons list
JOIN_KINDS = ('started', 'appended', 'aligned', 'delayed', 'rtc', 'nearest', 'past')


@dataclass
class Row:
    """One run's numbers (model seconds)."""

    profile: str
    scenario: str
    loop: str
    actions: int
    moving: float
    underruns: int
    underrun_s: float
    seam: float | None  # rad on absolute spaces, rad/s (commanded velocity) on the others
    absolute: bool
    within: float  # the same measure between two actions of one chunk: the model's own motion
    age_p50: float | None
    age_max: float | None
    requests: int
    requests_per_s: float
    requests_per_arm_s: float
    elapsed_s: float
    step_fraction: float | None = None
    own_moving: float | None = None
    # Stall time the act() timestamps show beyond the loop's own account: control ticks that
    # ran late although the loop had an action to give (model s).
    late_tick_s: float | None = None
    stale: int | None = None
    latency_p50: float | None = None
    latency_p99: float | None = None
    joins: str | None = None
    prefixes: int | None = None  # rtc: requests that carried a prefix
    prefix_error: float | None = None  # rtc: the largest departure of an answer from it
    fallback: bool = False


def measure(record: RunRecord, profile: ModelProfile, scenario: str, scale: float,
            step_at: float | None = None) -> Row:
    """Build the row for one run from its trace."""
    trace = record.trace
    period = trace.period_s
    stalls = trace.stalls()
    commanded = len(trace.acted) * period
    underrun = sum(stalls)
    elapsed = trace.acted[-1] + period - trace.observed[0]
    absolute = profile.action_space in ABSOLUTE_SPACES
    row = Row(
        profile=profile.name, scenario=scenario, loop=record.loop, actions=len(trace.acted),
        moving=commanded / (commanded + underrun), underruns=len(stalls),
        underrun_s=underrun / scale,
        seam=max(trace.seams, default=0.0), absolute=absolute,
        within=trace.meter.within if trace.meter is not None else 0.0,
        age_p50=_scaled(quantile(trace.ages, 0.5), scale),
        age_max=_scaled(max(trace.ages, default=None), scale),
        requests=len(trace.observed), requests_per_s=len(trace.observed) / elapsed * scale,
        requests_per_arm_s=len(trace.observed) / commanded * scale, elapsed_s=elapsed)
    if step_at is not None:
        row.step_fraction = sum(t < step_at for t in trace.acted) / len(trace.acted)
    if record.own_underrun_s is not None:
        row.own_moving = commanded / (commanded + record.own_underrun_s)
        row.late_tick_s = max(0.0, underrun - record.own_underrun_s) / scale
    latencies = record.latencies
    out = record.outcome
    joins = out.joins if out is not None else None
    if joins:
        row.joins = ', '.join(f'{how} {joins[how]}' for how in JOIN_KINDS if joins.get(how))
        delay = out.max_join_delay_s
        if delay > 0:
            row.joins += f' (delay up to {delay / scale:.2f}s)'
    if out is not None:
        row.stale = out.stale_chunks
        if record.loop == 'rtc':
            row.prefixes, row.prefix_error = out.prefixes_sent, out.max_prefix_error
            row.fallback = out.rtc_fallback
        row.latency_p50 = _scaled(out.latency_p50_s, scale)
        row.latency_p99 = _scaled(out.latency_p99_s, scale)
    elif latencies:
        row.latency_p50 = _scaled(quantile(latencies, 0.5), scale)
        row.latency_p99 = _scaled(quantile(latencies, 0.99), scale)
    return row


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value / scale


def scenario_p99(profile: ModelProfile, scenario: str, draws: int = 100_000) -> float:
    """
    p99 of the gateway's latency distribution for a profile (model s), by sampling it.

    `step` is pooled half before and half after the step, as in a run whose middle it hits.
    """
    now = [0.0]
    sampler = LatencySampler(scenario, 1.0, step_after_s=1.0, seed=1, clock=lambda: now[0])
    samples = []
    for i in range(draws):
        now[0] = 2.0 if i >= draws // 2 else 0.0
        samples.append(sampler.sample(profile))
    return float(np.quantile(samples, 0.99))


# -- the table --------------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f'{100 * value:.1f}%'


def _num(value: float | None, digits: int = 2) -> str:
    return '-' if value is None else f'{value:.{digits}f}'


def table(rows: list[Row]) -> str:
    """Render the markdown table of every run."""
    lines = ['| profile | scenario | loop | moving | underruns | underrun s | moving, own '
             'account | late-tick s | max seam (rad; rad/s) | obs age p50 / max (s) | req/s '
             '| req per arm-s |',
             '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in rows:
        own = '-' if r.own_moving is None else _pct(r.own_moving)
        lines.append(
            f'| {r.profile} | {r.scenario} | {r.loop} | {_pct(r.moving)} | {r.underruns} '
            f'| {r.underrun_s:.2f} | {own} | {_num(r.late_tick_s)} | {_num(r.seam, 3)} '
            f'| {_num(r.age_p50)} / {_num(r.age_max)} | {r.requests_per_s:.2f} '
            f'| {r.requests_per_arm_s:.2f} |')
    return '\n'.join(lines)


def comparisons(rows: list[Row], chunk_s: dict[str, float]) -> list[str]:
    """One line per profile and scenario: the ratios measured in this run."""
    lines = []
    for (profile, scenario), group in _groups(rows).items():
        parts = [f'{loop} {_pct(group[loop].moving)}' for loop in group]
        line = f'- {profile} / {scenario}: moving ' + ', '.join(parts)
        pub, app = group.get('published'), group.get('append')
        if pub and app:
            line += f'; append/published moving x{app.moving / pub.moving:.2f}'
            line += (f', requests per arm-s append {app.requests_per_arm_s:.2f} vs published '
                     f'{pub.requests_per_arm_s:.2f}')
        for loop in (*SEAM_LOOPS, 'rtc'):
            ours = group.get(loop)
            if pub and ours and ours.seam is not None and pub.seam:
                line += f'; seam {loop}/published {ours.seam / pub.seam:.2f}'
        rtc = group.get('rtc')
        if rtc and rtc.seam is not None:
            line += (f'; rtc seam / largest step within its chunks {_num(rtc.seam, 3)} / '
                     f'{_num(rtc.within, 3)}')
        if rtc and rtc.prefixes is not None:
            error = '-' if rtc.prefix_error is None else f'{rtc.prefix_error:.4f}'
            line += (f'; rtc prefixes sent {rtc.prefixes}, largest departure {error} rad'
                     + (' (FELL BACK to aligned)' if rtc.fallback else ''))
        naive = group.get('naive')
        if naive and naive.latency_p50 is not None:
            expected = chunk_s[profile] / (chunk_s[profile] + naive.latency_p50)
            line += f'; naive expected C/(C+L50) {_pct(expected)}'
        stale = [f'{r.loop} {r.stale}' for r in group.values() if r.stale]
        if stale:
            line += f'; stale (dropped) chunks: {", ".join(stale)}'
        for loop in JOIN_LOOPS:
            ours = group.get(loop)
            if ours and ours.joins:
                line += f'; {loop} joins: {ours.joins}'
        seen = [r for r in group.values() if r.latency_p50 is not None]
        if seen:
            lat = ', '.join(f'{r.loop} {r.latency_p50:.2f}/{r.latency_p99:.2f}' for r in seen)
            line += f'; latency p50/p99 s: {lat}'
        steps = [r.step_fraction for r in group.values() if r.step_fraction is not None]
        if steps:
            line += (f'; step hit after {100 * min(steps):.0f}-{100 * max(steps):.0f}% of '
                     'the actions')
        lines.append(line)
    return lines


def _groups(rows: list[Row]) -> dict[tuple[str, str], dict[str, Row]]:
    groups: dict[tuple[str, str], dict[str, Row]] = {}
    for r in rows:
        groups.setdefault((r.profile, r.scenario), {})[r.loop] = r
    return groups


# -- the engine's targets ---------------------------------------------------------------------


def targets(rows: list[Row], chunk_s: dict[str, float],
            p99: dict[tuple[str, str], float]) -> list[str]:
    """Each of the engine's targets, MET or NOT MET, with the numbers behind it."""
    groups = _groups(rows)
    lines = []
    # 1. >= 99 % moving where p99 < chunk, and never below the published client.
    for join in OURS:
        fast_enough = [(k, g) for k, g in groups.items()
                       if join in g and p99[k] < chunk_s[k[0]]]
        misses = [f'{k[0]}/{k[1]} {_pct(g[join].moving)}{_own(g[join])}'
                  for k, g in fast_enough if g[join].moving < 0.99]
        lines.append(_verdict(
            not misses if fast_enough else None,
            f'{join}: >= 99% moving wherever p99 latency < chunk '
            f'({len(fast_enough)} profile/scenario pairs)', misses))
        compared = [(k, g) for k, g in groups.items() if join in g and 'published' in g]
        below = [f'{k[0]}/{k[1]} {_pct(g[join].moving)} < {_pct(g["published"].moving)} '
                 f'({100 * (g[join].moving - g["published"].moving):+.2f} pp'
                 f'{_late_share(g[join], g["published"])})'
                 for k, g in compared if g[join].moving < g['published'].moving]
        lines.append(_verdict(not below if compared else None,
                              f'{join}: never below the published client, act() timestamps '
                              f'({len(compared)} pairs)', below))
        # The same comparison on each loop's own account of the time it had nothing to give:
        # what is left when the late ticks of this shared machine are taken out.
        owned = [(k, g) for k, g in compared
                 if g[join].own_moving is not None and g['published'].own_moving is not None]
        starved = [f'{k[0]}/{k[1]} {_pct(g[join].own_moving)} < '
                   f'{_pct(g["published"].own_moving)}'
                   for k, g in owned if g[join].own_moving < g['published'].own_moving]
        lines.append(_verdict(not starved if owned else None,
                              f'{join}: never below the published client, own account '
                              f'(starvation only, {len(owned)} pairs)', starved))
    # 2. lingbot-vla-v2-6b at ~0.79 s: >= 95 % moving, no more requests per arm-s.
    g = groups.get(('lingbot-vla-v2-6b', 'steady'), {})
    for join in OURS:
        if join in g and 'published' in g:
            ours, pub = g[join], g['published']
            ok = ours.moving >= 0.95 and \
                ours.requests_per_arm_s <= pub.requests_per_arm_s + 1e-9
            lines.append(_verdict(ok, (
                f'lingbot-vla-v2-6b steady: {join} {_pct(ours.moving)} moving{_own(ours)} '
                f'(target >= 95%; published {_pct(pub.moving)}), requests per arm-s '
                f'{ours.requests_per_arm_s:.2f} vs published {pub.requests_per_arm_s:.2f} '
                f'({ours.requests} vs {pub.requests} requests for {ours.actions} actions)'), []))
    # 3. time-aligned on absolute profiles: max seam at most half the published client's.
    for join, name in SEAM_LOOPS.items():
        lines.extend(_seam_target(groups, join, name, chunk_s, p99))
    return lines


def _seam_target(groups: dict[tuple[str, str], dict[str, Row]], join: str, name: str,
                 chunk_s: dict[str, float], p99: dict[tuple[str, str], float]) -> list[str]:
    """Target 3 for one loop: its max seam at most half the published client's."""
    pairs = [(k, g) for k, g in groups.items() if join in g and 'published' in g
             and g[join].seam is not None and g[join].absolute]
    if not pairs:
        return []

    def seam(k: tuple[str, str], g: dict[str, Row]) -> str:
        # Where the scenario's p99 reaches the chunk, aligned appends whole chunks by
        # design (no join can be time-aligned then): say so next to the figure.
        why = ' (p99 >= C: appends)' if p99[k] >= chunk_s[k[0]] else ''
        return f'{k[0]}/{k[1]} {g[join].seam:.3f} vs {g["published"].seam:.3f}{why}'
    misses = [seam(k, g) for k, g in pairs if g[join].seam > 0.5 * g['published'].seam]
    detail = ', '.join(seam(k, g) for k, g in pairs)
    return [_verdict(not misses, f'{name}: max seam jump <= half the published '
                     f"client's on absolute profiles ({detail})", misses)]


def rtc_targets(rows: list[Row], chunk_s: dict[str, float],
                p99: dict[tuple[str, str], float]) -> list[str]:
    """Each RTC target for join='rtc', MET or NOT MET, and the pi05-droid figure."""
    groups = _groups(rows)
    fast = [(k, g) for k, g in groups.items() if 'rtc' in g and p99[k] < chunk_s[k[0]]]
    lines = []

    def seam(k: tuple[str, str], g: dict[str, Row], other: str) -> str:
        unit = 'rad' if g['rtc'].absolute else 'rad/s'
        return f'{k[0]}/{k[1]} {_num(g["rtc"].seam, 3)} vs {_num(g[other].seam, 3)} {unit}'
    compared = [(k, g) for k, g in fast if 'naive' in g]
    misses = [seam(k, g, 'naive') for k, g in compared if g['rtc'].seam > g['naive'].seam]
    lines.append(_verdict(
        not misses if compared else None,
        "rtc: max seam <= the refill-when-empty (naive) loop's wherever p99 latency < chunk "
        f'({len(compared)} pairs; joint jump on absolute spaces, commanded-velocity jump on '
        f'delta and velocity spaces: {", ".join(seam(k, g, "naive") for k, g in compared)})',
        misses))
    slow = [f'{k[0]}/{k[1]} {_pct(g["rtc"].moving)}{_own(g["rtc"])}' for k, g in fast
            if g['rtc'].moving < 0.99]
    lines.append(_verdict(not slow if fast else None, 'rtc: >= 99% moving wherever p99 '
                          f'latency < chunk ({len(fast)} pairs)', slow))
    owned = [f'{k[0]}/{k[1]} {_pct(g["rtc"].own_moving)}' for k, g in fast
             if g['rtc'].own_moving is not None and g['rtc'].own_moving < 0.99]
    lines.append(_verdict(not owned if fast else None, 'rtc: >= 99% moving wherever p99 '
                          f'latency < chunk, own account ({len(fast)} pairs)', owned))
    costly = [(k, g) for k, g in fast if 'aligned' in g]

    def cost(k: tuple[str, str], g: dict[str, Row]) -> str:
        return (f'{k[0]}/{k[1]} {g["rtc"].requests_per_arm_s:.2f} vs '
                f'{g["aligned"].requests_per_arm_s:.2f}')
    dearer = [cost(k, g) for k, g in costly
              if g['rtc'].requests_per_arm_s > g['aligned'].requests_per_arm_s + 1e-9]
    lines.append(_verdict(
        not dearer if costly else None, "rtc: requests per arm-s <= aligned's wherever p99 "
        f'latency < chunk ({len(costly)} pairs: {", ".join(cost(k, g) for k, g in costly)})',
        dearer))
    fell = [f'{k[0]}/{k[1]}' for k, g in groups.items() if 'rtc' in g and g['rtc'].fallback]
    lines.append(_verdict(not fell, 'rtc: the local gateway honoured every prefix (no '
                          'fallback to aligned)', fell))
    figure = []
    for (profile, scenario), g in groups.items():
        if profile == 'pi05-droid' and 'rtc' in g:
            others = ', '.join(f'{loop} {_num(g[loop].seam, 3)}' for loop in
                               ('naive', 'published', 'aligned', 'blended') if loop in g)
            where = 'p99 < C' if p99[(profile, scenario)] < chunk_s[profile] else \
                'p99 >= C: rtc appends'
            figure.append(f'{scenario} ({where}) rtc {_num(g["rtc"].seam, 3)} '
                          f'({_pct(g["rtc"].moving)} moving; {others})')
    if figure:
        lines.append('- **figure** pi05-droid (joint_velocity, where the seam blend does '
                     'nothing), max commanded-velocity jump at a join, rad/s: '
                     + '; '.join(figure))
    return lines


def _own(row: Row) -> str:
    return '' if row.own_moving is None else f' (own account {_pct(row.own_moving)})'


def _late_share(ours: Row, published: Row) -> str:
    """Say how much of a shortfall the late control ticks explain."""
    if ours.late_tick_s is None or published.late_tick_s is None:
        return ''
    return (f'; late ticks {ours.late_tick_s:.2f}s vs {published.late_tick_s:.2f}s, own account '
            f'{_pct(ours.own_moving or 0.0)} vs {_pct(published.own_moving or 0.0)}')


def _verdict(ok: bool | None, what: str, misses: list[str]) -> str:
    tail = f' -- missed: {"; ".join(misses)}' if misses else ''
    word = 'N/A (no such pair in this run)' if ok is None else 'MET' if ok else 'NOT MET'
    return f'- **{word}** {what}{tail}'


# -- the simulated clock ---------------------------------------------------------------------

SIM_LOOPS = ('published', 'append', 'aligned', 'blended', 'rtc')


def simulated_table(runs: dict[tuple[str, str, str], list[SimRun]]) -> str:
    """Render the simulated runs: mean (worst) moving, mean max seam, requests per arm-s."""
    lines = [f'| profile | scenario | moving: published model / {" / ".join(SIM_LOOPS[1:])}, '
             'mean (worst) | max seam (rad; rad/s), mean | req per arm-s |',
             '|---|---|---|---|---|']
    keys = sorted({(p, s) for p, s, _ in runs}, key=lambda k: list(runs).index((*k, SIM_LOOPS[0])))
    for profile, scenario in keys:
        group = [runs[(profile, scenario, loop)] for loop in SIM_LOOPS]
        moving = ' / '.join(f'{_pct(_mean([r.moving for r in g]))} '
                            f'({_pct(min(r.moving for r in g))})' for g in group)
        seams = [[r.seam for r in g if r.seam is not None] for g in group]
        seam = ' / '.join(f'{_mean(x):.3f}' for x in seams) if all(seams) else '-'
        requests = ' / '.join(f'{_mean([r.requests_per_arm_s for r in g]):.2f}' for g in group)
        lines.append(f'| {profile} | {scenario} | {moving} | {seam} | {requests} |')
    return '\n'.join(lines)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


# -- RESULTS.md -------------------------------------------------------------------------------


def definitions(scale: float, chunks: int, max_inflight: int,
                periods: tuple[float, float]) -> str:
    """How the columns are measured."""
    return (
        f"Every run executes the same number of actions per profile ({chunks} chunks' worth) "
        'and is measured by the same code from act()/observe() timestamps on one clock. '
        f'Durations and rates are in model seconds (wall / {scale:g}). '
        f'**moving** = commanded time / (commanded + underrun time); an **underrun** is a gap '
        f'between two act() calls longer than {STALL_PERIODS:g} control periods, counted as '
        'gap - 1 period. **max seam** = largest jump (gripper excluded) between the last action '
        'of one chunk and the first executed action of the next: on absolute profiles '
        '(cosmos3 joint_absolute, lingbot-vla joint_position) the joint jump in rad; on delta '
        'and velocity profiles (lingbot-va joint_delta, pi05 joint_velocity) the jump of the '
        'commanded joint velocity in rad/s of model time, where a join across an underrun '
        'goes through a stop (zero velocity: the arm holds in between). For blended, every '
        "step of the ramp counts (a blended action is none of the model's values: its jump "
        'from the action before is a seam, and so is the jump from the ramp into the chunk). '
        '**obs age** = '
        'execution time '
        "minus the capture time of the observation the action's chunk was computed from "
        '(blended: ramp steps, matched to no chunk, are left out). '
        "**moving, own account** = the same ratio from the loop's own underrun time (ours "
        'and the published client: RunOutcome.underrun_s; naive: its request time), which '
        'leaves out late control ticks (scheduling on this 2-core machine, where the gateway '
        'runs too) that the act() timestamps see; **late-tick s** = the underrun time the '
        "timestamps show beyond the loop's own account: ticks that came late although the loop "
        f'had an action to give. At this time scale a control period is '
        f'{1000 * periods[0]:.1f}-{1000 * periods[1]:.1f} ms of wall time, so a tick late by '
        'half of that counts; the targets below are judged both ways. '
        '**req/s** = requests (= observations sent) per second of run; **req per arm-s** = '
        'requests per second of commanded motion. Ours runs with '
        f'max_inflight={max_inflight}, smooth_seam=0, except **blended**: join=aligned, '
        "smooth_seam=half the chunk's steps (cosmos3 16, lingbot-vla 7), seam_blend='min_jerk' "
        '(a minimum-jerk ramp from the last action into each new chunk, never the first '
        "chunk), and **rtc**: join='rtc' with the same smooth_seam and seam_blend (each "
        "request carries the plan's next d actions; the reference policy keeps them and "
        'ramps from them into its own plan over smooth_seam steps under the soft mask; the '
        'engine blends only a fallback or an appended chunk); the '
        'published client with its defaults '
        '(prefetch on, one request in flight). All loops get validate=lambda a: True.')
