"""
The executor choice in sequence_ai_ros.runtime.spin, on real rclpy: which one, how it spins.

Signals are sent to child processes (spin.init() installs process-wide handlers); everything
else runs here on a private context.
"""

import importlib.util
from pathlib import Path
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sequence_ai_ros.harness.child_processes import child_env
from sequence_ai_ros.runtime import spin
from std_msgs.msg import String
from std_srvs.srv import Trigger

REPO = Path(__file__).resolve().parents[2]
HAS_EVENTS = importlib.util.find_spec('rclpy.experimental') is not None
KINDS = [pytest.param('events', marks=pytest.mark.skipif(
    not HAS_EVENTS, reason='this rclpy has no EventsExecutor')), 'single']
DEADLINE_S = 10.0


@pytest.fixture
def context():
    ctx = rclpy.Context()
    try:
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(context=ctx, signal_handler_options=SignalHandlerOptions.NO)
    except ImportError:
        rclpy.init(context=ctx)
    yield ctx
    if ctx.ok():
        ctx.shutdown()


@pytest.fixture
def node(context):
    made = rclpy.create_node('spin_test', context=context)
    yield made
    made.destroy_node()


def is_events(executor):
    return type(executor).__name__ == 'EventsExecutor'


def shut_down_after(context, seconds):
    """Shut `context` down from another thread after `seconds`, so no test hangs."""
    timer = threading.Timer(seconds, lambda: context.ok() and context.shutdown())
    timer.daemon = True
    timer.start()
    return timer


# -- which executor ---------------------------------------------------------------------------

@pytest.mark.parametrize('kind', KINDS)
def test_environment_variable_picks_the_executor(node, monkeypatch, kind):
    monkeypatch.setenv(spin.EXECUTOR_ENV, kind)
    executor = spin.make_executor(node)
    try:
        assert is_events(executor) == (kind == 'events')
        assert kind == 'events' or isinstance(executor, SingleThreadedExecutor)
        assert node in set(executor.get_nodes())
    finally:
        executor.shutdown()


def test_default_is_the_events_executor_where_rclpy_has_one(node, monkeypatch):
    monkeypatch.delenv(spin.EXECUTOR_ENV, raising=False)
    assert spin.DEFAULT_EXECUTOR == 'events'
    executor = spin.make_executor(node)
    try:
        assert is_events(executor) == HAS_EVENTS
    finally:
        executor.shutdown()


def test_value_is_read_case_and_space_insensitively(node, monkeypatch):
    monkeypatch.setenv(spin.EXECUTOR_ENV, '  Single ')
    assert spin.executor_choice(node) == 'single'
    monkeypatch.setenv(spin.EXECUTOR_ENV, '')
    assert spin.executor_choice(node) == spin.DEFAULT_EXECUTOR


def test_unknown_value_warns_and_uses_the_default(node, monkeypatch, capfd):
    monkeypatch.setenv(spin.EXECUTOR_ENV, 'evnets')
    assert spin.executor_choice(node) == spin.DEFAULT_EXECUTOR
    err = capfd.readouterr().err
    assert "SEQUENCE_AI_ROS_EXECUTOR='evnets' is not one of events|single: using events" in err


def test_an_explicit_unknown_choice_is_an_error(node):
    with pytest.raises(ValueError, match='multi'):
        spin.make_executor(node, 'multi')


def test_without_events_executor_falls_back_to_single_with_one_info_line(
        node, monkeypatch, capfd):
    # What Humble's rclpy looks like: no rclpy.experimental to import.
    monkeypatch.setitem(sys.modules, 'rclpy.experimental', None)
    monkeypatch.setenv(spin.EXECUTOR_ENV, 'events')
    executor = spin.make_executor(node)
    try:
        assert isinstance(executor, SingleThreadedExecutor)
    finally:
        executor.shutdown()
    err = capfd.readouterr().err
    assert err.count('no EventsExecutor') == 1, err


# -- how it spins -------------------------------------------------------------------------------

