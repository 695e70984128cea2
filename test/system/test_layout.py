"""The package and test trees as docs/DEVELOPMENT.md says, small modules, distinct executables."""

import ast
from pathlib import Path
import re
import subprocess
import sys

from sequence_ai_ros.harness.child_processes import child_env

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / 'sequence_ai_ros'
# "no module in the package is over ~350 lines": the margin is for a docstring, not a job.
MAX_MODULE_LINES = 360
# Who may import whom: the client imports only itself and the contract; the gateway and the
# world model nothing of the client; the contract nothing of the package.
MAY_NOT_IMPORT = {
    'client': ('node', 'gateway', 'sim', 'demo', 'harness', 'runtime', 'world', 'faults'),
    'contract': ('client', 'node', 'gateway', 'sim', 'demo', 'harness', 'runtime', 'world'),
    'gateway': ('client', 'node', 'sim', 'demo', 'harness', 'runtime'),
    'world': ('client', 'node', 'gateway', 'sim', 'demo', 'harness', 'runtime'),
    'node': ('gateway', 'sim', 'demo', 'harness'),
}
# The gateway's process wrapper starts a gateway for tests, benches and the demo: it builds the
# child's environment with the harness's one rule, as every other spawn does.
MAY_IMPORT_ANYWAY = {('gateway/process.py', 'harness')}
# Outside sequence_ai_ros/client the client is `sequence_ai_ros` or the names
# `sequence_ai_ros.client` exports; its modules (client/_*.py) are its own. These tests reach one
# private name each, and say why.
MAY_IMPORT_PRIVATE = {
    'test/realtime/test_client.py': 'resets the once-per-process validate=None warning (_policy)',
    'test/unit/test_engine_rtc.py': 'checks d against the RTC delay arithmetic itself (_rtc)',
}
PRIVATE_CLIENT_ROOTS = ('sequence_ai_ros', 'bench', 'scripts', 'test')


def modules():
    return sorted(p for p in PACKAGE.rglob('*.py'))


