"""
Every executable exits 0 on SIGINT and SIGTERM after a clean shutdown, whenever the signal comes.

Each runs as a real process (signal_moments.Watched) and is signalled at several moments: during
start-up (its handlers are in, and frozen, it is checked to be still starting: not listening,
rclpy not even loaded), when ready, while busy (a request in flight, an episode playing, a
connection relayed), and twice (the second signal during the shutdown the first began). Each
case asserts exit status 0, no traceback, and no process left of those it started.
"""

import contextlib
from pathlib import Path
import re
import signal
import socket
import threading
import time

from fixtures_gateway import act_body, node_gateway_fixture
import httpx
from openpi_process import OpenpiServerProcess
import pytest
from sequence_ai_ros.gateway.process import free_port
from signal_moments import (
    assert_clean_exit,
    CANCELLED,
    environment,
    port_open,
    wait_for,
    Watched,
)

INT, TERM = signal.SIGINT, signal.SIGTERM
# The gateway's executables: `sequence-ai-ros gateway`, the `sequence_ai_gateway` console
# script launch files run, and `python -m sequence_ai_ros.gateway` (GatewayProcess, the demo).
GATEWAY = {
    'cli': ['-m', 'sequence_ai_ros.cli', 'gateway'],
    'executable': ['-c', 'import sys; from sequence_ai_ros.cli import gateway_main; '
                   'sys.exit(gateway_main())'],
    'module': ['-m', 'sequence_ai_ros.gateway'],
}
FAST = ('--time-scale', '0.02', '--start-warm')  # --openpi takes neither
SHORT_MODEL_S = 40.0  # 0.8 s: answered within uvicorn's 3 s of graceful shutdown
LONG_MODEL_S = 400.0  # 8 s: still running when a second signal hurries the shutdown


def start_gateway(entry, *flags):
    port = free_port()
    return Watched([*GATEWAY[entry], '--host', '127.0.0.1', '--port', str(port), *flags]), port


@contextlib.contextmanager
def serving_gateway(entry, *flags):
    """Start the gateway, yield it and its port once it answers, and close it after."""
    gateway, port = start_gateway(entry, *flags)
    try:
        wait_for(lambda: answers(port), 60, 'the gateway to answer', gateway)
        yield gateway, port
    finally:
        gateway.close()


