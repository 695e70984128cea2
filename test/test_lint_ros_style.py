"""ROS 2's own style checks over the package, as the tests `ros2 pkg create` generates run them."""

# ament_flake8 (99 columns, single quotes, google import order, PEP 257 docstrings through its
# plugins) and ament_pep257 ('ament' convention). Both come from PyPI (ros-ament-flake8,
# ros-ament-pep257, pinned in requirements-dev.txt with the flake8 plugins ament_flake8
# depends on) or from a ROS 2 install; without them these tests skip.

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Not source: the virtualenv, and the output of an in-place `colcon build` if someone ran one.
# Anchored at the repo root: flake8 matches a bare 'log' against every directory's name. Both
# tools also skip every directory whose name starts with '.' or '_' (.git, caches) by themselves.
EXCLUDE = ['./.venv', './build', './install', './log']


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8(monkeypatch):
    main = pytest.importorskip('ament_flake8.main', reason='ament_flake8 is not installed')
    monkeypatch.chdir(REPO)
    rc, errors = main.main_with_errors(argv=['--exclude', *EXCLUDE])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257(monkeypatch):
    main = pytest.importorskip('ament_pep257.main', reason='ament_pep257 is not installed')
    monkeypatch.chdir(REPO)
    rc = main.main(argv=['.', 'test', '--exclude', *EXCLUDE])
    assert rc == 0, 'Found code style errors / warnings'
