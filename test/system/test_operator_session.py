"""
An operator's whole day on one policy node process: every way an episode ends, on each protocol.

One node, on v1 or on the direct protocol (operator_harness.SessionFaults says where the
faults go on each), runs dozens of episodes that complete, are stopped (service, deactivate,
cleanup), end on a safety check (NaN, stale or unusable inputs, a closed or silent safety
gate, an action outside the limits) or on a gateway fault (401, 402, retries spent, the
gateway restarted cold), or ride faults through (a reset, a stall, a 502, malformed answers,
the instruction changed), with the hold service absent or refusing, and with refused calls
mixed in (stop with none running, start twice, cleanup or configure while active, bad
parameter sets). The order is drawn from a seed, printed on failure; SEQUENCE_AI_ROS_SESSION_SEED
replays it.

After every step (operator_plan.run_step): the outcome and its reason, the final hold in time
and nothing after it, /diagnostics (the episode status's level and message, the part the
fault concerns, no internal error), the lifecycle state, the next episode starting and moving,
the process alive with no traceback in its log, every command the robot received safe
(operator_robot.AuditedRobot), threads and DDS sockets back to the baseline and HTTP
connections within the pool. At the end, resident memory within RSS_GROWTH_KIB of the
baseline.
"""

import json
import os
import random

from operator_harness import operator_session, PROTOCOLS
from operator_plan import run_step, SEED_ENV, session_plan
import pytest
from sequence_ai_ros.cli import report_command
from sequence_ai_ros.record.reader import read_episode
from sequence_ai_ros.record.schemas import OUTCOME

RSS_GROWTH_KIB = 32 * 1024


@pytest.mark.parametrize('protocol', PROTOCOLS)
def test_one_node_through_an_operators_day(ros, tmp_path, protocol):
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(1, 10**6))
    plan = session_plan(random.Random(seed))
    print(f'operator session on {protocol}: seed {seed}, {len(plan)} steps')
    records = []
    episodes_dir = tmp_path / 'episodes'
    with operator_session(ros, record_dir=episodes_dir, protocol=protocol) as session:
        step = None
        try:
            for step in plan:
                records.append(run_step(session, step))
            run = session.begin()  # the episode after the last step's
            session.stop(run)
            session.settled()
        except Exception as exc:
            name = step.name if step else 'set-up'
            raise AssertionError(f'seed {seed} (replay with {SEED_ENV}={seed}), step '
                                 f'{len(records) + 1} of {len(plan)}, {name!r}: {exc}') from exc
        finally:
            for number, record in enumerate(records, 1):
                print(f'{number:3d} {record.seconds:5.1f} s  {record.name}: {record.summary}')
            print('stalls of this side (steps rerun):', session.stalls or 'none')
            print('holds (what, s, allowed s):', session.holds)
            print('node RSS (KiB) after each step:', [kib for _, kib in session.rss_kib])
        published = [json.loads(text)['outcome'] for text in session.robot.outcomes]
        first, last = session.rss_kib[0][1], session.rss_kib[-1][1]
    outcomes = set(published)
    assert outcomes >= {'completed', 'stopped', 'safety', 'error'}, outcomes
    assert last - first <= RSS_GROWTH_KIB, (first, last, session.rss_kib)
    assert_every_episode_recorded(episodes_dir, published, tmp_path)


def assert_every_episode_recorded(episodes_dir, published, tmp_path):
    """One readable file per episode, ending as its ~/episode_outcome said; `report` draws."""
    files = sorted(episodes_dir.glob('*.mcap'))
    assert len(files) == len(published), (len(files), len(published))
    recorded = []
    for path in files:
        ends = read_episode(path).on(OUTCOME)
        assert len(ends) == 1, (path.name, len(ends))
        recorded.append(json.loads(ends[0].message.data)['outcome'])
    assert sorted(recorded) == sorted(published)
    for path in {files[0], files[-1], files[len(files) // 2]}:
        picture = tmp_path / f'{path.stem}.png'
        assert report_command.main([str(path), '--out', str(picture)]) == 0
        assert picture.stat().st_size > 10_000
