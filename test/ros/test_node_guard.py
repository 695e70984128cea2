"""The one guard every rclpy entry passes through, and the causes it was built for."""

import ast
import inspect
from pathlib import Path
import time

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
import pytest
import rclpy
from ros_harness import wait_until
from sequence_ai_ros.harness.service_calls import call_service
from sequence_ai_ros.node.guard import CallbackGuard, refuse_service
from spun_nodes import spun_nodes
from std_srvs.srv import Trigger

REPO = Path(__file__).resolve().parents[2]
SEVERITIES = {'debug', 'info', 'warning', 'warn', 'error', 'fatal'}


class Lines:
    """A logger that keeps what it is given (the guard's output is the behaviour here)."""

    def __init__(self):
        self.lines = []

    def error(self, text):
        self.lines.append(text)


def make_guard():
    lines, faults = Lines(), []
    return CallbackGuard(lambda: lines, faults.append), lines, faults


def test_a_raising_callback_becomes_a_counted_logged_fault_and_its_fallback():
    guard, lines, faults = make_guard()

    def boom(value):
        raise RuntimeError(f'bad {value} seq_secretkey_0123456789')

    wrapped = guard.wrap('timer tick', boom, lambda value: f'refused {value}')
    assert wrapped(1) == 'refused 1'
    assert wrapped(2) == 'refused 2'
    assert guard.faults == 2 and len(faults) == 2
    assert faults[0].startswith('timer tick: RuntimeError: bad 1')
    assert len(lines.lines) == 1, 'a fault of one kind at one entry is logged once'
    assert 'Traceback' in lines.lines[0]
    assert 'seq_secretkey' not in lines.lines[0] + guard.last_fault
    guard.clear()
    assert guard.last_fault == '' and guard.faults == 2


def test_the_guard_keeps_the_signature_rclpy_inspects():
    guard, _, _ = make_guard()

    def callback(msg, info):
        return msg, info

    wrapped = guard.wrap('subscription x', callback)
    assert list(inspect.signature(wrapped).parameters) == ['msg', 'info']
    assert wrapped(1, 2) == (1, 2)
    assert guard.wrap('again', wrapped) is wrapped


def test_a_fault_while_handling_a_fault_is_counted_not_recursed():
    lines = Lines()
    calls = []

    def on_fault(reason):
        calls.append(reason)
        guard.wrap('hold', lambda: 1 / 0)()
        raise ValueError('the hold failed too')

    guard = CallbackGuard(lambda: lines, on_fault)
    assert guard.wrap('timer', lambda: [][1])() is None
    assert len(calls) == 1
    assert guard.faults == 3


def test_a_refused_service_answers_with_the_reason():
    response = refuse_service('internal error')(Trigger.Request(), Trigger.Response())
    assert response.success is False and response.message == 'internal error'


def _is_logger(value):
    """Whether an expression is `...get_logger()` or a name that holds a logger."""
    if isinstance(value, ast.Call):
        return getattr(value.func, 'attr', getattr(value.func, 'id', '')) == 'get_logger'
    return isinstance(value, ast.Name) and 'logger' in value.id.lower()


def _logger_method_references(tree):
    """Yield (line, attr) of logger severity methods used other than by calling them."""
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SEVERITIES \
                and id(node) not in called and _is_logger(node.value):
            yield node.lineno, node.attr


def test_no_logger_call_site_can_change_its_severity():
    """Keep each call site at one severity: rclpy raises otherwise (it killed the node once)."""
    problems = []
    for path in sorted((REPO / 'sequence_ai_ros').rglob('*.py')):
        tree = ast.parse(path.read_text(), str(path))
        problems += [f'{path.relative_to(REPO)}:{line}: logger method {attr} used as a value'
                     for line, attr in _logger_method_references(tree)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, 'attr', '') == 'log' \
                    and len(node.args) >= 2 and not isinstance(node.args[1], ast.Attribute):
                problems.append(f'{path.relative_to(REPO)}:{node.lineno}: log() with a '
                                'computed severity')
    assert problems == []


@pytest.fixture
def policy_node(ros):
    """Yield a PolicyNode in this process, spun by the test side's executor."""
    from sequence_ai_ros.node.policy_node import PolicyNode
    with spun_nodes(ros) as spin:
        yield spin(PolicyNode(f'guard_node_{time.monotonic_ns()}', context=ros.context))


def _change(ros, node, transition_id='', label=''):
    client = ros.node.create_client(ChangeState, f'{node.get_name()}/change_state')
    try:
        assert wait_until(client.service_is_ready, 10)
        request = ChangeState.Request()
        if transition_id:
            request.transition.id = transition_id
        request.transition.label = label
        return call_service(client, request, 10.0)
    finally:
        ros.node.destroy_client(client)


def _state(ros, node):
    client = ros.node.create_client(GetState, f'{node.get_name()}/get_state')
    try:
        assert wait_until(client.service_is_ready, 10)
        return call_service(client, GetState.Request(), 10.0).current_state.label
    finally:
        ros.node.destroy_client(client)


@pytest.mark.parametrize('transition_id,label', [
    (Transition.TRANSITION_ACTIVATE, ''), (Transition.TRANSITION_CLEANUP, ''),
    (0, 'deactivate'), (0, 'no_such_transition'), (77, '')])
def test_an_impossible_transition_is_refused_and_the_node_stays(ros, policy_node, transition_id,
                                                                label):
    """Humble's and Jazzy's rclpy raise RCLError out of ~/change_state here; we answer no."""
    answer = _change(ros, policy_node, transition_id, label)
    assert answer.success is False
    assert _state(ros, policy_node) == 'unconfigured'
    assert policy_node.callback_guard.faults == 0
    assert rclpy.ok(context=ros.context)
