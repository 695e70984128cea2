"""Shared test set-up: each run gets its own ROS domain so parallel runs never cross-talk."""

import os
import random

# Before any rclpy import: DDS reads these when the first context is created.
os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 100)))
os.environ['ROS_LOCALHOST_ONLY'] = '1'  # Humble
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'  # Jazzy and later

from fixtures_gateway import *  # noqa: E402,F401,F403
import pytest  # noqa: E402
from reliability import FaultMatrix  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember each phase's report so fault_matrix knows whether its test passed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f'report_{report.when}', report)


@pytest.fixture
def fault_matrix(request):
    """Rows for docs/RELIABILITY.md; written after the test with its pass/fail as `survived`."""
    matrix = FaultMatrix(request.node.nodeid)
    yield matrix
    report = getattr(request.node, 'report_call', None)
    matrix.flush(passed=bool(report and report.passed))


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'fault_matrix: records a row of docs/RELIABILITY.md (auto-applied)')


def pytest_collection_modifyitems(config, items):
    """Mark every test that records matrix rows, so `-m fault_matrix` reruns just those."""
    for item in items:
        if 'fault_matrix' in getattr(item, 'fixturenames', ()):
            item.add_marker(pytest.mark.fault_matrix)
