"""
The five control loops the chunk-engine bench puts side by side, each recorded by a Trace.

naive      predict, play the whole chunk, predict again (openpi-client style, httpx directly)
published  the published sequence_ai 0.1.0 client's Policy.run(), unmodified
append     this project's Policy.run(join='append')
aligned    this project's Policy.run(join='aligned')
blended    this project's Policy.run(join='aligned', smooth_seam=blend_steps(horizon),
           seam_blend='min_jerk'): aligned, each seam ramped out of the last action
rtc        this project's Policy.run(join='rtc', smooth_seam=blend_steps(horizon),
           seam_blend='min_jerk'): real-time chunking, each request carrying the plan's next
           d actions for the model to continue (its ramp over blend_steps after them); the
           blend is the fallback's, should the server ignore the prefix

Every loop gets the same arm, the same number of actions and validate=lambda a: True; each
observe() is one request in every loop, so requests are counted the same way for all five.
A blended action is none of the model's values, so it is labelled chunk -1 and every step of
the ramp counts as a seam (Trace.act, SimRun.act).

The same loops on a simulated clock are in _engine_sim.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
import time
from typing import Any
import warnings

import httpx
import sequence_ai
from sequence_ai_ros.client import (
    full_model_id,
    Observation,
    Policy,
    PolicyObserver,
    Prediction,
    RunOutcome,
    Transport,
)
from sequence_ai_ros.gateway.catalogue import load_catalogue

from ._engine_world import Arm, Trace

LOOPS = ('naive', 'published', 'append', 'aligned', 'blended', 'rtc')
# The blended loop's ramp, as a share of a chunk: half of one (cosmos3 16 steps = 1.07 s,
# lingbot-vla 7 = 0.23 s). On the simulated clock, cosmos3/fast's mean max seam was 0.065 rad
# with 8 steps, 0.043 with 16, against the published client's 0.084; moving was unchanged.
BLEND_SHARE = 0.5
BLEND_TEXT = 'min-jerk over half a chunk'


def blend_steps(action_horizon: int) -> int:
    """Return the blended loop's ramp length in steps for a chunk of `action_horizon`."""
    return max(2, int(action_horizon * BLEND_SHARE))


@dataclass(frozen=True)
class OurLoop:
    """How one of this project's loops calls run(): its join and its seam blending."""

    join: str
    blend: bool = False

    def smooth_seam(self, action_horizon: int) -> int:
        """Return run()'s smooth_seam for a model whose chunks have `action_horizon` steps."""
        return blend_steps(action_horizon) if self.blend else 0

    @property
    def seam_blend(self) -> str:
        """Return run()'s seam_blend."""
        return 'min_jerk' if self.blend else 'linear'


OUR_LOOPS: dict[str, OurLoop] = {
    'append': OurLoop('append'),
    'aligned': OurLoop('aligned'),
    'blended': OurLoop('aligned', blend=True),
    'rtc': OurLoop('rtc', blend=True),
}


@dataclass
class RunSpec:
    """One run: which model, where, how many actions, and the arm to drive."""

    base_url: str
    api_key: str
    model: str
    actions: int
    arm: Arm
    max_inflight: int = 3
    seam_rate: float = 1.0  # _engine_world.seam_rate of the served profile


@dataclass
class RunRecord:
    """What one run did: the trace, the loop's own report (ours only) and any warnings."""

    loop: str
    trace: Trace
    outcome: RunOutcome | None = None
    warnings: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    # The loop's own account of the time it had no action to give (wall s): ours and the
    # published client's RunOutcome.underrun_s; the naive loop's is every request but the first.
    own_underrun_s: float | None = None


def _always_safe(action: list[float]) -> bool:
    return True


def run_naive(spec: RunSpec, trace: Trace) -> RunRecord:
    """Refill when empty: block on /v1/act, play every step of the chunk, repeat."""
    record = RunRecord('naive', trace)
    headers = {'Authorization': f'Bearer {spec.api_key}'}
    with httpx.Client(base_url=spec.base_url, headers=headers, timeout=30.0) as client:
        acted = 0
        while acted < spec.actions:
            observation = spec.arm.observation().to_wire()
            captured = trace.observe()
            response = client.post('/v1/act', json={
                'model': full_model_id(spec.model), 'observation': observation})
            response.raise_for_status()
            record.latencies.append(time.monotonic() - captured)
            chunk = response.json()['action_chunk']
            period = 1.0 / chunk['control_frequency_hz']
            number = trace.chunk(captured)
            deadline = time.monotonic()
            for step in chunk['steps'][:spec.actions - acted]:
                values = step['values'] if isinstance(step, dict) else step
                trace.act(values, number)
                spec.arm.apply(values)
                acted += 1
                deadline += period
                delay = deadline - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
    record.own_underrun_s = sum(record.latencies[1:])
    return record


