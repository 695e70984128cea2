"""
The chaos soak, short: SHORT_MINUTES of randomized faults over one policy node.

`make soak` (scripts/soak.py) runs the long one; both run test/soak_harness.py, which says what
is injected (network faults through the FaultProxy, the gateway killed, frozen with SIGSTOP or
restarted cold, bad and stale inputs, the safety gate, the hold service absent or refusing,
lifecycle calls and bad calls) and what is checked all along. The schedule's seed is drawn and
printed; SEQUENCE_AI_ROS_SOAK_SEED replays it. scripts/soak.py runs this test for longer
(SEQUENCE_AI_ROS_SOAK_MINUTES) and reads its report from SEQUENCE_AI_ROS_SOAK_REPORT.
"""

import json
import os
from pathlib import Path
import random

from sequence_ai_ros.harness.soak_report import table
from soak_harness import soak
from system.test_node_lifecycle_abuse import no_growth

SHORT_MINUTES = 1.0
SEED_ENV = 'SEQUENCE_AI_ROS_SOAK_SEED'
MINUTES_ENV = 'SEQUENCE_AI_ROS_SOAK_MINUTES'
REPORT_ENV = 'SEQUENCE_AI_ROS_SOAK_REPORT'
RSS_GROWTH_KIB = 32 * 1024


def test_a_short_soak_keeps_every_invariant(ros):
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(1, 10**6))
    where = f'seed {seed} (replay with {SEED_ENV}={seed})'
    print(f'soak: {where}')
    report = soak(ros, float(os.environ.get(MINUTES_ENV) or SHORT_MINUTES), seed)
    if os.environ.get(REPORT_ENV):  # before the assertions: a failed soak is reported too
        Path(os.environ[REPORT_ENV]).write_text(json.dumps(report, indent=1) + '\n',
                                                encoding='utf-8')
    print(table(report))
    assert report['unsafe_commands'] == 0, (where, report['unsafe'])
    assert report['holds_late'] == 0, (where, report['late'])
    assert report['failures'] == [], (where, report['failures'])
    assert report['process_alive'] and report['tracebacks'] == 0, where
    assert no_growth(tuple(report['baseline']), tuple(report['final'])), (where, report)
    first, last = report['rss_kib']
    assert last - first <= RSS_GROWTH_KIB, (where, report['rss_kib'])
    # Really a schedule of faults: many steps of many kinds, episodes ending every way.
    assert report['steps'] >= 15 and len(report['faults_by_kind']) >= 10, report
    assert report['holds_due'] >= 10, report


def test_rewriting_the_fault_matrix_keeps_the_soak_section():
    """scripts/reliability_matrix.py writes docs/RELIABILITY.md whole; the soak's part stays."""
    import importlib.util
    from pathlib import Path

    from sequence_ai_ros.harness.soak_report import (
        BEGIN,
        END,
        keep_section,
        replace_section,
        section,
    )
    script = Path(__file__).resolve().parents[2] / 'scripts' / 'reliability_matrix.py'
    spec = importlib.util.spec_from_file_location('reliability_matrix', script)
    matrix = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(matrix)

    def report(minutes):
        return {'minutes': minutes, 'seed': 5, 'wall_s': 70.0, 'steps': 3, 'episodes': 4,
                'outcomes': {'stopped': 4}, 'unsafe_commands': 0, 'holds_due': 3,
                'holds_late': 0, 'tightest_hold': ('stop_episode', 0.01, 0.51), 'failures': [],
                'stalls': [], 'process_alive': True, 'tracebacks': 0,
                'samples': [(0.0, 100, 20, 19), (60.0, 101, 20, 19)],
                'slopes_per_hour': {'rss_kib': 60.0, 'fds': 0.0, 'threads': 0.0},
                'faults_by_kind': {'stop service': 3}, 'areas': {'stop service': 'ending'}}

    first = section(report(1.0), 'scripts/soak.py --minutes 1 --seed 5')
    doc = replace_section(matrix.render([], 0, 1.0, []), first)
    regenerated = keep_section(matrix.render([], 0, 2.0, []), doc)
    assert regenerated.count(BEGIN) == regenerated.count(END) == 1
    assert first.strip() in regenerated and regenerated.startswith('# Reliability')
    second = section(report(20.0), 'scripts/soak.py --minutes 20 --seed 5')
    replaced = replace_section(regenerated, second)
    assert replaced.count(BEGIN) == 1 and second.strip() in replaced
    assert first.strip() not in replaced
    assert keep_section('# new\n', '# old, no soak yet\n') == '# new\n'
