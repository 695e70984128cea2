"""
The direct worker behind a byte-forwarding proxy: `--worker-url` names it in the connect answer.

The gateway binds its worker on a fixed `--worker-port` and advertises the proxy's address,
as a deployment behind a load balancer does; the proxy passes the TLS through untouched, so
the certificate the client pins is still the worker's. The project's client acts through it.
"""

import subprocess
import sys

from fixtures_gateway import MAIN_KEY, TEST_KEYS, TIME_SCALE
from observations import observation
import pytest
import sequence_ai_ros as sai
from sequence_ai_ros.faults import FaultProxy
from sequence_ai_ros.gateway.process import free_port, GatewayProcess

OBS = observation()


@pytest.fixture(scope='module')
def proxied():
    """Yield (gateway, proxy): the worker reached only through the proxy."""
    worker_port = free_port()
    with FaultProxy('127.0.0.1', worker_port) as proxy:
        args = ['--time-scale', str(TIME_SCALE), '--protocol', 'direct', '--start-warm',
                '--worker-port', str(worker_port), '--worker-url', proxy.url('https')]
        with GatewayProcess(args, keys=TEST_KEYS) as gateway:
            yield gateway, proxy


def connect(gateway):
    return sai.connect('pi05-droid', base_url=gateway.base_url, api_key=MAIN_KEY,
                       protocol='direct')


def worker_acts(gateway) -> int:
    return sum(gateway.stats()['direct']['worker']['acts'].get(
        'accounts/sequences/models/pi05-droid', {}).values())


def test_the_connect_answer_names_the_proxy_and_acts_go_through_it(proxied):
    gateway, proxy = proxied
    before, acts = proxy.stats(), worker_acts(gateway)
    with connect(gateway) as policy:
        assert len(policy.predict(OBS).action_chunk) > 0
        assert policy.direct.route.worker_url == proxy.url('https')
    after = proxy.stats()
    assert after.accepted > before.accepted and after.bytes_down > before.bytes_down
    assert worker_acts(gateway) == acts + 1
    assert gateway.stats()['direct']['worker_url'] == proxy.url('https')
    assert f'reached at {proxy.url("https")}' in gateway.log()


def test_a_reset_at_the_proxy_fails_one_request_and_the_next_goes_through(proxied):
    gateway, proxy = proxied
    with connect(gateway) as policy:
        policy.predict(OBS)  # a kept-alive TLS connection: the fault hits its next request
        resets = proxy.stats().faults.get('reset', 0)
        proxy.reset_next()
        with pytest.raises(sai.Unavailable) as lost:
            policy.predict(OBS)
        assert lost.value.reason == 'connection_lost', lost.value
        assert proxy.stats().faults.get('reset', 0) == resets + 1
        # Not a refusal: the same worker route and seat, on a new connection (the engine's
        # retry is this second call).
        connects = policy.direct.connects
        assert len(policy.predict(OBS).action_chunk) > 0
        assert policy.direct.connects == connects


@pytest.mark.parametrize('url', ['http://127.0.0.1:9443', '127.0.0.1:9443',
                                 'https://127.0.0.1:9443/worker'])
def test_a_worker_url_that_is_not_a_bare_https_address_is_a_one_line_error(url):
    done = subprocess.run([sys.executable, '-m', 'sequence_ai_ros.gateway', '--port',
                           str(free_port()), '--worker-url', url],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith('gateway: error: --worker-url') and 'https://' in lines[-1]
    assert not any('Traceback' in line for line in lines)


def test_a_worker_url_is_refused_without_the_direct_protocol():
    done = subprocess.run([sys.executable, '-m', 'sequence_ai_ros.gateway', '--protocol', 'v1',
                           '--worker-url', 'https://127.0.0.1:9443'],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        'gateway: error: --worker-url names the direct worker: not with --protocol v1')
