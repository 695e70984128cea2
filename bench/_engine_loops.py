"""
The four control loops the chunk-engine bench puts side by side, each recorded by a Trace.

naive      predict, play the whole chunk, predict again (openpi-client style, httpx directly)
published  the published sequence_ai 0.1.0 client's Policy.run(), unmodified
append     this project's Policy.run(join='append')
aligned    this project's Policy.run(join='aligned')

Every loop gets the same arm, the same number of actions and validate=lambda a: True; each
observe() is one request in every loop, so requests are counted the same way for all four.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
import time
from typing import Any
import warnings

from _engine_world import Arm, Trace
import httpx
import sequence_ai
from sequence_ai_ros.client.config import full_model_id
from sequence_ai_ros.client.outcome import RunOutcome
from sequence_ai_ros.client.policy import Policy
from sequence_ai_ros.client.transport import Transport
from sequence_ai_ros.client.types import Observation, Prediction

LOOPS = ('naive', 'published', 'append', 'aligned')


@dataclass
class RunSpec:
    """One run: which model, where, how many actions, and the arm to drive."""

    base_url: str
    api_key: str
    model: str
    actions: int
    arm: Arm
    max_inflight: int = 3


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


class _TracedPolicy(Policy):
    """Our Policy, noting which observation each answer was computed from (worker thread)."""

    def __init__(self, transport: Transport, model: str,
                 captures: dict[int, tuple[Observation, float]]) -> None:
        super().__init__(transport, model)
        self.captures = captures
        self.answered: dict[str, float] = {}

    def send(self, observation: Observation, options: dict[str, Any]) -> Prediction:
        prediction = super().send(observation, options)
        self.answered[prediction.id] = self.captures.pop(id(observation))[1]
        return prediction


def run_ours(spec: RunSpec, trace: Trace, join: str) -> RunRecord:
    """Run this project's run() with `join`; actions are matched to chunks by value."""
    record = RunRecord(join, trace)
    captures: dict[int, tuple[Observation, float]] = {}
    chunk_of: dict[tuple[float, ...], int] = {}
    transport = Transport(api_key=spec.api_key, base_url=spec.base_url)
    policy = _TracedPolicy(transport, full_model_id(spec.model), captures)

    def observe() -> Observation:
        observation = spec.arm.observation()
        captures[id(observation)] = (observation, trace.observe())
        return observation

    def on_chunk(prediction: Prediction) -> None:
        number = trace.chunk(policy.answered.pop(prediction.id))
        for values in prediction.action_chunk.steps:
            chunk_of[tuple(values)] = number

    def act(values: list[float]) -> None:
        trace.act(values, chunk_of.get(tuple(values), -1))
        spec.arm.apply(values)

    with policy:
        record.outcome = policy.run(observe, act, max_actions=spec.actions,
                                    validate=_always_safe, on_chunk=on_chunk, join=join,
                                    max_inflight=spec.max_inflight)
    record.own_underrun_s = record.outcome.underrun_s
    return record


RUNNERS: dict[str, Callable[[RunSpec, Trace], RunRecord]] = {
    'naive': run_naive,
    'published': run_published,
    'append': lambda spec, trace: run_ours(spec, trace, 'append'),
    'aligned': lambda spec, trace: run_ours(spec, trace, 'aligned'),
}


def run_loop(loop: str, spec: RunSpec) -> RunRecord:
    """Run one loop; warnings are recorded in the result instead of printed."""
    trace = Trace(spec.arm.period_s)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        record = RUNNERS[loop](spec, trace)
    record.warnings = sorted({str(w.message) for w in caught})
    return record
