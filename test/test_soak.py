"""
The chaos soak, short (issue #13): SHORT_MINUTES of randomized faults over one policy node.

`make soak` (scripts/soak.py) runs the long one; both run test/soak_harness.py, which says what
is injected (network faults through the FaultProxy, the gateway killed, frozen with SIGSTOP or
restarted cold, bad and stale inputs, the safety gate, the hold service absent or refusing,
lifecycle calls and bad calls) and what is checked all along. The schedule's seed is drawn and
printed; SEQUENCE_AI_ROS_SOAK_SEED replays it.
"""

import os
import random

from soak_harness import soak
from soak_report import table
from test_node_lifecycle_abuse import no_growth

SHORT_MINUTES = 1.0
SEED_ENV = 'SEQUENCE_AI_ROS_SOAK_SEED'
RSS_GROWTH_KIB = 32 * 1024


def test_a_short_soak_keeps_every_invariant(ros):
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(1, 10**6))
    where = f'seed {seed} (replay with {SEED_ENV}={seed})'
    print(f'soak: {where}')
    report = soak(ros, SHORT_MINUTES, seed)
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
