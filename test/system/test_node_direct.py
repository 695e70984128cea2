"""
The policy node on the service's direct protocol, and the same episodes on v1.

Real processes: the local gateway (serving both protocols unless a test says which), the node,
and the test-side robot over DDS. The gateway's /v1/_local/stats is the witness of what reached
it: seats held and released, episodes, labels.
"""

import itertools
import json
import os
import signal
import time

from diagnostic_msgs.msg import DiagnosticStatus
from fixtures_gateway import node_gateway_args, NODE_GATEWAY_KEYS, NODE_SCALE
from lifecycle_msgs.msg import Transition
import pytest
from ros_harness import (
    final_hold,
    holds_after,
    moving_after,
    NODE_ENV,
    node_parameters,
    outcome_after,
    PolicyNodeProcess,
    process_counts,
    Robot,
    status_values,
    statuses_after,
    wait_until,
)
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.service_calls import call_service
from std_srvs.srv import SetBool

MODEL = 'accounts/sequences/models/pi05-droid'
WARN = DiagnosticStatus.WARN
_names = (f'direct{i}' for i in itertools.count())


def start_gateway(*flags):
    return GatewayProcess(node_gateway_args(0.4, *flags), keys=NODE_GATEWAY_KEYS)


@pytest.fixture(scope='module')
def gateway():
    """Both protocols, as a gateway starts by default: the node's auto takes direct."""
    with start_gateway() as process:
        yield process


@pytest.fixture
def launch(ros):
    """Start a node in a fresh namespace against `gw`; stop it (and its robot) afterwards."""
    started = []

    def start(gw, watch_diagnostics=False, **params):
        namespace = next(_names)
        robot = Robot(ros.node, namespace, watch_diagnostics=watch_diagnostics)
        process = PolicyNodeProcess(namespace, node_parameters(base_url=gw.base_url, **params),
                                    NODE_ENV)
        started.append((robot, process))
        assert wait_until(robot.change_client.service_is_ready, 30), process.log()
        return robot, process
    yield start
    for robot, process in started:
        robot.close()
        process.stop()


def seats(gw):
    """Return (held, released) of pi05-droid's seats on the gateway."""
    row = gw.stats()['direct']['seats'][MODEL]
    return row['held'], row['released']


def moving(robot, process, count=10):
    started = time.monotonic()
    assert wait_until(lambda: moving_after(robot, started) >= count, 20), process.log()[-3000:]


# -- seats: given back on every way the node can end --------------------------------------------

def _cleanup(robot, process):
    assert robot.deactivate() and robot.cleanup(), process.log()[-3000:]


def _shutdown(robot, process):
    assert robot.transition(Transition.TRANSITION_ACTIVE_SHUTDOWN), process.log()[-3000:]


def _signal(number):
    def send(robot, process):
        process.proc.send_signal(number)
        assert process.proc.wait(20) == 0, process.log()[-3000:]
    return send


ENDINGS = {'cleanup': _cleanup, 'shutdown': _shutdown, 'SIGINT': _signal(signal.SIGINT),
           'SIGTERM': _signal(signal.SIGTERM)}


@pytest.mark.parametrize('ending', list(ENDINGS))
def test_the_seat_is_given_back_however_the_node_ends(gateway, launch, ending):
    robot, process = launch(gateway, max_actions=10**6)
    held, released = seats(gateway)
    assert robot.configure() and robot.activate(), process.log()[-3000:]
    assert 'using the direct protocol' in process.log()
    assert seats(gateway) == (held + 1, released), 'configure did not take a seat'
    moving(robot, process)
    ENDINGS[ending](robot, process)
    assert wait_until(lambda: seats(gateway) == (held, released + 1), 10), \
        (seats(gateway), process.log()[-3000:])
    assert 'holding:' in process.log(), 'the arm was not held before the end'


# -- configure: the action space is stated, or configure says which parameter to set -------------

