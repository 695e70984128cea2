"""
Shared test set-up: each run gets its own ROS domain so parallel runs never cross-talk.

The tests sit in five folders by what they need (test/unit, test/realtime, test/ros,
test/system, and test/published, which runs in the published sequence-ai 0.51.5 client's own
venv: each folder's __init__.py says its rule); their support modules sit here in test/,
importable from all of them, as pytest puts this folder on sys.path (the folders are packages
below it).
"""

import atexit
import os
import shutil
import tempfile

from fixtures_gateway import *  # noqa: F401,F403
import pytest
from ros2_tools import ros_distro
from sequence_ai_ros.harness.child_processes import (
    domain_in_use,
    join_private_domain,
    random_domain_id,
)
from sequence_ai_ros.harness.fault_matrix import FaultMatrix

# Before any rclpy context exists (none of the imports above makes one): DDS reads these when
# the first is created. A pytest-xdist worker gwN takes the run's domain plus N (or, if that is
# in use, a free one), so two workers never see each other's nodes.
join_private_domain(ros_distro())
_WORKER = int(os.environ.get('PYTEST_XDIST_WORKER', 'gw0')[2:])
if _WORKER:
    _DOMAIN = int(os.environ['ROS_DOMAIN_ID']) + _WORKER
    os.environ['ROS_DOMAIN_ID'] = str(random_domain_id() if domain_in_use(_DOMAIN) else _DOMAIN)
# Every node the tests start records its episodes (and ROS its logs) under ROS_HOME: one folder
# per run, not the user's ~/.ros, removed at the end unless the caller chose one.
if 'ROS_HOME' not in os.environ:
    os.environ['ROS_HOME'] = tempfile.mkdtemp(prefix='sequence_ai_ros_test_home_')
    atexit.register(shutil.rmtree, os.environ['ROS_HOME'], ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember each phase's report so fault_matrix knows whether its test passed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f'report_{report.when}', report)


@pytest.fixture(scope='module')
def ros():
    """Yield the test's own rclpy context, spinning on a thread; one per test module."""
    # Imported here, so runs of test/unit never load rclpy.
    from sequence_ai_ros.harness.ros_side import RosSide
    side = RosSide()
    yield side
    side.close()


@pytest.fixture
def fault_matrix(request):
    """Rows for docs/RELIABILITY.md; written after the test with its pass/fail as `survived`."""
    matrix = FaultMatrix(request.node.nodeid)
    yield matrix
    report = getattr(request.node, 'report_call', None)
    matrix.flush(passed=bool(report and report.passed))


# Files whose tests run nodes, gateways and simulated arms as processes over DDS and assert on
# wall-clock time. On two shared cores a neighbour's burst can delay a callback past any fixed
# margin, so these get one rerun (pytest-rerunfailures); `-raR` prints every rerun, and
# scripts/reliability_matrix.py runs them without reruns so the matrix shows every failure.
# All are in test/system (test_layout checks).
WALL_CLOCK_FILES = frozenset({
    'test_demo.py', 'test_load.py', 'test_node.py', 'test_node_faults.py',
    'test_node_controllers.py', 'test_node_gateway_faults.py', 'test_node_lifecycle_abuse.py',
    'test_operator_session.py', 'test_ros2_launch.py', 'test_sim_jtc_node.py',
    'test_sim_node.py', 'test_soak.py', 'test_spin.py', 'test_node_trajectory_modes.py',
    'test_forward_modes.py', 'test_node_gripper_action.py', 'test_node_record.py',
    'test_openpi_ros.py'})
WALL_CLOCK_RERUNS = 1
# Tests that start a Ray cluster (a dozen processes) run after the others, in one process: one
# cluster at a time, and none beside the other worker's processes on two shared cores.
RAY_TESTS = 'test_ray_'


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'fault_matrix: records a row of docs/RELIABILITY.md (auto-applied)')
    config.addinivalue_line(
        'markers', 'wall_clock: times real processes over DDS; rerun once on failure '
                   '(auto-applied)')
    # launch_testing's own marker: its plugin is off here (setup.cfg), launch_test reads it.
    config.addinivalue_line(
        'markers', 'launch_test: a launch_testing description (run by launch_test)')
    config.addinivalue_line(
        'markers', 'ray: starts a Ray cluster; `make test` runs these alone, one process '
                   '(auto-applied to test_ray_* files and functions)')


# The failures that a rerun then passed: pytest-rerunfailures names the test only.
RERUN_CAUSE_CHARS = 2000
_rerun_causes: list[tuple[str, str]] = []


def pytest_runtest_logreport(report):
    if report.outcome == 'rerun':
        _rerun_causes.append((report.nodeid, report.longreprtext[-RERUN_CAUSE_CHARS:]))


def pytest_terminal_summary(terminalreporter):
    """Print why each rerun ran, so that a failure a rerun hid can still be looked into."""
    if _rerun_causes:
        terminalreporter.section('why each rerun ran')
        for nodeid, cause in _rerun_causes:
            terminalreporter.write_line(f'{nodeid}:\n{cause}\n')


def pytest_collection_modifyitems(config, items):
    """Mark matrix tests (`-m fault_matrix` reruns just those), wall-clock and Ray tests."""
    rerun = config.pluginmanager.hasplugin('rerunfailures')
    for item in items:
        if RAY_TESTS in item.nodeid:
            item.add_marker(pytest.mark.ray)
        if 'fault_matrix' in getattr(item, 'fixturenames', ()):
            item.add_marker(pytest.mark.fault_matrix)
        if item.path.name in WALL_CLOCK_FILES:
            item.add_marker(pytest.mark.wall_clock)
            if rerun:
                item.add_marker(pytest.mark.flaky(reruns=WALL_CLOCK_RERUNS, reruns_delay=2))