def run_published(spec: RunSpec, trace: Trace) -> RunRecord:
    """Run the published client's run() as shipped; chunk k answers the k-th observation."""
    record = RunRecord('published', trace)
    current = [-1]

    def observe() -> sequence_ai.Observation:
        observation = spec.arm.published_observation()
        trace.observe()
        return observation

    def on_chunk(prediction: Any) -> None:
        # One request in flight and no chunk ever dropped: answers come in observation order.
        current[0] = trace.chunk(trace.observed[len(trace.chunk_captures)])

    def act(values: list[float]) -> None:
        trace.act(values, current[0])
        spec.arm.apply(values)

    with sequence_ai.connect(spec.model, api_key=spec.api_key,
                             base_url=spec.base_url) as policy:
        outcome = policy.run(observe, act, max_actions=spec.actions, validate=_always_safe,
                             on_chunk=on_chunk)
    record.own_underrun_s = outcome.underrun_s
    return record


class _Captures(PolicyObserver):
    """Which observation each answer was computed from, noted on the sending thread."""

    def __init__(self) -> None:
        self.captured: dict[int, float] = {}  # id(observation) -> its Trace.observe() time
        self.answered: dict[str, float] = {}  # prediction id -> its observation's time

    def answer_received(self, observation: Observation, prediction: Prediction,
                        round_trip_s: float) -> None:
        """Note the capture time the answer's chunk was computed from."""
        self.answered[prediction.id] = self.captured.pop(id(observation))


def run_ours(spec: RunSpec, trace: Trace, join: str, *, smooth_seam: int = 0,
             seam_blend: str = 'linear', loop: str | None = None) -> RunRecord:
    """
    Run this project's run() with `join` and seam blending; the record is named `loop`.

    Actions are matched to chunks by value: a blended action matches none and gets chunk -1.
    """
    record = RunRecord(loop or join, trace)
    captures = _Captures()
    chunk_of: dict[tuple[float, ...], int] = {}
    transport = Transport(api_key=spec.api_key, base_url=spec.base_url)
    policy = Policy(transport, full_model_id(spec.model), observer=captures)

    def observe() -> Observation:
        observation = spec.arm.observation()
        captures.captured[id(observation)] = trace.observe()
        return observation

    def on_chunk(prediction: Prediction) -> None:
        number = trace.chunk(captures.answered.pop(prediction.id))
        for values in prediction.action_chunk.steps:
            chunk_of[tuple(values)] = number

    def act(values: list[float]) -> None:
        trace.act(values, chunk_of.get(tuple(values), -1))
        spec.arm.apply(values)

    with policy:
        record.outcome = policy.run(observe, act, max_actions=spec.actions,
                                    validate=_always_safe, on_chunk=on_chunk, join_mode=join,
                                    max_inflight=spec.max_inflight, smooth_seam=smooth_seam,
                                    seam_blend=seam_blend)
    record.own_underrun_s = record.outcome.underrun_s
    return record


def _ours(loop: str) -> Callable[[RunSpec, Trace], RunRecord]:
    options = OUR_LOOPS[loop]
    return lambda spec, trace: run_ours(
        spec, trace, options.join, loop=loop, seam_blend=options.seam_blend,
        smooth_seam=options.smooth_seam(load_catalogue().get(spec.model).action_horizon))


RUNNERS: dict[str, Callable[[RunSpec, Trace], RunRecord]] = {
    'naive': run_naive,
    'published': run_published,
    **{loop: _ours(loop) for loop in OUR_LOOPS},
}


def run_loop(loop: str, spec: RunSpec) -> RunRecord:
    """Run one loop; warnings are recorded in the result instead of printed."""
    trace = Trace(spec.arm.period_s, spec.seam_rate)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        record = RUNNERS[loop](spec, trace)
    record.warnings = sorted({str(w.message) for w in caught})
    return record
