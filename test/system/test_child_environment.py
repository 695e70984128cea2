"""
Child processes keep the PYTHONPATH they inherit: a sourced ROS install reaches rclpy through it.

`source /opt/ros/<distro>/setup.bash` (and `colcon test`) put rclpy and the message packages on
PYTHONPATH; a child started with PYTHONPATH replaced by the checkout cannot import rclpy.
"""

import ast
import os
from pathlib import Path
import subprocess
import sys

import pytest
from sequence_ai_ros.harness.child_processes import child_env, ros_environment

REPO = Path(__file__).resolve().parents[2]
SCANNED = ('sequence_ai_ros', 'test', 'bench', 'scripts', 'launch')
# The only files that may name PYTHONPATH, and why.
ALLOWED = {
    'sequence_ai_ros/harness/child_processes.py': 'the one place a child environment is built',
    'sequence_ai_ros/gateway/ray_serve/launch.py': "passes this process's own on to Ray workers",
    'scripts/sourced_ros.py': 'writes the setup script of a sourced ROS install',
    'scripts/cached_venv.py': "runs a venv's own pytest (Ubuntu 22.04's, the published "
                              "client's, LeRobot's) without the caller's",
    'test/system/test_child_environment.py': 'this test',
}


def python_files():
    for top in SCANNED:
        yield from sorted((REPO / top).rglob('*.py'))


def naming_pythonpath(path: Path) -> list[int]:
    """Return the lines where `path` names PYTHONPATH (a string, a keyword, an attribute)."""
    tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if 'PYTHONPATH' in node.value and not _is_docstring(node, tree):
                lines.append(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg == 'PYTHONPATH':
            lines.append(node.value.lineno)
    return lines


def _is_docstring(constant: ast.Constant, tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and body[0].value is constant:
                return True
    return False


def test_no_spawn_site_sets_pythonpath_itself():
    found = {}
    for path in python_files():
        relative = path.relative_to(REPO).as_posix()
        if relative not in ALLOWED and (lines := naming_pythonpath(path)):
            found[relative] = lines
    assert found == {}, ('these set PYTHONPATH themselves; build the environment with '
                         f'sequence_ai_ros.harness.child_processes.child_env: {found}')


def test_the_scan_sees_each_way_of_replacing_it(tmp_path):
    # The check itself: every form a replaced PYTHONPATH took in this repository is caught.
    bad = tmp_path / 'bad.py'
    bad.write_text('import os\n'
                   "a = dict(os.environ, PYTHONPATH='x')\n"
                   "b = {'PYTHONPATH': 'x'}\n"
                   "os.environ['PYTHONPATH'] = 'x'\n"
                   "c = f'{os.pathsep}PYTHONPATH'\n")
    assert naming_pythonpath(bad) == [2, 3, 4, 5]


def test_the_inherited_path_stays_after_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(['/opt/ros/humble/lib/python3.10/x', '']))
    env = child_env(tmp_path, ROS_DOMAIN_ID='7')
    parts = env['PYTHONPATH'].split(os.pathsep)
    package_parent = str(Path(sys.modules['sequence_ai_ros'].__file__).resolve().parents[1])
    assert parts[:2] == [str(tmp_path), package_parent]
    assert '/opt/ros/humble/lib/python3.10/x' in parts[2:]
    assert env['ROS_DOMAIN_ID'] == '7'
    assert ros_environment(9)['PYTHONPATH'] == os.pathsep.join(parts[1:])
    with pytest.raises(ValueError, match='positional'):
        child_env(PYTHONPATH=str(tmp_path))


def test_a_child_imports_what_only_the_inherited_path_provides(monkeypatch, tmp_path):
    # What a sourced install is to the child: a module reachable through PYTHONPATH alone.
    (tmp_path / 'sourced_only_module.py').write_text("WHERE = 'sourced'\n")
    monkeypatch.setenv('PYTHONPATH', str(tmp_path))
    code = ('import sourced_only_module, sequence_ai_ros; '
            'print(sourced_only_module.WHERE, sequence_ai_ros.__file__)')
    result = subprocess.run([sys.executable, '-c', code], env=child_env(), cwd='/',
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    where, package = result.stdout.split()
    assert where == 'sourced'
    assert Path(package).resolve() == Path(sys.modules['sequence_ai_ros'].__file__).resolve()
