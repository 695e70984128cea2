"""The package tree as docs/DEVELOPMENT.md says, small modules, executables that cannot collide."""

import ast
from pathlib import Path
import re

REPO = Path(__file__).resolve().parents[1]
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


def test_every_executable_is_named_for_the_package():
    setup = (REPO / 'setup.py').read_text()
    scripts = re.findall(r"'([\w-]+) = sequence_ai_ros\.", setup)
    assert scripts and all(s.startswith(('sequence_ai_', 'sequence-ai-')) for s in scripts), \
        scripts
