#!/usr/bin/env python3
"""
Run tests with ROS 2 reached only through the environment, as a sourced install provides it.

Usage: `python3.11 scripts/sourced_ros.py [--venv DIR] [--python python3.11] [PYTEST ARGS]`.

On a robot ROS comes from `source /opt/ros/<distro>/setup.bash`: rclpy and the message packages
are on PYTHONPATH, their libraries on LD_LIBRARY_PATH, nothing of ROS in the venv. This builds
that arrangement from requirements.txt (cached in DIR, `.venv/sourced` by default):

- DIR, a venv with requirements.txt's non-ROS pins, pytest, and this package (editable);
- DIR/ros, a prefix laid out as /opt/ros/<distro> is (lib/, share/, lib/python3.X/
  site-packages) holding the ros-* pins, installed with `pip install --prefix`;
- DIR/ros/setup.sh, exporting PYTHONPATH, LD_LIBRARY_PATH and AMENT_PREFIX_PATH for it.

It checks that the venv alone cannot import rclpy and that it can once setup.sh is sourced,
then runs pytest in a shell that sourced it. A child process given a replaced PYTHONPATH
loses rclpy there, as it would on a robot.
"""

import argparse
import os
from pathlib import Path
import subprocess
import sys

import cached_venv

REPO = cached_venv.REPO
DEFAULT_TESTS = ('test/system/test_node.py', 'test/system/test_node_lifecycle_abuse.py')
# What a sourced setup script decides; the caller's own values would blur the check.
SOURCED = ('PYTHONPATH', 'LD_LIBRARY_PATH', 'AMENT_PREFIX_PATH', 'ROS_DISTRO',
           '_ROS_WHEELS_BOOTSTRAP_COMPLETE', 'VIRTUAL_ENV')
PROBE = ('import rclpy; from sensor_msgs.msg import JointState; rclpy.init(); '
         'node = rclpy.create_node("sourced_probe"); node.create_publisher(JointState, "j", 1); '
         'print(rclpy.__file__); rclpy.shutdown()')
SETUP = """\
# What `source /opt/ros/<distro>/setup.sh` exports, for the ROS 2 packages under this prefix.
_prefix='{prefix}'
export AMENT_PREFIX_PATH="$_prefix${{AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}}"
export PYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}"
# The wheels' RPATHs point outside the prefix: their bundled libraries are found through this.
export LD_LIBRARY_PATH="$_prefix/lib:{libs}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
export PATH="$_prefix/bin:$PATH"
unset _prefix
"""


def clean_environment() -> dict[str, str]:
    """Return this process's environment without anything a setup script would set."""
    return {k: v for k, v in os.environ.items() if k not in SOURCED}


def sourced(setup: Path, *command: str | Path) -> list[str]:
    """Return `command` run by sh after sourcing `setup`, as a user's shell would."""
    return ['sh', '-c', '. "$0" && exec "$@"', str(setup), *(str(c) for c in command)]


def build_overlay(venv: Path) -> None:
    """Install the ros-* pins under venv/ros and write its setup.sh; check both ways."""
    prefix = venv / 'ros'
    listing = venv / 'ros-requirements.txt'
    listing.write_text('\n'.join(cached_venv.pins(REPO / 'requirements.txt',
                                                  lambda name: name.startswith('ros-'))) + '\n')
    python = venv / 'bin' / 'python'
    # The venv's pip: whatever the venv already holds (numpy, PyYAML) is not installed again.
    cached_venv.run(python, *cached_venv.PIP, '--prefix', prefix, '-r', listing)
    cached_venv.run(python, *cached_venv.PIP, '--no-deps', '-e', REPO)
    (site,) = prefix.glob('lib/python3*/site-packages')
    libs = ':'.join(str(p) for p in sorted(site.glob('ros_*.libs')))
    setup = prefix / 'setup.sh'
    setup.write_text(SETUP.format(prefix=prefix, site=site, libs=libs))
    bare = subprocess.run([python, '-c', 'import rclpy'], env=clean_environment(),
                          capture_output=True, cwd='/')
    if bare.returncode == 0:
        sys.exit('the venv imports rclpy without the setup script: the check would prove nothing')
    cached_venv.run(*sourced(setup, python, '-c', PROBE), env=clean_environment(), cwd='/')


def main(argv: list[str]) -> int:
    """Build (or reuse) the venv and its ROS prefix, then run pytest with it sourced."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--venv', type=Path, default=REPO / '.venv' / 'sourced')
    parser.add_argument('--python', default='python3.11',
                        help='the interpreter the ROS wheels are built for')
    args, pytest_args = parser.parse_known_args(argv)
    venv = args.venv.resolve()
    requirements = [
        *cached_venv.pins(REPO / 'requirements.txt', lambda name: not name.startswith('ros-')),
        *cached_venv.pins(REPO / 'requirements-dev.txt',
                          lambda name: name in ('pytest', 'pytest-rerunfailures'))]
    inputs = [REPO / 'requirements.txt', REPO / 'requirements-dev.txt', REPO / 'setup.py',
              Path(__file__), Path(cached_venv.__file__)]
    python = cached_venv.ensure(venv, args.python, inputs, requirements, after=build_overlay)
    tests = cached_venv.with_default_tests(pytest_args, DEFAULT_TESTS)
    command = sourced(venv / 'ros' / 'setup.sh', python, '-m', 'pytest', *tests)
    print('== ROS 2 from a sourced prefix (PYTHONPATH, LD_LIBRARY_PATH), none in the venv:',
          ' '.join(tests), flush=True)
    return subprocess.run(command, env=clean_environment(), cwd=REPO).returncode


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
