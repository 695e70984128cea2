"""
The chunk-engine bench's loops on a simulated clock, with the gateway's own latency sampler.

`simulate_published` models the published client's loop and `simulate_ours` drives this
project's ChunkEngine as run() does: what the loops do with no machine in the way (no late
ticks, no scheduling), over many seeds.
"""

from collections.abc import Callable
from dataclasses import dataclass

from sequence_ai_ros.client import ChunkEngine, PlaybackOptions
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.latency import LatencySampler

from ._engine_loops import OUR_LOOPS
from ._engine_world import seam_rate, SeamMeter, SimulatedArm


@dataclass
class SimRun:
    """What one simulated run did, in model seconds."""

    period: float
    rate: float = 1.0  # _engine_world.seam_rate: values to the seam's units
    actions: int = 0
    stall_s: float = 0.0
    requests: int = 0
    stalled: bool = False  # the loop waited for a chunk before this action
    meter: SeamMeter | None = None

    def __post_init__(self) -> None:
        self.meter = SeamMeter(self.rate)

    @property
    def seam(self) -> float | None:
        """Return the largest jump at a join, as Trace measures it."""
        assert self.meter is not None
        return max(self.meter.seams, default=None)

    def act(self, arm: SimulatedArm, values: list[float], chunk: int) -> None:
        """
        Execute one action and measure the seam as Trace does (joints only, in every space).

        Chunk -1 is a blended action: its jump from the action before is a seam too.
        """
        assert self.meter is not None
        self.meter.note(values[:arm.q.size], chunk, self.stalled)
        self.stalled = False
        arm.apply(values)
        self.actions += 1

    @property
    def moving(self) -> float:
        """Return commanded time over commanded plus stalled time."""
        commanded = self.actions * self.period
        return commanded / (commanded + self.stall_s)

    @property
    def requests_per_arm_s(self) -> float:
        """Return the requests per second of commanded motion."""
        return self.requests / (self.actions * self.period)


def _sampler(profile: ModelProfile, scenario: str, seed: int, chunks: int,
             clock: Callable[[], float]) -> LatencySampler:
    # `step` doubles the latency about halfway through, as the live runs place it.
    half = profile.latency_median_s + chunks / 2 * max(profile.covers_seconds,
                                                       profile.latency_median_s)
    return LatencySampler(scenario, 1.0, step_after_s=half, seed=seed, clock=clock)


def _sim_start(profile: ModelProfile, scenario: str, seed: int, chunks: int,
               world: str) -> tuple[list[float], SimulatedArm, LatencySampler, SimRun, int]:
    """Return a simulated run's clock (a one-item list), arm, sampler, record and length."""
    now = [0.0]
    sampler = _sampler(profile, scenario, seed, chunks, lambda: now[0])
    return (now, SimulatedArm(profile, seed, world), sampler,
            SimRun(1.0 / profile.control_hz, seam_rate(profile)),
            chunks * profile.action_horizon)


def simulate_published(profile: ModelProfile, scenario: str, seed: int, chunks: int,
                       world: str = 'circle') -> SimRun:
    """
    Model the published client's run(): one request in flight, refill from the worker.

    As its code reads: the prefetch starts when the buffer's time is at most the EMA of the
    latency (0.3 new) x 1.25 + one period; a chunk is taken (replacing the empty buffer) only
    once the buffer is empty, and waiting for it then is an underrun.
    """
    now, arm, sampler, run, total = _sim_start(profile, scenario, seed, chunks, world)
    period = run.period
    chunk = arm.plan(0.0)
    latency = sampler.sample(profile)
    run.requests, now[0], ema = 1, latency, latency
    buffer, number = list(chunk.steps), 0
    inflight: tuple[float, float, list[list[float]]] | None = None  # (arrival, capture, steps)
    noted = False
    while run.actions < total:
        if inflight is not None and not noted and inflight[0] <= now[0]:
            ema, noted = 0.7 * ema + 0.3 * (inflight[0] - inflight[1]), True
        if not buffer and inflight is not None:
            arrival, capture, steps = inflight
            if arrival > now[0]:
                run.stall_s += arrival - now[0]
                run.stalled = True
                now[0] = arrival
            if not noted:
                ema = 0.7 * ema + 0.3 * (arrival - capture)
            buffer, number, inflight = list(steps), number + 1, None
        if inflight is None and run.actions + len(buffer) < total and \
                len(buffer) * period <= ema * 1.25 + period:
            planned = arm.plan(now[0]).steps
            inflight, noted = (now[0] + sampler.sample(profile), now[0], planned), False
            run.requests += 1
        run.act(arm, buffer.pop(0), number)
        now[0] += period
    return run


def simulate_ours(profile: ModelProfile, scenario: str, seed: int, chunks: int, join: str,
                  max_inflight: int, world: str = 'circle', *, smooth_seam: int = 0,
                  seam_blend: str = 'linear') -> SimRun:
    """
    Drive this project's ChunkEngine as run() does, on a simulated clock.

    A blended step (its values are not the model's) is executed as chunk -1, as the live
    runs label it, so every step of a ramp counts as a seam. join='rtc': the arm's planner is
    given each request's options (the prefix) and its answers report the prefix used, as the
    local gateway's do.
    """
    now, arm, sampler, run, total = _sim_start(profile, scenario, seed, chunks, world)
    period = run.period
    engine = ChunkEngine(PlaybackOptions(join_mode=join, max_inflight=max_inflight,
                                         smooth_seam=smooth_seam, seam_blend=seam_blend),
                         warn=False)
    pending: dict[int, tuple[float, object, object]] = {}

    def start() -> None:
        ticket = engine.request_started(now[0])
        options = engine.request_options(ticket)
        report = {'prefix_steps': len(options['action_prefix'])} if options else None
        pending[ticket] = (now[0] + sampler.sample(profile), arm.plan(now[0], options), report)
        run.requests += 1

    def collect() -> None:
        for ticket in sorted(t for t, (at, _, _) in pending.items() if at <= now[0]):
            arrival, chunk, report = pending.pop(ticket)
            engine.chunk_arrived(ticket, chunk, arrival,  # type: ignore[arg-type]
                                 prefix_report=report)

    start()
    now[0] = min(at for at, _, _ in pending.values())
    while engine.stats.actions < total:
        collect()
        if engine.stats.actions + engine.committed_steps() < total and \
                engine.should_request(now[0]):
            start()
        step = engine.next_action(now[0])
        if step is None:  # run()'s refill: wait for a request in flight, or make one
            run.stalled = True
            if not pending:
                start()
            now[0] = max(now[0], min(at for at, _, _ in pending.values()))
            continue
        run.act(arm, step.values, step.chunk if step.values == step.raw else -1)
        now[0] += period
    engine.close_underrun(now[0])
    run.stall_s = engine.stats.underrun_s
    return run


def simulate_loop(loop: str, profile: ModelProfile, scenario: str, seed: int, chunks: int,
                  max_inflight: int, world: str = 'circle') -> SimRun:
    """Run one of SIM_LOOPS (the published model or one of ours) on the simulated clock."""
    if loop == 'published':
        return simulate_published(profile, scenario, seed, chunks, world)
    options = OUR_LOOPS[loop]
    return simulate_ours(profile, scenario, seed, chunks, options.join, max_inflight, world,
                         smooth_seam=options.smooth_seam(profile.action_horizon),
                         seam_blend=options.seam_blend)