def test_an_action_space_that_contradicts_the_deployment_fails_configure(gateway, launch):
    robot, process = launch(gateway, action_space='joint_position')
    assert not robot.configure()
    assert wait_until(lambda: 'parameter action_space' in process.log(), 5), process.log()
    assert "states 'joint_velocity'" in process.log()
    assert robot.command_list() == []


def test_a_deployment_the_catalogue_does_not_list_needs_action_space(launch):
    # --unlisted: /v1/models names no robot deployment, as the hosted service since 0.51.
    with start_gateway('--protocol', 'direct', '--unlisted') as unlisted:
        robot, process = launch(unlisted)
        assert not robot.configure()
        assert wait_until(lambda: 'parameter action_space' in process.log(), 5), process.log()
        assert 'does not state its action space' in process.log()
        assert robot.command_list() == [] and seats(unlisted)[0] == 0, 'the seat was kept'
        robot, process = launch(unlisted, action_space='joint_velocity', max_actions=30)
        assert robot.configure() and robot.activate(), process.log()[-3000:]
        outcome = outcome_after(robot, 0, 30)
        assert outcome and outcome['outcome'] == 'completed', process.log()[-3000:]


# -- interrupt: deactivate does not wait for the act in flight ---------------------------------

def test_deactivate_cuts_a_slow_act_at_once(launch):
    # 60 model s per act at 0.2: 12 s, against a 30 s request timeout.
    with start_gateway('--latency-median-s', '60') as slow:
        robot, process = launch(slow, request_timeout_s=30.0, max_actions=10**6)
        assert robot.configure(), process.log()[-3000:]
        baseline = process_counts(process.proc.pid)
        assert robot.activate(), process.log()[-3000:]
        assert wait_until(lambda: slow.stats()['direct']['acts_running'] > 0, 10), \
            slow.stats()['direct']
        began = time.monotonic()
        assert robot.deactivate(), process.log()[-3000:]
        took = time.monotonic() - began
        # The act's worker thread ends with the cut connection, not 12 s later.
        threads = wait_until(lambda: process_counts(process.proc.pid)[0] <= baseline[0], 5)
        assert took < 6.0, f'deactivate took {took:.1f} s: it waited for the act'
        assert threads, (process_counts(process.proc.pid), baseline)
        assert robot.state() == 'inactive'
        result = outcome_after(robot, 0, 5)
        assert result is not None and result['reason'] == 'deactivated', result


# -- episodes end to end on either protocol -----------------------------------------------------

@pytest.fixture(scope='module', params=['direct', 'v1'])
def one_protocol_gateway(request):
    """Yield a gateway serving one protocol only: the node's auto must find it."""
    with start_gateway('--protocol', request.param) as process:
        process.protocol = request.param
        yield process


def label(ros, namespace, success):
    client = ros.node.create_client(SetBool, f'/{namespace}/policy_node/label_episode')
    try:
        assert wait_until(client.service_is_ready, 10)
        return call_service(client, SetBool.Request(data=success), 10.0)
    finally:
        ros.node.destroy_client(client)


def test_episodes_complete_hold_and_are_recorded_and_labelled(one_protocol_gateway, launch,
                                                              ros, tmp_path):
    gw, protocol = one_protocol_gateway, one_protocol_gateway.protocol
    robot, process = launch(gw, max_actions=45, record_dir=str(tmp_path),
                            label_notes='reached it')
    assert robot.configure() and robot.activate(), process.log()[-3000:]
    assert f'using the {protocol} protocol' in process.log()
    done = outcome_after(robot, 0, 30)
    assert done is not None and done['outcome'] == 'completed', done
    answer = label(ros, process.namespace, True)
    assert answer.success, answer.message
    assert 'recording' in answer.message
    assert ('gateway episode' in answer.message) == (protocol == 'direct'), answer.message
    # A second episode, stopped: it ends holding.
    assert robot.start_episode().success
    moving(robot, process, 5)
    stopped = time.monotonic()
    assert robot.stop_episode().success
    assert final_hold(robot, stopped) is not None, 'no hold after the stop'
    stopped_result = outcome_after(robot, 1, 10)
    assert stopped_result is not None and stopped_result['outcome'] == 'stopped'
    from sequence_ai_ros.record.labels import read_label
    files = sorted(tmp_path.glob('*.mcap'))
    assert len(files) == 2, list(tmp_path.iterdir())
    labels = [read_label(path) for path in files]
    assert [lb is not None and lb.success for lb in labels].count(True) == 1, labels
    assert any(lb is not None and lb.notes == 'reached it' for lb in labels), labels
    if protocol == 'direct':
        direct = gw.stats()['direct']
        assert 'reached it' in json.dumps(direct), direct  # the gateway keeps the label


