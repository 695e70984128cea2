"""
The client under faults: TLS trust, gateway restarts, and (through FaultProxy) a bad network.

Each case records a row of docs/RELIABILITY.md with what it measured.
"""

import os
import threading
import time

from observations import observation
import pytest
from reliability import FaultRow, open_sockets, settled
import sequence_ai_ros as sai
from sequence_ai_ros.gateway.process import GatewayProcess

KEY = 'seq_client_fault_tests_key_000001'
OBS = observation()
TEST_DIR = os.path.dirname(os.path.abspath(__file__))


def accept(action):
    return True


def connect(gateway, model='pi05-droid', **kwargs):
    kwargs.setdefault('api_key', KEY)
    return sai.connect(model, base_url=gateway.base_url, **kwargs)


@pytest.fixture(scope='module')
def tls_gateway(tls_files):
    cert, key = tls_files
    with GatewayProcess(['--time-scale', '0.02', '--start-warm'], keys={KEY: 1000},
                        certfile=cert, keyfile=key) as process:
        yield process


# -- TLS ---------------------------------------------------------------------------------------

def test_tls_is_verified_by_default_and_a_bad_certificate_is_a_clear_error(
        tls_gateway, tls_files, fault_matrix):
    with connect(tls_gateway) as policy:  # self-signed: not in the system's CAs
        with pytest.raises(sai.CertificateError, match='failed verification') as caught:
            policy.predict(OBS)
    assert 'verify=' in str(caught.value) and KEY not in str(caught.value)
    with connect(tls_gateway, verify=tls_files[0]) as policy:  # trusting its CA works
        assert len(policy.predict(OBS).action_chunk) == 15
    with pytest.raises(ValueError, match='verification stays on'):
        connect(tls_gateway, verify=False)
    fault_matrix.record(FaultRow(
        area='network', case='TLS: self-signed certificate, not trusted',
        outcome='CertificateError naming the reason and verify=; trusted with verify=<CA file>; '
        'verify=False refused'))


def test_a_certificate_error_is_not_retried(tls_gateway):
    with connect(tls_gateway) as policy:
        started = time.monotonic()
        with pytest.raises(sai.CertificateError):
            policy.run(lambda: OBS, lambda a: None, validate=accept, max_actions=5,
                       retry_backoff_s=5.0)
        assert time.monotonic() - started < 5.0, 'a deterministic error must not back off'


# -- gateway restarts and transient failures ---------------------------------------------------

def test_a_gateway_restart_mid_run_is_ridden_through_holding_meanwhile(fault_matrix):
    with GatewayProcess(['--time-scale', '0.2', '--start-warm'], keys={KEY: 1000}) as gw:
        actions, holds, underruns = [], [], []
        restarted = threading.Event()
        restarter = threading.Thread(target=lambda: (gw.restart(), restarted.set()))

        def act(action):
            actions.append(time.monotonic())
            if len(actions) == 20:  # from another thread: the loop must meet the outage
                restarter.start()
        with connect(gw) as policy:
            sockets = open_sockets()
            threads = threading.active_count()
            outcome = policy.run(lambda: OBS, act, validate=accept, max_actions=150,
                                 hold=lambda: holds.append(1), on_underrun=underruns.append,
                                 retries=5, retry_backoff_s=0.25)
        restarter.join()
        assert restarted.is_set()
        assert outcome.actions == 150 and not outcome.stopped_early and holds == []
        assert outcome.failed_requests >= 1, 'the restart must have cost at least one request'
        assert outcome.underruns >= 1, 'the plan ran dry while the gateway was down'
        threads_after = settled(threading.active_count, threads)
        sockets_after = settled(open_sockets, sockets)
        assert threads_after == threads and sockets_after <= sockets
    fault_matrix.record(FaultRow(
        area='gateway', case='gateway killed mid-run and restarted (warm), retries=5',
        outcome=f'run completed all 150 actions; {outcome.failed_requests} failed requests '
        f'retried; {outcome.underruns} underrun(s), longest {outcome.longest_underrun_s:.2f} s; '
        'no hold call', sockets=(sockets, sockets_after), threads=(threads, threads_after)))


def test_a_server_error_on_every_call_is_raised_after_the_retries_and_holds(fault_matrix):
    plugin = 'fixtures_gateway:make_plugin_policy'  # instruction 'raise' makes it fail
    env = {'PYTHONPATH': os.pathsep.join([TEST_DIR, os.path.dirname(TEST_DIR)])}
    with GatewayProcess(['--time-scale', '0.02', '--start-warm', '--policy', plugin],
                        keys={KEY: 100}, env=env) as broken:
        holds = []
        with connect(broken) as policy:
            started = time.monotonic()
            with pytest.raises(sai.SequencesError) as caught:
                policy.run(lambda: observation(instruction='raise'), lambda a: None,
                           validate=accept, max_actions=5, hold=lambda: holds.append(1),
                           retries=2, retry_backoff_s=0.05)
            took = time.monotonic() - started
        acts = broken.stats()['acts']['accounts/sequences/models/pi05-droid']
    assert caught.value.status == 500 and holds == [1]
    assert acts.get('500') == 3, 'one call and two retries, no more'
    assert took >= 0.05 + 0.1, 'the retries back off'
    fault_matrix.record(FaultRow(
        area='gateway', case='500 on every call (policy raises), retries=2',
        outcome=f'SequencesError(500) raised after 3 calls in {took:.2f} s; hold called once'))