def test_no_module_in_the_package_is_over_the_limit():
    long = {p.relative_to(REPO).as_posix(): n for p in modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f'split these by job: {long}'


def test_the_documented_layout_names_every_subpackage():
    page = (REPO / 'docs/DEVELOPMENT.md').read_text()
    layout = page[page.index('## Layout'):]
    layout = layout[:layout.index('```', layout.index('```') + 3)]
    listed = set(re.findall(r'^  (\w+)/', layout, flags=re.MULTILINE))
    present = {p.parent.name for p in PACKAGE.glob('*/__init__.py')}
    assert listed == present, \
        f'docs/DEVELOPMENT.md layout {sorted(listed)} vs package {sorted(present)}'


def _imported_subpackages(path):
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's own package
                base = path.relative_to(PACKAGE).parts[:-node.level]
                names = ['.'.join(('sequence_ai_ros', *base, node.module or ''))]
            elif node.module:
                names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split('.')
            if parts[0] == 'sequence_ai_ros' and len(parts) > 1 and parts[1]:
                found.add(parts[1])
    return found


def test_the_layers_import_only_what_they_may():
    broken = []
    for path in modules():
        layer = path.relative_to(PACKAGE).parts[0]
        for target in _imported_subpackages(path) & set(MAY_NOT_IMPORT.get(layer, ())):
            if (path.relative_to(PACKAGE).as_posix(), target) in MAY_IMPORT_ANYWAY:
                continue
            broken.append(f'{path.relative_to(REPO)} imports sequence_ai_ros.{target}')
    assert not broken, broken


def _imported_modules(path):
    """Every module `path` imports, `from x import y` counted as x.y too (y may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.relative_to(REPO).parts[:-node.level]
                module = '.'.join((*base, node.module or '')).rstrip('.')
            else:
                module = node.module or ''
            found.add(module)
            found.update(f'{module}.{alias.name}' for alias in node.names)
    return found


def test_the_client_modules_are_private_to_the_client():
    import sequence_ai_ros.client as client
    reached = []
    for root in PRIVATE_CLIENT_ROOTS:
        for path in sorted((REPO / root).rglob('*.py')):
            where = path.relative_to(REPO).as_posix()
            if where.startswith('sequence_ai_ros/client/') or where in MAY_IMPORT_PRIVATE:
                continue
            private = sorted(m for m in _imported_modules(path)
                             if m.startswith('sequence_ai_ros.client.')
                             and m.split('.')[2] not in client.__all__)
            if private:
                reached.append(f'{where}: {private}')
    assert not reached, f'import these from sequence_ai_ros or sequence_ai_ros.client: {reached}'


def test_the_client_package_has_only_private_modules_and_exports_the_public_api():
    import sequence_ai_ros
    import sequence_ai_ros.client as client
    public = sorted(p.name for p in (PACKAGE / 'client').glob('*.py')
                    if not p.name.startswith('_'))
    assert not public, f'client modules are private (a leading underscore): {public}'
    assert set(sequence_ai_ros.__all__) <= set(client.__all__)
    for name in client.__all__:
        assert getattr(client, name) is not None, name
    for name in sequence_ai_ros.__all__:
        assert getattr(sequence_ai_ros, name) is getattr(client, name), name


def test_every_executable_is_named_for_the_package():
    setup = (REPO / 'setup.py').read_text()
    scripts = re.findall(r"'([\w-]+) = sequence_ai_ros\.", setup)
    assert scripts and all(s.startswith(('sequence_ai_', 'sequence-ai-')) for s in scripts), \
        scripts


TEST_FOLDERS = ('unit', 'realtime', 'ros', 'system', 'published')
NO_ROS_FOLDERS = ('unit', 'realtime')
# The published client's folder runs in a venv of its own (scripts/published_client.py).
PUBLISHED_PINS = ('sequence-ai==0.51.5', 'sequence-base==0.7.0')


def test_every_test_file_is_in_one_of_the_five_folders():
    test = REPO / 'test'
    astray = sorted(p.relative_to(REPO).as_posix() for p in test.rglob('test_*.py')
                    if p.parent.name not in TEST_FOLDERS or p.parent.parent != test)
    assert not astray, f'test/{", ".join(TEST_FOLDERS)}, by what the file needs: {astray}'


def test_the_published_folder_pins_the_published_client_and_imports_no_client_of_ours():
    folder = REPO / 'test' / 'published'
    pins = (folder / 'requirements.txt').read_text().splitlines()
    assert set(PUBLISHED_PINS) <= set(pins)
    assert all(re.fullmatch(r'[\w.-]+==[\w.]+', line) for line in pins
               if line and not line.startswith('#')), 'every requirement pinned'
    for path in sorted(folder.glob('*.py')):
        imported = {node.module for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.ImportFrom) and not node.level
                    and (node.module or '').startswith('sequence_ai_ros')}
        # GatewayProcess only: the client under test is the published one.
        assert imported <= {'sequence_ai_ros.gateway.process'}, f'{path.name}: {imported}'
    makefile = (REPO / 'Makefile').read_text()
    assert re.search(r'^test:.* test-published$', makefile, flags=re.MULTILINE)


def test_the_wall_clock_files_are_system_tests():
    from conftest import WALL_CLOCK_FILES
    missing = sorted(name for name in WALL_CLOCK_FILES
                     if not (REPO / 'test' / 'system' / name).is_file())
    assert not missing, f'conftest.WALL_CLOCK_FILES names files not in test/system: {missing}'


def test_the_unit_and_realtime_tests_load_nothing_of_ros():
    """test/unit's and test/realtime's rule: their files and their support import no ROS."""
    code = ('import importlib, sys\n'
            'sys.path[:0] = [sys.argv[1]]\n'
            'for name in sys.argv[2:]:\n'
            '    importlib.import_module(name)\n'
            'print(sorted(m for m in sys.modules if m.split(".")[0] == "rclpy"\n'
            '             or m.split(".")[0].endswith(("_msgs", "_srvs"))))\n')
    names = [f'{folder}.{p.stem}' for folder in NO_ROS_FOLDERS
             for p in sorted((REPO / 'test' / folder).glob('test_*.py'))]
    assert len(names) > 20, names
    result = subprocess.run([sys.executable, '-c', code, str(REPO / 'test'), *names],
                            capture_output=True, text=True, env=child_env(), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == '[]', f'a test without ROS loads it: {result.stdout[:1000]}'
