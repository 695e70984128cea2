"""ChunkEngine properties with an injected clock and scripted latencies (no sleeping)."""

import random
import warnings

from engine_sim import make_chunk, simulate
import pytest
from sequence_ai_ros.client import (
    ActionChunk,
    blend_weight,
    ChunkEngine,
    LatencyWindow,
    PlaybackOptions,
    quantile,
)


def check_invariants(result, engine):
    """Check what must hold for any run: provenance, order, no stale override, counts add up."""
    last_key = (-1, -1)
    for step in result.played:
        chunk = result.produced[step.chunk]
        assert step.raw == chunk.steps[step.index], 'played a step the model never produced'
        key = (step.chunk, step.index)
        assert key > last_key, f'{key} played after {last_key}: order or stale override'
        last_key = key
        if step.values != step.raw:  # a blend lies between the last action and the model's own
            assert engine.smooth_seam > 0
    stats = engine.stats
    assert stats.actions == len(result.played)
    assert stats.actions + result.starved_ticks == len(result.tick_times)
    assert stats.requests == stats.chunks + stats.stale_chunks + stats.failed_requests + \
        engine.inflight + engine.parked
    assert stats.planned_steps == stats.actions + stats.dropped_steps + engine.buffered


def steady(latency):
    return lambda ticket, now: latency


def test_refill_when_empty_underruns_at_every_boundary():
    engine = ChunkEngine(PlaybackOptions(prefetch=False))
    result = simulate(engine, steps=15, hz=15, ticks=300, latency=steady(0.79))
    check_invariants(result, engine)
    boundaries = engine.stats.chunks - 1
    assert engine.stats.underruns >= boundaries - 1 and boundaries > 5
    moving = len(result.played) / (len(result.played) + result.starved_ticks)
    assert moving < 0.65  # refill-when-empty: C / (C + L) = 1 / 1.79 = 56%


def test_prefetch_append_keeps_moving_when_latency_below_chunk():
    engine = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=1))
    result = simulate(engine, steps=15, hz=15, ticks=600, latency=steady(0.79))
    check_invariants(result, engine)
    assert engine.stats.underruns == 0
    assert engine.stats.stale_chunks == 0


def test_append_needs_two_inflight_when_latency_exceeds_chunk():
    # lingbot-vla-v2-6b: 0.5 s chunks, ~0.79 s latency.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        one = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=1))
        r1 = simulate(one, steps=15, hz=30, ticks=900, latency=steady(0.79))
    assert any('cannot keep up' in str(w.message) for w in caught)
    two = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=2))
    r2 = simulate(two, steps=15, hz=30, ticks=900, latency=steady(0.79))
    check_invariants(r1, one)
    check_invariants(r2, two)
    moving_one = len(r1.played) / 900
    moving_two = len(r2.played) / 900
    assert moving_one < 0.7
    assert moving_two > 0.95
    # Every chunk is played whole in append mode: no request is wasted.
    assert two.stats.dropped_steps == 0 and two.stats.stale_chunks == 0


def test_aligned_drops_past_steps_and_takes_over_at_once():
    engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=3))
    result = simulate(engine, steps=30, hz=15, ticks=600, latency=steady(0.4))
    check_invariants(result, engine)
    assert engine.stats.underruns == 0
    assert engine.stats.dropped_steps >= 5 * (engine.stats.chunks - 1)
    # Each action is at most one chunk-latency old, not latency + the buffer ahead of it.
    ages = list(engine.stats.obs_ages)[100:]
    assert max(ages) < 0.4 + 30 / 15


def test_aligned_first_chunk_plays_from_step_zero():
    engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=2))
    result = simulate(engine, steps=15, hz=15, ticks=10, latency=steady(0.5))
    assert result.played and result.played[0].index == 0
    assert engine.stats.dropped_steps == 0


