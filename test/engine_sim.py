"""A discrete-time driver for ChunkEngine with scripted latencies: no sleeping, no network."""

from collections.abc import Callable
from dataclasses import dataclass, field

from sequence_ai_ros.client import ActionChunk, ChunkEngine, PlannedStep


def make_chunk(ticket: int, steps: int, hz: float, space: str = 'joint_position',
               dim: int = 2, offset: float = 0.0) -> ActionChunk:
    """Make a chunk whose values name where they came from: [ticket*1000 + index + offset, ...]."""
    rows = [[ticket * 1000.0 + i + offset] * dim for i in range(steps)]
    return ActionChunk(steps=rows, robot='droid', action_space=space, action_dim=dim,
                       control_frequency_hz=hz, covers_seconds=steps / hz)


@dataclass
class SimResult:
    played: list[PlannedStep] = field(default_factory=list)
    tick_times: list[float] = field(default_factory=list)
    starved_ticks: int = 0
    produced: dict[int, ActionChunk] = field(default_factory=dict)
    capture: dict[int, float] = field(default_factory=dict)


def simulate(engine: ChunkEngine, *, steps: int, hz: float, ticks: int,
             latency: Callable[[int, float], float], space: str = 'joint_position',
             fail: Callable[[int], bool] | None = None,
             chunk_factory: Callable[..., ActionChunk] = make_chunk,
             late: Callable[[int], float] | None = None) -> SimResult:
    """
    Tick the engine `ticks` times at `hz`; request k takes latency(k, start_time) seconds.

    `late(k)` delays tick k by that many periods; the next tick keeps its own deadline, as
    run()'s drift-free loop does.
    """
    period = 1.0 / hz
    result = SimResult()
    pending: dict[int, float] = {}  # ticket -> arrival time
    for tick in range(ticks):
        now = (tick + (late(tick) if late is not None else 0.0)) * period
        for ticket in sorted(t for t, at in pending.items() if at <= now):
            del pending[ticket]
            if fail is not None and fail(ticket):
                engine.request_failed(ticket)
                continue
            chunk = chunk_factory(ticket, steps, hz, space)
            result.produced[ticket] = chunk
            engine.chunk_arrived(ticket, chunk, now)
        if engine.should_request(now):
            ticket = engine.request_started(now)
            result.capture[ticket] = now
            pending[ticket] = now + latency(ticket, now)
        step = engine.next_action(now)
        result.tick_times.append(now)
        if step is None:
            result.starved_ticks += 1
        else:
            result.played.append(step)
    return result
