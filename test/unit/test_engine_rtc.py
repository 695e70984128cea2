"""
join='rtc' in the ChunkEngine, with an injected clock (no sleeping, no network).

The driver ticks the engine at its period; request k takes latency(k) seconds; the "server" is
a model that continues a straight path at a fixed speed: given a prefix, it returns the prefix
rows (plus `error` if asked to misbehave) and continues from the last of them; without one, it
starts from where the arm is. The rules under test are LeRobot's RTC queue's
(huggingface/lerobot main, src/lerobot/policies/rtc/action_queue.py: `_replace_actions_queue`
drops the first real_delay steps of the new chunk; `_check_and_resolve_delays` never drops
more than were consumed) and examples/rtc/eval_with_real_robot.py's delay
(`math.ceil(latency / period)`), here from the planning latency plus the tick that collects.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
import math
import warnings

from hypothesis import given, settings
from hypothesis import strategies as st
import pytest
from sequence_ai_ros.client import (
    ActionChunk,
    ChunkEngine,
    PlannedStep,
    PlaybackOptions,
    PREFIX_TOLERANCE,
)

# The RTC delay's arithmetic is the rtc module's own (test_layout allows it).
from sequence_ai_ros.client._rtc import delay_steps
from sequence_ai_ros.contract.rtc import DELAY_OPTION, HORIZON_OPTION, PREFIX_OPTION

SPEED = 0.01  # per step: the model's own motion, the largest step it ever takes


@dataclass
class Sent:
    """One request as the server saw it."""

    capture_tick: int
    actions_before: int
    options: dict
    lead: float | None
    skip: int = 0  # plan steps between the observation and the prefix (a delayed join)

    @property
    def prefix_starts(self) -> int:
        """Return the count of actions played when the prefix's first row plays."""
        return self.actions_before + self.skip


@dataclass
class RtcRun:
    played: list[tuple[int, PlannedStep]] = field(default_factory=list)  # (tick, step)
    sent: dict[int, Sent] = field(default_factory=dict)
    joined_at: dict[int, int] = field(default_factory=dict)  # ticket -> actions before its join
    starved: int = 0


def path_model(space: str, steps: int, hz: float, error: float = 0.0, dims: int = 2):
    """Return a server: it keeps the prefix (off by `error`) and continues it at SPEED."""
    def answer(options: dict, arm: list[float]) -> ActionChunk:
        prefix = options.get(PREFIX_OPTION) or []
        rows = [[v + error for v in row] for row in prefix]
        if space == 'joint_velocity':
            rows += [[SPEED * hz] * dims for _ in range(steps - len(rows))]
        else:
            last = prefix[-1] if prefix else arm
            rows += [[v + SPEED * (i + 1) for v in last] for i in range(steps - len(rows))]
        return ActionChunk(steps=rows, robot='droid', action_space=space, action_dim=dims,
                           control_frequency_hz=hz, covers_seconds=steps / hz)
    return answer


def drive(engine: ChunkEngine, *, ticks: int, hz: float, latency: Callable[[int], float],
          server: Callable[[dict, list[float]], ActionChunk],
          report: Callable[[int], object] = lambda ticket: {'prefix_steps': 1}) -> RtcRun:
    """Tick the engine as ActionStream.step does: collect, maybe request, then play."""
    period = 1.0 / hz
    run = RtcRun()
    pending: dict[int, float] = {}
    arm = [0.0, 0.0]
    for tick in range(ticks):
        now = tick * period
        for ticket in sorted(t for t, at in pending.items() if at <= now):
            del pending[ticket]
            chunk = server(run.sent[ticket].options, arm)
            run.joined_at[ticket] = engine.stats.actions
            engine.chunk_arrived(ticket, chunk, now, prefix_report=report(ticket))
        if engine.should_request(now):
            lead = engine.lead_time()
            ticket = engine.request_started(now)
            sent = engine.sent_prefix(ticket)
            run.sent[ticket] = Sent(tick, engine.stats.actions, engine.request_options(ticket),
                                    lead, sent.skip if sent is not None else 0)
            pending[ticket] = now + latency(ticket)
        step = engine.next_action(now)
        if step is None:
            run.starved += 1
        else:
            run.played.append((tick, step))
            arm = list(step.values)
    return run