# -- the worker losing the episode under the node --------------------------------------------

def test_a_gateway_restart_loses_the_episode_the_arm_holds_and_the_next_one_runs(launch):
    # Keepalives far apart: the act meets the restart first (episode_lost), not the keepalive
    # (a lost seat: the next test's case).
    with start_gateway('--seat-ttl-s', '3000') as gw:
        # Retries that outlast a restart on a busy machine (16 s): the worker's answer decides.
        robot, process = launch(gw, max_actions=10**6, request_retries=6, retry_backoff_s=0.25)
        assert robot.configure() and robot.activate(), process.log()[-3000:]
        moving(robot, process)
        restarted = time.monotonic()
        gw.stop()
        gw.start()  # the same port; the worker knows none of the node's episodes
        result = outcome_after(robot, 0, 20)
        assert result is not None and result['outcome'] == 'error', result
        # The service's reason and request id reach the outcome (and the log, /diagnostics).
        assert 'episode_lost, request r-' in result['reason'], result
        assert 'episode_lost' in process.log()
        assert final_hold(robot, restarted) is not None, 'the arm was not held'
        assert robot.start_episode().success, process.log()[-3000:]
        moving(robot, process, 5)
        assert robot.stop_episode().success
        assert outcome_after(robot, 1, 10)['outcome'] == 'stopped'
        assert process.proc.poll() is None


def test_an_episode_stopped_while_the_worker_is_frozen_ends_at_once_holding(launch):
    # The end reaches the worker from the background: the node's callbacks never wait on it.
    with start_gateway() as gw:
        robot, process = launch(gw, max_actions=10**6)
        assert robot.configure() and robot.activate(), process.log()[-3000:]
        moving(robot, process)
        os.kill(gw.pid, signal.SIGSTOP)
        try:
            stopped = time.monotonic()
            assert robot.stop_episode().success, process.log()[-3000:]
            result = outcome_after(robot, 0, 10)
            assert result is not None and result['outcome'] == 'stopped', result
            assert time.monotonic() - stopped < 2.5, 'the stop waited on the frozen worker'
            assert final_hold(robot, stopped) is not None, 'the arm was not held'
        finally:
            os.kill(gw.pid, signal.SIGCONT)
        assert wait_until(lambda: gw.stats()['direct']['episodes']['ended'] == 1, 10), \
            gw.stats()['direct']['episodes']
        assert robot.start_episode().success, process.log()[-3000:]
        moving(robot, process, 5)
        assert process.proc.poll() is None


def test_a_seat_lost_between_episodes_is_taken_again_and_the_next_episode_runs(launch):
    # Keepalives every 0.2 s here: the one after the restart finds the seat gone.
    with start_gateway('--seat-ttl-s', '3') as gw:
        robot, process = launch(gw, max_actions=10)
        assert robot.configure() and robot.activate(), process.log()[-3000:]
        assert outcome_after(robot, 0, 20)['outcome'] == 'completed'
        gw.stop()
        gw.start()
        assert wait_until(lambda: 'no longer holds the seat' in process.log(), 20), \
            process.log()[-3000:]
        assert robot.start_episode().success, process.log()[-3000:]
        result = outcome_after(robot, 1, 20)
        assert result is not None and result['outcome'] == 'completed', result
        assert seats(gw)[0] == 1, 'the node did not sit down again'
        assert process.proc.poll() is None


# -- readiness: configure waits for the worker, and says what it waits for ---------------------

