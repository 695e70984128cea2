"""
The package's rclpy, launch and launch_ros calls checked against Humble's API (humble_api.py).

Humble has no PyPI wheels, so this cannot run on Humble's rclpy here: it reads the package's
source. A name Humble lacks is allowed only inside `try: ... except ImportError` (a fallback);
a keyword argument Humble's signature lacks is not allowed at all.
"""

import ast
import importlib
import importlib.util
from pathlib import Path

import humble_api

REPO = Path(__file__).resolve().parents[2]
ROS_ROOTS = ('rclpy', 'launch', 'launch_ros')


def sources():
    yield from sorted((REPO / 'sequence_ai_ros').rglob('*.py'))
    yield from sorted((REPO / 'launch').glob('*.py'))


def _guarded(node, parents):
    """Return whether `node` sits in a try body whose handlers catch ImportError."""
    child = node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.Try) and child in parent.body:
            for handler in parent.handlers:
                names = ast.unparse(handler.type) if handler.type else 'Exception'
                if any(n in names for n in ('ImportError', 'ModuleNotFoundError', 'Exception')):
                    return True
        child = parent
    return False


def problems(source: str, where: str = '<source>') -> list[str]:
    """Return every use of an API Humble lacks (or lacks without a fallback) in `source`."""
    tree = ast.parse(source, where)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found, imported = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split('.')[0] in ROS_ROOTS:
            for alias in node.names:
                imported[alias.asname or alias.name] = (node.module, alias.name)
                found += _check_name(node.module, alias.name, _guarded(node, parents),
                                     f'{where}:{node.lineno}')
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split('.')[0] in ROS_ROOTS and alias.name != 'rclpy':
                    module, _, name = alias.name.rpartition('.')
                    found += _check_name(module, name, _guarded(node, parents),
                                         f'{where}:{node.lineno}')
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += _check_call(node, imported, f'{where}:{node.lineno}')
    return found


def _check_name(module: str, name: str, guarded: bool, at: str) -> list[str]:
    newer = (humble_api.NEWER_ONLY.get((module, name))
             or humble_api.NEWER_ONLY.get((module, None)))
    if newer is not None:
        return [] if guarded else [f'{at}: {module}.{name} is {newer}; import it in '
                                   'try/except ImportError with a Humble fallback']
    if name in humble_api.HUMBLE_NAMES.get(module, ()) or guarded:
        return []
    return [f'{at}: {module}.{name} is not in the table of Humble API (test/humble_api.py): '
            'check it on the humble branch and add it, or import it with a fallback']


def _check_call(call: ast.Call, imported: dict, at: str) -> list[str]:
    keywords = {k.arg for k in call.keywords if k.arg is not None}
    func = call.func
    if isinstance(func, ast.Name) and func.id in imported:
        target = imported[func.id]
        allowed = humble_api.HUMBLE_KEYWORDS.get(target)
        required = humble_api.HUMBLE_REQUIRED_KEYWORDS.get(target, set())
    elif isinstance(func, ast.Attribute) and func.attr in humble_api.HUMBLE_METHOD_KEYWORDS:
        target = ('', func.attr)
        allowed, required = humble_api.HUMBLE_METHOD_KEYWORDS[func.attr], set()
    elif isinstance(func, ast.Attribute) and ast.unparse(func) == 'rclpy.init':
        target = ('rclpy', 'init')
        allowed, required = humble_api.HUMBLE_INIT_KEYWORDS, set()
    else:
        return []
    name = '.'.join(filter(None, target))
    found = []
    if allowed is not None and keywords - allowed:
        found.append(f'{at}: {name}({", ".join(sorted(keywords - allowed))}=...): '
                     "not a keyword of Humble's signature")
    if required - keywords and not any(k.arg is None for k in call.keywords):
        found.append(f'{at}: {name} needs {", ".join(sorted(required - keywords))}= on Humble')
    return found


def scan(check, paths):
    """Return what `check(source, where)` finds in every file of `paths`."""
    return [problem for path in paths
            for problem in check(path.read_text(encoding='utf-8'), str(path.relative_to(REPO)))]


def test_the_package_uses_only_humbles_api_or_a_fallback():
    assert scan(problems, sources()) == []