def rtc_engine(**playback) -> ChunkEngine:
    return ChunkEngine(PlaybackOptions(**{'join_mode': 'rtc', 'max_inflight': 3,
                                          'seam_blend': 'linear', **playback}), warn=False)


def first_played(run: RtcRun) -> dict[int, tuple[int, PlannedStep]]:
    """Map each chunk to its first step played and that step's place among all played."""
    first: dict[int, tuple[int, PlannedStep]] = {}
    for position, (_, step) in enumerate(run.played):
        first.setdefault(step.chunk, (position, step))
    return first


def test_the_prefix_sent_is_what_then_plays():
    engine = rtc_engine()
    run = drive(engine, ticks=400, hz=15.0, latency=lambda k: 0.3,
                server=path_model('joint_position', 30, 15.0))
    prefixed = {t: s for t, s in run.sent.items() if s.options}
    assert len(prefixed) >= 10 and engine.stats.prefixes_sent == len(prefixed)
    played_values = [step.values for _, step in run.played]
    for sent in prefixed.values():
        rows = sent.options[PREFIX_OPTION]
        assert 1 <= len(rows) <= sent.options[DELAY_OPTION]
        assert sent.options[HORIZON_OPTION] == sent.options[DELAY_OPTION]  # smooth_seam=0
        # Actions played from where the prefix starts: the prefix, row for row, until the join.
        after = played_values[sent.prefix_starts:sent.prefix_starts + len(rows)]
        assert after[:len(after)] == rows[:len(after)]


def test_the_join_drops_exactly_the_steps_played_during_the_real_delay():
    # Latencies vary from request to request (the real delay is never d exactly).
    delays = [0.12, 0.45, 0.2, 0.6, 0.33, 0.05, 0.5]
    engine = rtc_engine()
    run = drive(engine, ticks=600, hz=15.0, latency=lambda k: delays[k % len(delays)],
                server=path_model('joint_position', 30, 15.0))
    assert engine.stats.joins.get('rtc', 0) >= 15
    checked = 0
    for ticket, (position, step) in first_played(run).items():
        sent = run.sent[ticket]
        if not sent.options or not step.rtc:
            continue
        # Its first step played is the one after those played since its observation...
        assert step.index == position - sent.prefix_starts
        # ... and it played at the first tick after the answer was in: nothing old after it.
        assert position == run.joined_at[ticket], 'an old step played after the join'
        checked += 1
    assert checked >= 15
    # The model's own motion throughout: no join jumps more than a step of it.
    assert engine.stats.max_seam_jump <= SPEED + 1e-9


@given(st.lists(st.floats(0.0, 1.5), min_size=1, max_size=9), st.sampled_from((10.0, 15.0, 30.0)),
       st.integers(8, 40), st.sampled_from(('joint_position', 'joint_delta', 'joint_velocity')))
@settings(max_examples=150, deadline=None, derandomize=True, database=None)
def test_rtc_joins_hold_for_generated_latencies(latencies, hz, steps, space):
    engine = rtc_engine()
    run = drive(engine, ticks=240, hz=hz, latency=lambda k: latencies[k % len(latencies)],
                server=path_model(space, steps, hz))
    stats = engine.stats
    assert stats.planned_steps == stats.actions + stats.dropped_steps + engine.buffered
    for ticket, (position, step) in first_played(run).items():
        if step.rtc:  # (a chunk parked behind an older request joins when it is released)
            assert step.index == position - run.sent[ticket].prefix_starts
    last_key = (-1, -1)
    for _, step in run.played:
        assert (step.chunk, step.index) > last_key and step.values == step.raw
        last_key = (step.chunk, step.index)
    for sent in run.sent.values():
        if sent.options:
            rows = sent.options[PREFIX_OPTION]
            assert 1 <= len(rows) <= sent.options[DELAY_OPTION] < steps


