"""`gateway --ray-address`: the gateway joins a Ray cluster it did not start, and leaves it up."""

import os
from pathlib import Path
import secrets
import subprocess
import sys

from observations import observation
import pytest
from ray_cluster import ray_gateway
import sequence_ai_ros as sai
from sequence_ai_ros.gateway.process import free_port

RAY = Path(sys.executable).with_name('ray')
pytestmark = pytest.mark.skipif(not RAY.exists(), reason='ray[serve] is not installed')


def ray_cli(*args, env):
    return subprocess.run([str(RAY), *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    """Start a head node on loopback, as an operator does with `ray start --head`."""
    port = free_port()
    # Ray's token auth, as an operator's cluster has it: every client brings the token.
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER='0', RAY_AUTH_MODE='token',
               RAY_AUTH_TOKEN=secrets.token_hex(32))
    started = ray_cli('start', '--head', f'--port={port}', '--node-ip-address=127.0.0.1',
                      '--include-dashboard=false', '--num-cpus=2',
                      f'--temp-dir={tmp_path_factory.mktemp("ray")}', env=env)
    assert started.returncode == 0, started.stderr[-2000:]
    yield f'127.0.0.1:{port}', env
    ray_cli('stop', '--force', env=env)


def test_the_gateway_serves_on_an_existing_cluster_and_leaves_it_running(cluster):
    address, env = cluster
    gateway = ray_gateway(['--ray-address', address, '--replicas', '1', '--start-warm',
                           '--idle-cold-s', '1000000'],
                          env={k: env[k] for k in ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN')})
    try:
        stats = gateway.stats()
        assert (stats['backend'], stats['replicas']) == ('ray', 1)
        with sai.connect('pi05-droid', base_url=gateway.base_url, api_key='seq_any_key_00001',
                         timeout_s=60.0) as policy:
            prediction = policy.predict(observation())
        assert len(prediction.action_chunk.steps) > 0
    finally:
        gateway.close()
    # Only this gateway's application went away with it: the cluster is the operator's.
    status = ray_cli('status', f'--address={address}', env=env)
    assert status.returncode == 0, status.stderr[-2000:]