@pytest.mark.parametrize('kind', KINDS)
def test_timer_reset_from_its_own_callback_keeps_ticking(node, context, monkeypatch, kind):
    """The policy node's pattern: the first chunk tells the rate, the tick replaces its timer."""
    monkeypatch.setenv(spin.EXECUTOR_ENV, kind)
    ticks = []
    timers = []

    def tick():
        ticks.append(time.monotonic())
        if len(ticks) == 5:
            node.destroy_timer(timers.pop())
            timers.append(node.create_timer(0.005, tick))
        elif len(ticks) == 25:
            context.shutdown()

    timers.append(node.create_timer(0.05, tick))
    guard = shut_down_after(context, DEADLINE_S)
    spin.spin_until_shutdown(node)
    guard.cancel()
    assert len(ticks) == 25
    fast = [b - a for a, b in zip(ticks[5:], ticks[6:])]
    assert sorted(fast)[len(fast) // 2] < 0.03, fast  # the new 5 ms period, not the old 50


@pytest.mark.parametrize('kind', KINDS)
def test_client_call_async_gets_its_answer(node, context, monkeypatch, kind):
    monkeypatch.setenv(spin.EXECUTOR_ENV, kind)
    served = []
    answers = []

    def on_hold(request, response):
        served.append(True)
        response.success, response.message = True, 'holding'
        return response

    def on_answer(future):
        answers.append(future.result().message)
        context.shutdown()

    node.create_service(Trigger, 'hold', on_hold)
    client = node.create_client(Trigger, 'hold')
    sent = []

    def call_once():
        if not sent and client.service_is_ready():
            sent.append(True)
            client.call_async(Trigger.Request()).add_done_callback(on_answer)

    node.create_timer(0.02, call_once)
    guard = shut_down_after(context, DEADLINE_S)
    spin.spin_until_shutdown(node)
    guard.cancel()
    assert served == [True] and answers == ['holding']


@pytest.mark.parametrize('kind', KINDS)
def test_subscription_receives_while_spinning(node, context, monkeypatch, kind):
    monkeypatch.setenv(spin.EXECUTOR_ENV, kind)
    received = []
    publisher = node.create_publisher(String, 'chatter', 10)

    def on_message(msg):
        received.append(msg.data)
        if len(received) == 10:
            context.shutdown()

    node.create_subscription(String, 'chatter', on_message, 10)
    node.create_timer(0.01, lambda: publisher.publish(String(data='x')))
    guard = shut_down_after(context, DEADLINE_S)
    spin.spin_until_shutdown(node)
    guard.cancel()
    assert len(received) == 10


@pytest.mark.parametrize('kind', KINDS)
def test_shutdown_by_someone_else_ends_an_idle_spin_quietly(node, context, monkeypatch, kind):
    monkeypatch.setenv(spin.EXECUTOR_ENV, kind)
    shut_down_after(context, 0.3)
    began = time.monotonic()
    spin.spin_until_shutdown(node)
    assert 0.25 <= time.monotonic() - began < 2.0


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('guarded', [False, True])
def test_a_callback_error_is_reported_and_the_spinning_goes_on(node, context, monkeypatch, kind,
                                                               guarded):
    """A node that dies is worse than one that holds: spin reports and keeps going."""
    monkeypatch.setenv(spin.EXECUTOR_ENV, kind)
    calls, faults = [], []

    def fail():
        calls.append(time.monotonic())
        raise RuntimeError('tick failed')

    if guarded:
        from sequence_ai_ros.node.guard import CallbackGuard
        node.callback_guard = CallbackGuard(node.get_logger, faults.append)
    node.create_timer(0.01, fail)
    shut_down_after(context, 0.3)
    spin.spin_until_shutdown(node)
    assert len(calls) >= 2, 'the spin ended at the first error'
    if guarded:
        assert faults and all('tick failed' in f for f in faults)
        assert node.callback_guard.faults == len(faults)


@pytest.mark.parametrize('kind', KINDS)
def test_the_node_is_free_to_destroy_after_spinning(node, context, monkeypatch, kind):
    monkeypatch.setenv(spin.EXECUTOR_ENV, kind)
    subscription = node.create_subscription(String, 'chatter', lambda msg: None, 10)
    shut_down_after(context, 0.2)
    spin.spin_until_shutdown(node)
    node.destroy_node()
    # A handle an executor still held would outlive destroy_node.
    assert subscription.handle.pointer == 0


# -- signals, in a child process with spin.init()'s handlers --------------------------------------

CHILD = textwrap.dedent("""
    import os, signal, sys, time
    import rclpy
    from sequence_ai_ros.runtime import spin
    mode = sys.argv[1]
    spin.init()
    node = rclpy.create_node('spin_signal_' + mode)
    record = []

    def tick():
        record.append('tick')
        if len(record) == 10:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler has run by now: this callback must still finish
            if mode == 'stuck':
                time.sleep(spin.DUPLICATE_S)  # a signal sooner only repeats the request
                os.kill(os.getpid(), signal.SIGTERM)
                while True:
                    time.sleep(0.01)
            record.append('finished')

    if mode != 'idle':
        node.create_timer(0.01, tick)
    print('spinning', flush=True)
    spin.spin_until_shutdown(node)
    print('stopped', record[-1] if record else '-', len(record), rclpy.ok(), flush=True)
    node.destroy_node()
    spin.shutdown()
""")


def run_child(kind, mode, send=None):
    env = child_env(PYTHONUNBUFFERED='1')
    env[spin.EXECUTOR_ENV] = kind
    proc = subprocess.Popen([sys.executable, '-c', CHILD, mode], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout.readline().strip() == 'spinning'
        time.sleep(0.5)
        sent = time.monotonic()
        if send is not None:
            proc.send_signal(send)
        output, _ = proc.communicate(timeout=DEADLINE_S)
        return proc.returncode, time.monotonic() - sent, output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_a_signal_ends_an_idle_spin_quietly_and_promptly(kind, signum):
    code, took, output = run_child(kind, 'idle', signum)
    assert code == 0, output
    assert 'stopped - 0 True' in output, output
    assert 'Traceback' not in output
    assert took < 2.0, took


@pytest.mark.parametrize('kind', KINDS)
def test_a_signal_lets_the_callback_in_progress_finish(kind):
    code, _, output = run_child(kind, 'busy')
    assert code == 0, output
    # The signalled tick ran to its end, and no tick ran after it.
    assert 'stopped finished 11 True' in output, output
    assert 'Traceback' not in output and 'Exception in' not in output, output


@pytest.mark.parametrize('kind', KINDS)
def test_a_second_signal_interrupts_a_callback_that_never_returns(kind):
    code, took, output = run_child(kind, 'stuck')
    assert code == 0, output
    assert 'stopped tick 10 True' in output, output