def aligned_quietly(hz, ticks, latency):
    """Run 15-step chunks on an 'aligned' engine, its warnings ignored; check the invariants."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=2))
        result = simulate(engine, steps=15, hz=hz, ticks=ticks, latency=steady(latency))
    check_invariants(result, engine)
    return engine, result


def test_aligned_delays_joins_while_latency_exceeds_what_it_can_cover():
    # pi05-droid: 1.0 s chunks, 0.79 s latency: L > kC/(k+1) for k = 2, but L < C.
    engine, result = aligned_quietly(hz=15, ticks=600, latency=0.79)
    assert engine.active_join == 'aligned'
    delay = engine.aligned_delay()
    assert 0 < delay < engine.lead_time()  # fresher than appending, which plays a lead behind
    assert len(result.played) / 600 > 0.95
    assert 'behind their capture' in engine.warnings[0]
    # Once the window has its tail (the prior appends at first), no action is older than
    # the chunk plus the delay; appending would play some a whole lead older.
    ages = list(engine.stats.obs_ages)[-150:]
    assert max(ages) < 1.0 + delay + 0.1


def test_aligned_appends_whole_chunks_once_latency_reaches_the_chunk():
    # lingbot-vla-v2-6b: 0.5 s chunks, 0.79 s latency: every chunk would land in the past.
    engine, result = aligned_quietly(hz=30, ticks=900, latency=0.79)
    assert engine.active_join == 'append'
    assert len(result.played) / 900 > 0.95
    assert 'appended whole' in engine.warnings[0]


def test_aligned_decides_its_join_from_the_first_sample():
    # Before the fix it joined time-aligned until five samples were in and starved meanwhile.
    engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=3), warn=False)
    result = simulate(engine, steps=15, hz=30, ticks=300, latency=steady(0.79))
    check_invariants(result, engine)
    assert engine.stats.underruns <= 1  # the first boundary, before any prefetch could land
    assert engine.stats.dropped_steps == 0


def test_aligned_with_one_inflight_warns_when_chunk_below_twice_latency():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=1))
        simulate(engine, steps=15, hz=15, ticks=300, latency=steady(0.79))
    assert any('time-aligned' in str(w.message) for w in caught)
    assert engine.warnings and 'p99 latency 0.8' in engine.warnings[0]


def test_out_of_order_reply_never_overrides_newer_plan():
    # Request 2 is slow and arrives after request 3: it must be discarded, not played.
    engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=4))
    result = simulate(engine, steps=30, hz=15, ticks=300,
                      latency=lambda t, now: 2.5 if t == 2 else 0.3)
    check_invariants(result, engine)
    assert engine.stats.stale_chunks >= 1
    assert all(step.chunk != 2 for step in result.played)


def test_append_joins_out_of_order_replies_in_observation_order_and_wastes_none():
    # Request 2 is slower than request 3: 3 waits for 2 instead of being thrown away.
    engine = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=3))
    result = simulate(engine, steps=15, hz=30, ticks=600,
                      latency=lambda t, now: 0.9 if t == 2 else 0.6)
    check_invariants(result, engine)
    assert engine.stats.stale_chunks == 0
    played_chunks = [s.chunk for s in result.played]
    assert 2 in played_chunks and 3 in played_chunks
    assert played_chunks.index(2) < played_chunks.index(3)


def test_a_late_request_gets_a_backup_instead_of_starving_the_arm():
    # Request 3 hangs for 10 s; coverage stops counting it once it is stuck.
    engine = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=2))
    result = simulate(engine, steps=15, hz=15, ticks=300,
                      latency=lambda t, now: 10.0 if t == 3 else 0.3)
    check_invariants(result, engine)
    assert engine.stats.underruns <= 1
    assert len(result.played) > 250


def test_aligned_chunk_wholly_in_the_past_does_not_empty_the_plan():
    engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=2))
    first = engine.request_started(0.0)
    engine.chunk_arrived(first, make_chunk(first, 30, 15), 0.1)
    late = engine.request_started(0.2)
    assert engine.next_action(0.2) is not None
    engine.chunk_arrived(late, make_chunk(late, 5, 15), 1.0)  # steps due 0.2..0.47: all past
    assert engine.buffered > 0
    assert engine.next_action(1.0).chunk == first


def test_aligned_joins_an_absolute_plan_at_the_step_nearest_the_arm():
    # The arm stands still (the first plan settled); the next plan moves off from where it
    # was captured. Its time-aligned step is 0.4 s of motion ahead of the arm: a jump.
    def settle_then_move(ticket, steps, hz, space):
        rows = [[0.0]] * steps if ticket == 0 else [[0.1 * i] for i in range(steps)]
        return ActionChunk(steps=rows, robot='droid', action_space=space, action_dim=1,
                           control_frequency_hz=hz, covers_seconds=steps / hz)
    # A velocity plan is no path: it joins at its time.
    for space, first_index, nearest in (('joint_position', 0, 1), ('joint_velocity', 6, 0)):
        engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=2), warn=False)
        result = simulate(engine, steps=30, hz=15, ticks=40, space=space,
                          latency=steady(0.4), chunk_factory=settle_then_move)
        check_invariants(result, engine)
        second = [s for s in result.played if s.chunk == 1]
        assert second[0].index == first_index
        assert engine.stats.joins.get('nearest', 0) == nearest


def test_late_ticks_do_not_drain_an_aligned_plan():
    # Every third tick comes 0.7 period late and the next one on its deadline again (run()'s
    # drift-free loop). Dropping the late step as well as catching up played the plan one step
    # ahead each time, and it ran dry before the next chunk was due.
    engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=2), warn=False)
    result = simulate(engine, steps=15, hz=15, ticks=600, latency=steady(0.5),
                      late=lambda tick: 0.7 if tick % 3 == 0 else 0.0)
    check_invariants(result, engine)
    assert engine.stats.underruns == 0  # 24 when late ticks dropped steps too


def test_aligned_counts_only_the_steps_a_pending_chunk_adds():
    engine = ChunkEngine(PlaybackOptions(join_mode='aligned', max_inflight=2), warn=False)
    first = engine.request_started(0.0)
    engine.chunk_arrived(first, make_chunk(first, 30, 15), 0.2)
    for tick in range(4, 15):
        engine.next_action(tick / 15)
    pending = engine.request_started(1.0)
    assert pending == 1
    # The plan (from 0.2 s) ends at 2.2 s; the pending chunk will cover until its capture
    # + 2 s = 3.0 s: 12 steps beyond the plan, not a whole chunk of 30.
    assert engine.committed_steps() == engine.buffered + 12


def test_failed_requests_are_counted_and_plan_continues():
    engine = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=2))
    result = simulate(engine, steps=15, hz=15, ticks=300, latency=steady(0.3),
                      fail=lambda t: t % 4 == 3)
    check_invariants(result, engine)
    assert engine.stats.failed_requests >= 3


def test_trigger_adapts_to_a_step_change_within_a_few_chunks():
    def stepped(ticket, now):
        return 0.3 if now < 10 else 0.6
    engine = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=1))
    result = simulate(engine, steps=15, hz=15, ticks=900, latency=stepped)
    check_invariants(result, engine)
    assert engine.stats.underruns <= 2
    # And back down: the lead follows within a few samples.
    window = LatencyWindow(100)
    for _ in range(50):
        window.add(1.0)
    for _ in range(5):
        window.add(0.5)
    assert window.planning_latency() < 0.8


def test_seam_measured_before_blending_and_blend_only_on_absolute_spaces():
    def offset_chunk(ticket, steps, hz, space):
        return make_chunk(ticket, steps, hz, space, offset=-3.0 * ticket)
    ramp = PlaybackOptions(join_mode='append', smooth_seam=4, max_inflight=1, seam_blend='linear')
    blended = ChunkEngine(ramp)
    rb = simulate(blended, steps=10, hz=10, ticks=60, latency=steady(0.2),
                  chunk_factory=offset_chunk)
    plain = ChunkEngine(PlaybackOptions(join_mode='append', max_inflight=1))
    simulate(plain, steps=10, hz=10, ticks=60, latency=steady(0.2),
             chunk_factory=offset_chunk)
    check_invariants(rb, blended)
    assert blended.stats.max_seam_jump == plain.stats.max_seam_jump > 900
    assert blended.stats.blended_steps > 0
    first_chunk = [s for s in rb.played if s.chunk == rb.played[0].chunk]
    assert all(s.values == s.raw for s in first_chunk), 'the first chunk is never blended'
    # The blended lead-in lies between the last action and the model's own step.
    for prev, step in zip(rb.played, rb.played[1:]):
        if step.values != step.raw:
            lo, hi = sorted((prev.values[0], step.raw[0]))
            assert lo - 1e-9 <= step.values[0] <= hi + 1e-9 or step.index > 0
    velocity = ChunkEngine(ramp)
    rv = simulate(velocity, steps=10, hz=10, ticks=60, latency=steady(0.2),
                  space='joint_velocity', chunk_factory=offset_chunk)
    assert velocity.stats.blended_steps == 0
    assert all(s.values == s.raw for s in rv.played)


def test_linear_blend_is_the_sequence_ai_clients_ramp_and_min_jerk_has_flat_ends():
    assert [blend_weight(i, 3, 'linear') for i in range(3)] == [0.25, 0.5, 0.75]
    n = 50
    w = [0.0] + [blend_weight(i, n, 'min_jerk') for i in range(n)] + [1.0]
    first_slope = w[1] - w[0]
    mid_slope = w[n // 2 + 1] - w[n // 2]
    last_slope = w[-1] - w[-2]
    assert first_slope < mid_slope / 50 and last_slope < mid_slope / 50
    assert all(b >= a for a, b in zip(w, w[1:]))


def test_random_latencies_and_failures_keep_the_invariants():
    for seed in range(20):
        rng = random.Random(seed)
        latencies = {}

        def latency(ticket, now, rng=rng, latencies=latencies):
            return latencies.setdefault(ticket, rng.lognormvariate(-0.5, 0.6))
        engine = ChunkEngine(PlaybackOptions(
            join_mode=rng.choice(['append', 'aligned']), max_inflight=rng.randint(1, 3),
            smooth_seam=rng.randint(0, 5), seam_blend='linear'), warn=False)
        result = simulate(engine, steps=rng.randint(5, 30), hz=rng.choice([10, 15, 30]),
                          ticks=400, latency=latency, fail=lambda t, rng=rng: rng.random() < 0.1)
        check_invariants(result, engine)


def test_quantile_and_window_validation():
    assert quantile([], 0.5) is None
    assert quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert quantile(list(range(1, 101)), 0.99) == 99
    with pytest.raises(ValueError):
        LatencyWindow(2)
    with pytest.raises(ValueError):
        ChunkEngine(PlaybackOptions(join_mode='sideways'))
    with pytest.raises(ValueError):
        ChunkEngine(PlaybackOptions(max_inflight=0))
