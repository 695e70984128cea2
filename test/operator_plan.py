"""
The kinds of step of an operator session, a plan of them drawn from a seed, and the runner.

Every step starts in the session's resting state and brings the node back to it; run_step
checks that after each one (operator_harness.Session.settled).
"""

from collections.abc import Callable
from dataclasses import dataclass
import random
import time

from operator_calls import (
    cleanup_configure,
    deactivate_activate,
    hold_service,
    idle_abuse,
    running_abuse,
)
from operator_harness import RETRIES, RobotStalled, Session
from operator_steps import (
    action_outside_limits,
    BAD_GATEWAY,
    completed,
    gate,
    gateway_restarted_cold,
    input_fault,
    instruction_changed,
    malformed,
    refusal,
    retries_spent,
    ride_through,
    stop_service,
)
from system.test_node_faults import FAULTS as INPUT_FAULTS
from system.test_node_gateway_faults import MALFORMED, REFUSALS


@dataclass(frozen=True)
class Step:
    """One kind of step: its name, its area of the day, and what it does."""

    name: str
    area: str  # 'ending', 'ride-through', 'lifecycle', 'hold service', 'abuse'
    run: Callable[[Session], str]


def steps() -> list[Step]:
    """Return every kind of step of an operator session."""
    chosen = ('NaN', 'lacking a joint', 'joint_states stop', 'joint_states stamped older',
              'cameras stop', 'camera frames stamped older', 'unsupported image encoding')
    inputs = [f for f in INPUT_FAULTS if any(c in f.case for c in chosen)]
    return [
        Step('completed', 'ending', completed),
        Step('stop service', 'ending', stop_service),
        *(Step(f.case, 'ending', input_fault(f)) for f in inputs),
        Step('safety gate closed', 'ending', gate(closed=True)),
        Step('safety gate silent', 'ending', gate(closed=False)),
        Step('action outside the limits', 'ending', action_outside_limits),
        *(Step(r.case, 'ending', refusal(r)) for r in REFUSALS),
        Step(f'{RETRIES + 1} 502s in a row', 'ending', retries_spent),
        Step('gateway restarted cold mid-episode', 'ending', gateway_restarted_cold),
        Step('deactivate mid-episode, activate', 'lifecycle', deactivate_activate),
        Step('cleanup mid-episode, configure', 'lifecycle', cleanup_configure),
        Step('connection reset', 'ride-through',
             ride_through('reset', lambda s: s.faults.reset_next())),
        Step('request stalled', 'ride-through',
             ride_through('stall', lambda s: s.faults.stall_next())),
        Step('one 502', 'ride-through',
             ride_through('respond', lambda s: s.faults.refuse_next(1, 502, BAD_GATEWAY))),
        *(Step(f'malformed: {name}', 'ride-through', ride_through('respond', malformed(name)))
          for name in MALFORMED),
        Step('instruction changed mid-episode', 'ride-through', instruction_changed),
        Step('hold service absent', 'hold service', hold_service('absent')),
        Step('hold service refuses', 'hold service', hold_service('refuses')),
        Step('bad calls while idle', 'abuse', idle_abuse),
        Step('bad calls mid-episode', 'abuse', running_abuse),
    ]


# -- running them ----------------------------------------------------------------------------

STALL_RETRIES = 2  # reruns of a step that this side's own stall cut short


@dataclass
class StepRecord:
    """What one step did: its name, area, one line, seconds and this side's stalls."""

    name: str
    area: str
    summary: str
    seconds: float
    stalls: int = 0


def run_step(s: Session, step: Step) -> StepRecord:
    """
    Run one step from the resting state and check the resting state after it.

    An episode that ended holding because this side paused an input past its timeout held
    rightly, but did not test what the step meant to: it is recorded and the step run again.
    """
    for attempt in range(STALL_RETRIES + 1):
        s.prepare()
        started = time.monotonic()
        try:
            summary = step.run(s)
        except RobotStalled as stall:
            s.stalls.append(f'{step.name}: {stall}')
            s.recover()
            continue
        s.settled()
        return StepRecord(step.name, step.area, summary, time.monotonic() - started, attempt)
    raise AssertionError(f'{step.name}: this side stalled {STALL_RETRIES + 1} times in a row: '
                         f'{s.stalls[-3:]}')


SEED_ENV = 'SEQUENCE_AI_ROS_SESSION_SEED'


def session_plan(rng: random.Random) -> list[Step]:
    """Every kind of step, the episode endings and lifecycle steps twice, in `rng`'s order."""
    plan = [step for step in steps()
            for _ in range(2 if step.area in ('ending', 'lifecycle') else 1)]
    rng.shuffle(plan)
    return plan
