"""
Autoscaling on Ray Serve (`--max-replicas`): a burst of loops scales the policy deployment up.

`gateway --ray --replicas 1 --max-replicas 3 --concurrency 1` serves a plug-in that holds its
replica 50 ms per call (test/ray_busy_policy.py). Serve's knobs are made short through
SEQUENCE_AI_RAY_AUTOSCALING (upscale after 0.5 s, metrics every 0.2 s over 1 s; the defaults
are 30 s, 10 s and 30 s: ray-project/ray, master, python/ray/serve/config.py
AutoscalingConfig). Eight stamped loops of the fleet bench keep the one replica's queue above
`target_ongoing_requests` (1), so Serve adds replicas; each loop must still play every step
once, in observation order, with no request lost.
"""

import json
import threading
import time

import pytest
from ray_cluster import policy_replicas, ray_gateway

pytest.importorskip('ray.serve', reason='the Ray gateway needs ray[serve] (requirements-dev.txt)')

KEY = 'seq_ray_autoscale_key_for_tests_01'
MODEL = 'pi05-droid'
KNOBS = {'upscale_delay_s': 0.5, 'downscale_delay_s': 600.0, 'metrics_interval_s': 0.2,
         'look_back_period_s': 1.0}


@pytest.fixture(scope='module')
def autoscaling_gateway():
    """One replica to start with, up to three, one call at a time each."""
    process = ray_gateway(
        ['--replicas', '1', '--max-replicas', '3', '--concurrency', '1', '--start-warm',
         '--idle-cold-s', '1000000', '--latency-median-s', '0',
         '--policy', 'ray_busy_policy:make_busy_fleet_policy'],
        keys={KEY: 10 ** 6}, env={'SEQUENCE_AI_RAY_AUTOSCALING': json.dumps(KNOBS)})
    yield process
    process.close()


def test_a_burst_scales_the_policy_up_and_every_loop_plays_each_step_once(autoscaling_gateway):
    from bench._fleet_clients import run_fleet, synthetic_frames  # the bench's stamped loops

    gateway = autoscaling_gateway
    assert len(policy_replicas(gateway.pid)) == 1
    seen: list[int] = []
    done = threading.Event()

    def count_replicas() -> None:
        while not done.wait(0.25):
            seen.append(len(policy_replicas(gateway.pid)))

    counter = threading.Thread(target=count_replicas)
    counter.start()
    try:
        results, _ = run_fleet(gateway.base_url, KEY, MODEL, list(range(8)), 15 * 30,
                               synthetic_frames(), time.monotonic() + 0.2)
    finally:
        done.set()
        counter.join()
    assert max(seen) > 1, f'replicas seen during the burst: {seen}'
    assert len(results) == 8
    for result in results:
        assert result.breaks == 0, result.check
        assert result.lost == 0 and result.failed == 0 and not result.error, result
        assert result.received > 0
    # Every call was answered 200: scaling up never turned one away, nor ran one twice.
    acts = gateway.stats()['acts']['accounts/sequences/models/' + MODEL]
    assert acts == {'200': sum(r.received for r in results)}, acts