def test_d_comes_from_the_tail_latency_plus_the_collecting_tick():
    engine = rtc_engine()
    run = drive(engine, ticks=1200, hz=15.0, latency=lambda k: 0.41,
                server=path_model('joint_position', 30, 15.0))
    prefixed = [s for s in run.sent.values() if s.options]
    assert len(prefixed) > 30
    for sent in prefixed:
        assert sent.skip == 0  # 0.41 s against 2 s chunks: no delayed joins
        assert sent.options[DELAY_OPTION] == delay_steps(sent.lead, 1 / 15)
    # Answers are collected on the 7th tick after capture (0.41 s at 15 Hz), so 7/15 s is
    # every latency measured. Until 20 samples the window assumes a tail of twice the median
    # (14 steps, plus one for the collecting tick); from then on 7 + 1.
    assert prefixed[0].options[DELAY_OPTION] == 14 + 1
    assert prefixed[-1].options[DELAY_OPTION] == math.ceil(0.41 * 15) + 1


def test_a_delayed_join_starts_the_prefix_where_the_chunk_will_start():
    # One request in flight, 0.6 s latency, 1 s chunks: past C/2 the aligned join is delayed
    # (aligned_delay); so is an RTC join, its prefix taken from where the chunk will start.
    engine = rtc_engine(max_inflight=1)
    run = drive(engine, ticks=900, hz=15.0, latency=lambda k: 0.6,
                server=path_model('joint_position', 15, 15.0))
    delayed = [s for s in run.sent.values() if s.options and s.skip > 0]
    assert len(delayed) > 20 and engine.stats.max_join_delay_s > 0
    played = [step.values for _, step in run.played]
    for sent in delayed:
        rows = sent.options[PREFIX_OPTION]
        assert played[sent.prefix_starts:sent.prefix_starts + len(rows)] == \
            rows[:len(played) - sent.prefix_starts]
    for ticket, (position, step) in first_played(run).items():
        if step.rtc:
            assert step.index == position - run.sent[ticket].prefix_starts
            before = run.played[position - 1][1].values
            assert max(abs(a - b) for a, b in zip(step.values, before)) <= SPEED + 1e-9
    # (Until 20 latencies are in, the window's cautious tail says 1.2 s: appended chunks.)
    assert engine.stats.joins['rtc'] > 20 and engine.stats.underruns == 0


def test_smooth_seam_asks_the_model_for_a_ramp_of_that_many_steps():
    engine = rtc_engine(smooth_seam=5)
    run = drive(engine, ticks=200, hz=15.0, latency=lambda k: 0.3,
                server=path_model('joint_position', 30, 15.0))
    options = [s.options for s in run.sent.values() if s.options]
    assert options and all(o[HORIZON_OPTION] == o[DELAY_OPTION] + 5 for o in options)
    assert engine.stats.blended_steps == 0, "an RTC join is the model's motion, never blended"


