"""
Warm-up 503s on Ray Serve: test_gateway_warmup's cold-gateway tests, unchanged, on 2 replicas.

The `cold_gateway` fixture below takes the place of the session's with `gateway --ray` and the
same flags (cold start 0.5 s, cold again after 0.4 s idle): warmth lives in the ingress, so one
timeline holds whichever replica answers.
"""

from fixtures_gateway import MAIN_KEY
import pytest
from ray_cluster import ray_gateway
from unit.test_gateway_warmup import (  # noqa: F401 (collected here, against the Ray gateway)
    test_cold_model_timeline,
    test_invalid_request_does_not_wake_a_cold_model,
)

pytest.importorskip('ray.serve', reason='the Ray gateway needs ray[serve] (requirements-dev.txt)')


@pytest.fixture(scope='module')
def cold_gateway():
    """Cold models on Ray: 50 model s to warm (0.5 s here), cold again after 40 model s idle."""
    process = ray_gateway(['--replicas', '2', '--cold-start-s', '50', '--idle-cold-s', '40'],
                          time_scale=0.01, keys={MAIN_KEY: 1000})
    yield process
    process.close()