def test_the_check_catches_each_newer_only_use():
    assert problems('from rclpy.experimental import EventsExecutor\n')
    assert problems('try:\n    from rclpy.experimental import EventsExecutor\n'
                    'except ImportError:\n    EventsExecutor = None\n') == []
    assert problems('import rclpy.event_handler\n')
    assert problems('node.create_timer(0.1, tick, autostart=False)\n')
    assert problems('from rclpy.node import Node\nNode("n", enable_logger_service=True)\n')
    assert problems('import rclpy\nrclpy.init(args=None, domain_id=3)\n') == []
    assert problems('import rclpy\nrclpy.init(args=None, unknown=3)\n')
    assert problems('from launch_ros.actions import LifecycleNode\n'
                    'LifecycleNode(package="p", executable="e", name="n")\n')
    assert problems('from rclpy.qos import QoSPresetProfiles\n')  # not in the table yet


def test_the_table_matches_this_rclpy_where_it_still_applies():
    # Every name the table says Humble has, this distribution has too: else the table is
    # wrong, or the package needs a fallback the other way.
    missing = []
    for module, names in humble_api.HUMBLE_NAMES.items():
        if module.split('.')[0] != 'rclpy':
            continue
        loaded = importlib.import_module(module)
        missing += [f'{module}.{n}' for n in names if not hasattr(loaded, n)
                    and importlib.util.find_spec(f'{module}.{n}') is None]
    assert missing == []


# -- message members whose Python type differs on Humble -------------------------------------

def every_source():
    yield from sources()
    for folder in ('test', 'bench', 'scripts'):
        yield from sorted((REPO / folder).rglob('*.py'))


def member_problems(source: str, where: str = '<source>') -> list[str]:
    """Return every read of a message member whose Python type differs on Humble, unguarded."""
    tree = ast.parse(source, where)
    imported = {alias.asname or alias.name: (node.module, alias.name)
                for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
                for alias in node.names}
    readers = dict(humble_api.FIELD_READERS[m] for m in imported.values()
                   if m in humble_api.FIELD_READERS)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in imported:
            module, cls = imported[node.value.id]
            humble, later = humble_api.MESSAGE_MEMBER_TYPES.get(
                (module, cls, node.attr), (None, None))
            if humble is not later:
                reader = humble_api.FIELD_READERS.get((module, cls), ('', 'a reader'))[1]
                found.append(f'{where}:{node.lineno}: {cls}.{node.attr} is {humble.__name__} '
                             f'on Humble, {later.__name__} later: use {reader}() and its '
                             'int constants')
        elif isinstance(node, ast.Compare):
            found += [f'{where}:{node.lineno}: .{o.attr} compared as it comes: read it with '
                      f'{readers[o.attr]}()' for o in (node.left, *node.comparators)
                      if isinstance(o, ast.Attribute) and o.attr in readers]
    return found


def test_no_message_member_is_compared_in_a_type_humble_changes():
    assert scan(member_problems, every_source()) == []


def test_the_member_check_catches_what_failed_on_humble():
    log = 'from rcl_interfaces.msg import Log\n'
    assert member_problems(log + 'ok = msg.level >= Log.ERROR\n')  # TypeError on Humble
    assert member_problems(log + 'ok = m.level == 40\n')
    assert member_problems('from rcl_interfaces.msg import Log as L\nok = L.WARN\n')
    assert member_problems(log + 'from sequence_ai_ros.runtime.log_level import ERROR, '
                           'log_level\nok = log_level(msg) >= ERROR\n') == []
    # DiagnosticStatus' level and constants are bytes on every distribution: no reader.
    assert member_problems('from diagnostic_msgs.msg import DiagnosticStatus as D\n'
                           'ok = s.level == D.ERROR\n') == []


def test_the_member_table_matches_this_distribution():
    wrong = []
    for (module, cls, member), (_, later) in humble_api.MESSAGE_MEMBER_TYPES.items():
        message = getattr(importlib.import_module(module), cls)
        is_field = member in message.get_fields_and_field_types()
        value = getattr(message() if is_field else message, member)
        if type(value) is not later:
            wrong.append(f'{cls}.{member}: {type(value).__name__}, table: {later.__name__}')
    assert wrong == []