def test_a_chunk_that_violates_the_prefix_is_reported():
    engine = ChunkEngine(PlaybackOptions(join_mode='rtc', max_inflight=3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        drive(engine, ticks=200, hz=15.0, latency=lambda k: 0.3,
              server=path_model('joint_position', 30, 15.0, error=0.05))
    stats = engine.stats
    assert stats.prefix_violations == stats.prefixes_sent - engine.inflight >= 5
    assert stats.max_prefix_error == pytest.approx(0.05)
    messages = [str(w.message) for w in caught if 'departed from the RTC prefix' in str(w.message)]
    assert len(messages) == 1 and '0.05' in messages[0]


def test_a_chunk_within_tolerance_is_not_reported():
    engine = rtc_engine()
    drive(engine, ticks=200, hz=15.0, latency=lambda k: 0.3,
          server=path_model('joint_position', 30, 15.0, error=PREFIX_TOLERANCE / 2))
    assert engine.stats.prefix_violations == 0 and engine.stats.prefixes_sent >= 5
    assert engine.stats.max_prefix_error == pytest.approx(PREFIX_TOLERANCE / 2)


def test_velocity_gaps_are_measured_as_positions_over_a_step():
    # 0.15 rad/s off at 15 Hz is 0.01 rad over a step: within the tolerance.
    engine = rtc_engine()
    drive(engine, ticks=200, hz=15.0, latency=lambda k: 0.3,
          server=path_model('joint_velocity', 30, 15.0, error=0.15))
    assert engine.stats.max_prefix_error == pytest.approx(0.01)
    assert engine.stats.prefix_violations == 0


def test_a_server_that_ignores_the_prefix_makes_the_engine_fall_back_once():
    engine = ChunkEngine(PlaybackOptions(join_mode='rtc', max_inflight=3, smooth_seam=4,
                                         seam_blend='min_jerk'))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        run = drive(engine, ticks=300, hz=15.0, latency=lambda k: 0.3,
                    server=path_model('joint_position', 30, 15.0), report=lambda ticket: None)
    fallback = [str(w.message) for w in caught if 'ignored the RTC prefix' in str(w.message)]
    assert len(fallback) == 1
    assert "join_mode='aligned'" in fallback[0] and 'smooth_seam=4' in fallback[0] \
        and "'min_jerk'" in fallback[0]
    assert engine.join_mode == 'aligned' and engine.stats.rtc_fallback
    prefixed = [t for t, s in sorted(run.sent.items()) if s.options]
    assert prefixed == [1], 'only the request that found it out carried a prefix'
    assert 'rtc' not in engine.stats.joins and engine.stats.blended_steps > 0
    assert engine.stats.chunks >= 10 and engine.stats.underruns == 0


def test_a_report_of_nothing_used_is_ignoring_too():
    engine = rtc_engine()
    drive(engine, ticks=100, hz=15.0, latency=lambda k: 0.3,
          server=path_model('joint_position', 30, 15.0),
          report=lambda ticket: {'prefix_steps': 0})
    assert engine.stats.rtc_fallback and engine.join_mode == 'aligned'


def test_no_prefix_while_nothing_plays_or_latency_passes_the_chunk():
    # The first request, and every one while the plan is empty, has nothing to send.
    engine = rtc_engine(prefetch=False)
    run = drive(engine, ticks=200, hz=15.0, latency=lambda k: 0.3,
                server=path_model('joint_position', 15, 15.0))
    assert engine.stats.prefixes_sent == 0 and all(not s.options for s in run.sent.values())
    # Latency past the chunk: chunks are appended whole, with no prefix to keep.
    slow = rtc_engine()
    drive(slow, ticks=300, hz=30.0, latency=lambda k: 0.8,
          server=path_model('joint_position', 15, 30.0))
    assert slow.active_join == 'append' and slow.stats.joins.get('appended', 0) > 5
    assert slow.stats.prefixes_sent <= 1


def test_an_underrun_joins_after_the_prefix_that_played():
    # The plan runs out before the answer lands: the arm waits at the prefix's end, and the
    # answer plays from the step after it, not from its step 0 (which would go back).
    engine = rtc_engine(max_inflight=1)
    latencies = [0.1, 0.1, 3.0, 0.1, 0.1, 0.1]
    run = drive(engine, ticks=200, hz=15.0, latency=lambda k: latencies[min(k, 5)],
                server=path_model('joint_position', 15, 15.0))
    assert engine.stats.underruns >= 1
    late = run.sent[2]
    position, step = first_played(run)[2]
    assert step.rtc and step.index == len(late.options[PREFIX_OPTION])
    before = run.played[position - 1][1]
    assert before.values == late.options[PREFIX_OPTION][-1]
    assert max(abs(a - b) for a, b in zip(step.values, before.values)) <= SPEED + 1e-9


def test_clear_forgets_the_prefixes_in_flight():
    engine = rtc_engine()
    drive(engine, ticks=60, hz=15.0, latency=lambda k: 0.3,
          server=path_model('joint_position', 30, 15.0))
    ticket = engine.request_started(4.0)
    engine.clear()
    assert engine.request_options(ticket) == {}


def test_join_rtc_is_a_join_mode():
    with pytest.raises(ValueError, match='rtc'):
        ChunkEngine(PlaybackOptions(join_mode='rtcx'))
    assert ChunkEngine(PlaybackOptions(join_mode='rtc')).active_join == 'rtc'