def answers(port, path='/v1/health'):
    try:
        return httpx.get(f'http://127.0.0.1:{port}{path}', timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def in_flight(port):
    try:
        return httpx.get(f'http://127.0.0.1:{port}/v1/_local/stats',
                         timeout=2.0).json()['in_flight'] > 0
    except (httpx.HTTPError, ValueError, KeyError):
        return False


def request_in_background(port, replies):
    def call():
        try:
            replies.append(httpx.post(f'http://127.0.0.1:{port}/v1/act', json=act_body(),
                                      timeout=60.0).status_code)
        except httpx.HTTPError as exc:
            replies.append(type(exc).__name__)
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread


def request_in_flight(gateway, port, replies):
    """Send a request in the background and return its thread once the gateway is on it."""
    thread = request_in_background(port, replies)
    wait_for(lambda: in_flight(port), 30, 'a request in flight', gateway)
    return thread


def rclpy_loaded(process):
    return '_rclpy_pybind11' in Path(f'/proc/{process.proc.pid}/maps').read_text()


def send_all(process, signals):
    for signum in signals:
        process.send(signum)


# -- the gateway, in-process policies --------------------------------------------------------

@pytest.mark.parametrize('entry, signals', [('executable', (TERM,)), ('cli', (INT,)),
                                            ('module', (INT, TERM))],
                         ids=['executable-SIGTERM', 'cli-SIGINT', 'module-twice'])
def test_gateway_signalled_during_start_up(entry, signals):
    gateway, port = start_gateway(entry, *FAST)
    try:
        gateway.wait_for_handlers()
        gateway.freeze()
        try:
            assert not port_open(port), 'the gateway listened before the signal'
            send_all(gateway, signals)
        finally:
            gateway.thaw()
        assert_clean_exit(gateway)
    finally:
        gateway.close()


@pytest.mark.parametrize('entry, signum', [('executable', INT), ('module', TERM)],
                         ids=['executable-SIGINT', 'module-SIGTERM'])
def test_gateway_signalled_when_serving(entry, signum):
    with serving_gateway(entry, *FAST) as (gateway, port):
        gateway.send(signum)
        assert_clean_exit(gateway)


def test_gateway_signalled_mid_request_answers_it_then_exits():
    with serving_gateway('cli', *FAST, '--latency-median-s',
                         str(SHORT_MODEL_S)) as (gateway, port):
        replies = []
        thread = request_in_flight(gateway, port, replies)
        gateway.send(TERM)
        assert_clean_exit(gateway)
        thread.join(30)
        assert replies == [200], replies  # graceful: the request in flight was answered


def test_gateway_signalled_twice_gives_a_long_request_its_grace_and_exits_0():
    with serving_gateway('executable', *FAST, '--latency-median-s',
                         str(LONG_MODEL_S)) as (gateway, port):
        request_in_flight(gateway, port, [])
        gateway.send(INT)
        gateway.wait_for_line('Shutting down')
        gateway.send(TERM)
        took = assert_clean_exit(gateway, cancelled_ok=True)
        assert took < 3.0 + 5.0, took  # uvicorn's 3 s of grace, not the request's 8 s
        assert CANCELLED in gateway.output()


# -- the gateway serving an openpi server ----------------------------------------------------

@pytest.fixture(scope='module')
def openpi():
    with OpenpiServerProcess() as server:
        yield server


@pytest.mark.parametrize('moment', ['start-up', 'serving'])
def test_openpi_gateway_signalled(openpi, moment):
    gateway, port = start_gateway('module', '--openpi', openpi.url)
    try:
        if moment == 'start-up':
            gateway.wait_for_handlers()
            gateway.signal_while_frozen(TERM, lambda: not port_open(port), 'it listened')
        else:
            wait_for(lambda: answers(port), 60, 'the gateway to answer', gateway)
            gateway.send(INT)
        assert_clean_exit(gateway)
    finally:
        gateway.close()


def test_openpi_gateway_exits_0_while_the_openpi_server_does_not_answer(openpi):
    """The worker thread waiting for the frozen server is abandoned, not waited for."""
    with serving_gateway('cli', '--openpi', openpi.url) as (gateway, port):
        openpi.proc.send_signal(signal.SIGSTOP)
        try:
            request_in_flight(gateway, port, [])
            gateway.send(TERM)
            gateway.wait_for_line('Shutting down')
            gateway.send(INT)
            assert_clean_exit(gateway, cancelled_ok=True)
        finally:
            openpi.proc.send_signal(signal.SIGCONT)


# -- the gateway on Ray Serve (slow to start: one case) --------------------------------------

@pytest.mark.parametrize('after_s', [0.0, 1.0])
def test_ray_gateway_signalled_while_serve_starts_leaves_no_ray_process(after_s):
    pytest.importorskip('ray.serve')
    gateway, port = start_gateway('module', '--ray', *FAST)
    try:
        # Ray's processes are running and ray.init's last step, the driver connecting to them,
        # begins (on a busy machine it takes seconds); a second later Serve may be starting.
        gateway.wait_for_line('Started a local Ray instance', timeout=180)
        time.sleep(after_s)
        gateway.send(TERM)
        gateway.send(INT)
        assert_clean_exit(gateway, timeout=90)
        assert len(gateway.seen) >= 3, f'Ray started too few processes to tell: {gateway.seen}'
        assert not port_open(port)
    finally:
        gateway.close()


# -- the fault proxy ---------------------------------------------------------------------------

class Upstream:
    """A TCP peer that echoes: the proxy's upstream, counting the connections it accepted."""

    def __init__(self):
        self.server = socket.create_server(('127.0.0.1', 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn):
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)


@pytest.fixture(scope='module')
def upstream():
    peer = Upstream()
    yield peer
    peer.server.close()


@pytest.mark.parametrize('moment, signals', [('start-up', (TERM,)), ('ready', (INT,)),
                                             ('relaying', (TERM,)), ('ready', (INT, TERM))],
                         ids=['start-up', 'ready', 'relaying', 'twice'])
def test_proxy_signalled(upstream, moment, signals):
    proxy = Watched(['-m', 'sequence_ai_ros.cli', 'proxy', '--upstream',
                     f'127.0.0.1:{upstream.port}', '--latency-ms', '200'])
    client = None
    try:
        if moment == 'start-up':
            proxy.wait_for_handlers()
            proxy.signal_while_frozen(TERM, lambda: 'proxy http' not in proxy.output(),
                                      'it printed its address')
        else:
            port = int(proxy.wait_for_line(r'proxy http://127\.0\.0\.1:(\d+) -> ')[1])
            if moment == 'relaying':
                accepted = upstream.accepted
                client = socket.create_connection(('127.0.0.1', port))
                client.sendall(b'x' * 10000)  # 200 ms on the way each way
                wait_for(lambda: upstream.accepted > accepted, 30, 'the upstream connection',
                         proxy)
            send_all(proxy, signals)
        assert_clean_exit(proxy)
        assert re.search(r'relayed \d+ connections', proxy.output()), proxy.output()
    finally:
        if client is not None:
            client.close()
        proxy.close()


# -- the simulated arm -------------------------------------------------------------------------

@pytest.mark.parametrize('moment, signals', [('start-up', (INT,)), ('ready', (TERM,)),
                                             ('ready', (INT, TERM))],
                         ids=['start-up', 'ready', 'twice'])
def test_sim_arm_signalled(ros, moment, signals):
    from std_srvs.srv import Trigger

    namespace = f'signals_sim_{moment.replace("-", "_")}_{len(signals)}'
    sim = Watched(['-m', 'sequence_ai_ros.sim.main', '--ros-args', '-r', f'__ns:=/{namespace}'],
                  env=environment(RCUTILS_LOGGING_BUFFERED_STREAM='0'))
    hold = ros.node.create_client(Trigger, f'/{namespace}/sim_arm/hold')
    try:
        if moment == 'start-up':
            sim.wait_for_handlers()
            sim.signal_while_frozen(INT, lambda: not rclpy_loaded(sim), 'rclpy was loaded')
        else:
            wait_for(hold.service_is_ready, 60, 'the hold service', sim)
            send_all(sim, signals)
        assert_clean_exit(sim)
        assert 'final task distance' in sim.output(), sim.output()
    finally:
        ros.node.destroy_client(hold)
        sim.close()


# -- the policy node ---------------------------------------------------------------------------

node_gateway = node_gateway_fixture(name='node_gateway')


# Twice: a terminal's Ctrl-C and launch's forwarded SIGINT, together (test_spin covers a second,
# different signal interrupting a callback that never returns).
@pytest.mark.parametrize('moment, signals', [('start-up', (TERM,)), ('ready', (INT,)),
                                             ('mid-episode', (TERM,)),
                                             ('mid-episode', (INT, INT))],
                         ids=['start-up', 'ready', 'mid-episode', 'twice'])
def test_policy_node_signalled(ros, node_gateway, moment, signals):
    from ros_harness import (
        moving_after,
        NODE_ENV,
        node_parameters,
        PolicyNodeProcess,
        Robot,
    )

    namespace = f'signals_node_{moment.replace("-", "_")}_{len(signals)}'
    robot = Robot(ros.node, namespace)
    process = PolicyNodeProcess(namespace, node_parameters(
        base_url=node_gateway.base_url, max_actions=10**6), NODE_ENV)
    node = Watched(proc=process.proc, log_path=process.log_path)
    try:
        if moment == 'start-up':
            node.wait_for_handlers()
            node.signal_while_frozen(TERM, lambda: not rclpy_loaded(node), 'rclpy was loaded')
            assert_clean_exit(node)
            return
        wait_for(robot.change_client.service_is_ready, 60, 'the lifecycle services', node)
        if moment == 'mid-episode':
            assert robot.configure() and robot.activate(), node.output()
            started = time.monotonic()
            wait_for(lambda: moving_after(robot, started) >= 5, 30, 'the arm moving', node)
        send_all(node, signals)
        assert_clean_exit(node)
        if moment == 'mid-episode':
            # The hold was published before the exit (its delivery over DDS, and its timing,
            # are test_node_lifecycle_abuse's to measure).
            assert 'holding: shutdown' in node.output(), node.output()
    finally:
        robot.close()
        node.close()
        process.stop()


# -- the demo: a gateway, a simulated arm and a node of its own --------------------------------

@pytest.mark.parametrize('moment, signals', [('start-up', (TERM,)), ('gateway', (INT, TERM)),
                                             ('mid-episode', (INT,))],
                         ids=['start-up', 'twice-while-starting-the-gateway', 'mid-episode'])
def test_demo_signalled_stops_every_process(tmp_path, moment, signals):
    demo = Watched(['-m', 'sequence_ai_ros.cli', 'demo', '--warm', '--no-compare',
                    '--actions', '100000', '--out', str(tmp_path / 'demo.png')])
    try:
        if moment == 'start-up':
            demo.wait_for_handlers()
            demo.signal_while_frozen(TERM, lambda: 'ROS domain' not in demo.output(),
                                     'it had begun the demo')
        elif moment == 'gateway':
            demo.wait_for_line('ROS domain')  # printed as the gateway starts
            send_all(demo, signals)
        else:
            demo.wait_for_line(r'prefetch on: \d+/100000 actions', timeout=120)
            assert len(demo.seen) >= 3, f'gateway, arm, node: {demo.seen}'
            send_all(demo, signals)
        assert_clean_exit(demo, timeout=60)
        if moment != 'start-up':
            assert 'interrupted: stopping every process' in demo.output(), demo.output()
    finally:
        demo.close()
