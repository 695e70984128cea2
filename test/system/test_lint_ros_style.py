"""ROS 2's own style checks over the package, as the tests `ros2 pkg create` generates run them."""

# ament_flake8 (99 columns, single quotes, google import order, PEP 257 docstrings through its
# plugins) and ament_pep257 ('ament' convention). Both come from PyPI (ros-ament-flake8,
# ros-ament-pep257, pinned in requirements-dev.txt with the flake8 plugins ament_flake8
# depends on) or from a ROS 2 install; without them these tests skip.
#
# The generated tests call main_with_errors() / main() in the pytest process. Here each runs
# the same main() with the same arguments in a child interpreter (as the ament_flake8 and
# ament_pep257 commands do), because this suite also times ROS message delivery in the pytest
# process: in-process, the linters leave their mark on it (flake8 forks its workers from it,
# ament_pep257 changes pydocstyle's log level), and run just before test_node.py they made its
# first, timing-sensitive test fail in every full run tried; in a child, in none.

import importlib.util
from pathlib import Path
import subprocess
import sys

import pytest

REPO = Path(__file__).resolve().parents[2]
# Not source: the virtualenv, and the output of an in-place `colcon build` if someone ran one.
# Anchored at the repo root: flake8 matches a bare 'log' against every directory's name. Both
# tools also skip every directory whose name starts with '.' or '_' (.git, caches) by themselves.
EXCLUDE = ['./.venv', './build', './install', './log']


def run_linter(package, *argv):
    """Run `python -m <package>.main *argv` from the repo root; skip if it is not installed."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(f'{package} is not installed')
    result = subprocess.run([sys.executable, '-m', f'{package}.main', *argv], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    # Keep what says what is wrong; drop the lists of the files that were checked.
    report = result.stdout.split('\nChecked files:')[0]
    lines = [line for line in report.splitlines() if not line.startswith('checking ')]
    return result.returncode, '\n'.join(lines + [result.stderr])


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    rc, report = run_linter('ament_flake8', '--exclude', *EXCLUDE)
    assert rc == 0, f'ament_flake8 found code style errors / warnings:\n{report}'


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    rc, report = run_linter('ament_pep257', '.', 'test', '--exclude', *EXCLUDE)
    assert rc == 0, f'ament_pep257 found code style errors / warnings:\n{report}'
