"""`colcon build` of a copy of the repo: the installed layout a ROS 2 user gets."""

# The build runs in a temporary workspace (src/ holds a copy of the repo without .venv, .git and
# build output), so nothing is written into the repo. ~2 s.

import os
from pathlib import Path
import subprocess
import sys

import pytest
from ros2_tools import colcon_install, PACKAGE, REPO, site_packages
from sequence_ai_ros.harness.child_processes import child_env

EXECUTABLES = ('sequence_ai_policy_node', 'sequence_ai_sim_arm', 'sequence_ai_gateway',
               'sequence-ai-ros')


@pytest.fixture(scope='module')
def install(tmp_path_factory):
    """Build the package in a fresh workspace; return its install/sequence_ai_ros prefix."""
    before = sorted(p.name for p in REPO.iterdir())
    prefix = colcon_install(tmp_path_factory.mktemp('ws'))
    assert sorted(p.name for p in REPO.iterdir()) == before, 'the build wrote into the repo'
    return prefix


@pytest.mark.parametrize('name', EXECUTABLES)
def test_executables_in_lib_package(install, name):
    path = install / 'lib' / PACKAGE / name
    assert path.is_file()
    assert os.access(path, os.X_OK)


def test_launch_and_config_files_are_shared(install):
    share = install / 'share' / PACKAGE
    assert sorted(p.name for p in (share / 'launch').glob('*.launch.py')) == \
        sorted(p.name for p in (REPO / 'launch').glob('*.launch.py'))
    assert sorted(p.name for p in (share / 'config').glob('*.yaml')) == \
        sorted(p.name for p in (REPO / 'config').glob('*.yaml'))
    assert len(list((share / 'launch').glob('*.launch.py'))) >= 3
    assert len(list((share / 'config').glob('*.yaml'))) >= 4
    assert (share / 'package.xml').read_text() == (REPO / 'package.xml').read_text()


def test_package_is_in_the_ament_index(install, monkeypatch):
    assert (install / 'share/ament_index/resource_index/packages' / PACKAGE).is_file()
    packages = pytest.importorskip('ament_index_python.packages')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(install))
    # What FindPackageShare and ExecutableInPackage resolve in the launch files.
    assert Path(packages.get_package_share_directory(PACKAGE)) == install / 'share' / PACKAGE


def test_installed_python_package_has_its_data(install):
    package = site_packages(install) / PACKAGE
    assert (package / 'gateway' / 'catalogue.json').is_file()
    assert (package / '__init__.py').is_file()
    assert not (site_packages(install) / 'test').exists()


def test_installed_executable_runs_from_the_install_tree(install, tmp_path):
    # The install tree first: it, not the checkout also on the path, must provide the package.
    env = child_env(site_packages(install))
    where = subprocess.run(
        [sys.executable, '-c', 'import sequence_ai_ros.gateway as g; print(g.__file__)'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(install)
    result = subprocess.run([str(install / 'lib' / PACKAGE / 'sequence_ai_gateway'), '--help'],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert '--time-scale' in result.stdout
