"""
package.xml's keys resolve with rosdep on Humble, Jazzy and Kilted, and name what the node needs.

`rosdep install --from-paths src -y` (the README's quick start) looks up every <*depend> key in
ros/rosdistro's rules; ../shared/rosdistro holds a snapshot of them and check_rosdep.sh, which
resolves each key for humble/jammy, jazzy/noble and kilted/noble with rosdep (a dev pin) and no
network. Where the snapshot is missing this skips, naming it.
"""

import ast
from pathlib import Path
import re
import subprocess
import sys

import pytest
from ros2_tools import REPO, shared_dir

PACKAGE_XML = REPO / 'package.xml'
DISTROS = ('humble', 'jazzy', 'kilted')
KEY = re.compile(r'<((?:build_|exec_|test_|build_export_|buildtool_)?depend)[^>]*>([^<]+)<')
# Python modules by the rosdep key that installs them (ROS packages: the module's own name).
SYSTEM_KEYS = {'httpx': 'python3-httpx', 'numpy': 'python3-numpy', 'PIL': 'python3-pil',
               'yaml': 'python3-yaml'}
# What runs on the robot: the node, the client it uses, the sim arm and the launch files. The
# gateway and the demo are optional extras (setup.py), not package.xml's.
# What a robot runs: the node and the client with what they import, the sim and its world.
ROBOT_PARTS = ('node', 'client', 'contract', 'runtime', 'world', 'sim')
ROBOT_CODE = tuple(f'sequence_ai_ros/{part}' for part in ROBOT_PARTS) + ('launch',)
ROBOT_MODULES = ('__init__',)


def keys(path=PACKAGE_XML, kind=None):
    return sorted({key for tag, key in KEY.findall(path.read_text())
                   if kind is None or tag == kind})


def check_rosdep(package_xml):
    """Run check_rosdep.sh on `package_xml`; skip if the snapshot or rosdep is missing."""
    rosdistro = shared_dir() / 'rosdistro'
    script = rosdistro / 'check_rosdep.sh'
    if not script.is_file():
        pytest.skip(f'no rosdep rules snapshot at {rosdistro} (check_rosdep.sh)')
    rosdep = Path(sys.executable).with_name('rosdep')
    if not rosdep.is_file():
        pytest.skip(f'rosdep is not installed in this venv ({rosdep}; requirements-dev.txt)')
    return subprocess.run(['bash', str(script), str(rosdistro), str(package_xml), str(rosdep)],
                          capture_output=True, text=True, timeout=300)


def test_every_key_resolves_on_humble_jazzy_and_kilted_and_a_key_without_a_rule_is_caught(
        tmp_path):
    # One rosdep pass (each distribution's `rosdep update` and resolves take tens of seconds):
    # package.xml's keys plus python3-starlette, which made the README's `rosdep install` fail
    # on every distribution. Exactly its three lookups may fail.
    text = PACKAGE_XML.read_text()
    assert 'python3-starlette' not in text
    checked = tmp_path / 'package.xml'
    extra = '  <exec_depend>python3-starlette</exec_depend>\n</package>'
    checked.write_text(text.replace('</package>', extra))
    result = check_rosdep(checked)
    assert result.returncode != 0
    failures = [line for line in result.stdout.splitlines() if line.startswith('FAIL ')]
    for distro, os_name in (('humble', 'jammy'), ('jazzy', 'noble'), ('kilted', 'noble')):
        assert any(line.startswith(f'FAIL {distro} ubuntu:{os_name} python3-starlette')
                   for line in failures), result.stdout
    assert len(failures) == 3, result.stdout
    count = len(keys()) * len(DISTROS)
    assert result.stdout.strip().splitlines()[-1] == f'{count} passed, 3 failed', result.stdout


def imported(paths):
    """Return the top-level modules that the .py files in `paths` import absolutely."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split('.')[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split('.')[0])
    return found - set(sys.stdlib_module_names) - {'sequence_ai_ros'}


def robot_files():
    files = [p for d in ROBOT_CODE for p in sorted((REPO / d).rglob('*.py'))]
    return files + [REPO / 'sequence_ai_ros' / f'{name}.py' for name in ROBOT_MODULES]


def test_what_the_robot_side_imports_is_an_exec_depend():
    modules = imported(robot_files())
    assert {'rclpy', 'httpx', 'launch_ros'} <= modules, 'the scan found too little'
    wanted = {SYSTEM_KEYS.get(module, module) for module in modules}
    assert wanted - set(keys(kind='exec_depend')) == set()


def test_the_gateway_and_the_demo_stay_optional():
    exec_keys = set(keys(kind='exec_depend'))
    assert not {'python3-starlette', 'python3-uvicorn', 'python3-matplotlib'} & exec_keys
    # ... and nothing a robot runs imports them.
    assert not {'starlette', 'uvicorn', 'matplotlib'} & imported(robot_files())