def test_configure_waits_for_a_cold_worker_and_reports_it(launch):
    # 25 model s of cold start at the node tests' 0.2: 5 s.
    cold = ['--time-scale', str(NODE_SCALE), '--cold-start-s', '25', '--latency-median-s', '0.4']
    with GatewayProcess(cold, keys=NODE_GATEWAY_KEYS) as gw:
        # No controller to ask: configure's wait is the worker's alone.
        robot, process = launch(gw, watch_diagnostics=True, max_actions=30,
                                check_controller=False)
        began = time.monotonic()
        assert robot.configure(), process.log()[-3000:]
        log = process.log()
        assert 'waiting: status' in log and 'ready after' in log, log[-3000:]
        warned = [s for _, s in statuses_after(robot, began, 'gateway')
                  if s.level == WARN and 'is not ready' in s.message]
        assert warned, [s.message for _, s in statuses_after(robot, began, 'gateway')]
        assert status_values(warned[-1])['protocol'] == 'direct'
        assert gw.stats()['models'][MODEL]['state'] != 'warming', 'configured before ready'
        assert robot.activate(), process.log()[-3000:]
        done = outcome_after(robot, 0, 30)
        assert done is not None and done['outcome'] == 'completed', done


def test_a_worker_not_ready_within_startup_timeout_fails_configure(launch):
    cold = ['--time-scale', str(NODE_SCALE), '--cold-start-s', '100']  # 20 s here
    with GatewayProcess(cold, keys=NODE_GATEWAY_KEYS) as gw:
        robot, process = launch(gw, startup_timeout_s=2.0)
        assert not robot.configure()
        assert wait_until(lambda: 'configure failed' in process.log(), 5), process.log()
        assert 'not ready after 2s' in process.log(), process.log()[-3000:]
        assert robot.command_list() == []
        assert wait_until(lambda: seats(gw)[0] == 0, 5), 'the failed configure kept its seat'


def test_a_model_gone_cold_mid_episode_holds_and_the_episode_goes_on(launch):
    # v1 (no episode on the wire to lose): the restarted gateway answers 503 warming for
    # 10 model s (2 s here); the node holds, waits it out and moves again in the same episode.
    flags = ['--time-scale', str(NODE_SCALE), '--latency-median-s', '0.4']
    with GatewayProcess([*flags, '--start-warm'], keys=NODE_GATEWAY_KEYS) as gw:
        robot, process = launch(gw, protocol='v1', max_actions=10**6, request_retries=20,
                                retry_backoff_s=0.05, startup_timeout_s=30.0)
        assert robot.configure() and robot.activate(), process.log()[-3000:]
        moving(robot, process)
        restarted = time.monotonic()
        gw.stop()
        gw.args = [*flags, '--cold-start-s', '10']
        gw.start()
        assert wait_until(lambda: 'model not ready, waiting' in process.log(), 20), \
            process.log()[-3000:]
        assert holds_after(robot, restarted), 'the arm was not held while warming'
        moving(robot, process, 20)  # the same episode moves again once the model is warm
        assert robot.outcomes == [], robot.outcomes
        assert robot.stop_episode().success


def test_a_refused_key_fails_configure_at_connect_and_never_reaches_the_log(gateway, ros):
    wrong = 'seq_refused_key_for_the_direct_node_0001'
    robot = Robot(ros.node, 'direct_refused', watch_diagnostics=True)
    process = PolicyNodeProcess('direct_refused', node_parameters(base_url=gateway.base_url),
                                {'SEQUENCES_API_KEY': wrong})
    try:
        assert wait_until(robot.change_client.service_is_ready, 30), process.log()
        assert not robot.configure()
        assert wait_until(lambda: 'configure failed' in process.log(), 5), process.log()
        # The service's code and request id say which refusal it was; the key is not there.
        assert 'unauthenticated, request r-' in process.log(), process.log()[-3000:]
        texts = [process.log()] + [s.message + repr(s.values) for _, s in robot.diagnostics]
        assert not any(wrong in text for text in texts), 'the key reached the log'
        assert robot.command_list() == []
    finally:
        robot.close()
        process.stop()
