"""
The bounded queue, FIFO order, 413 and 408 on Ray Serve: the in-process tests, unchanged.

One `gateway --ray` serves the three fixtures those tests take (queue_gateway,
small_body_gateway, abuse_gateway): 2 policy replicas of one inference at a time each (two at
once per model, as `--concurrency 2` is in-process), ~5 model s per inference, bodies over
200 kB refused, a body silent for 1.5 s refused. Auth is off, as on the queue gateway. The
abuse tests' memory watch reads the ingress replica, where the gateway reads each body.
"""

from pathlib import Path

from fixtures_gateway import act_body
import httpx
import pytest
from ray_cluster import ray_gateway
from unit import test_gateway_abuse
from unit.test_gateway_abuse import (  # noqa: F401 (collected here, against the Ray gateway)
    test_concurrent_slow_uploads,
    test_content_length_that_promises_more_than_is_sent,
)
from unit.test_gateway_queue import (  # noqa: F401
    test_24_concurrent_calls_with_concurrency_2_are_all_answered,
    test_one_keep_alive_client_is_one_connection,
)
from unit.test_gateway_validation import (  # noqa: F401
    test_413_from_content_length_without_reading_the_body,
    test_413_while_streaming_a_chunked_body,
    test_a_body_under_the_limit_passes,
)

pytest.importorskip('ray.serve', reason='the Ray gateway needs ray[serve] (requirements-dev.txt)')


@pytest.fixture(scope='module')
def limits_gateway():
    """Serve the queue, body-limit and body-timeout flags at once, on 2 replicas."""
    process = ray_gateway(
        ['--replicas', '2', '--concurrency', '1', '--start-warm', '--idle-cold-s', '1000000',
         '--latency-median-s', '5', '--max-body-bytes', '200000',
         '--body-timeout-s', str(test_gateway_abuse.BODY_TIMEOUT_S)])
    yield process
    process.close()


@pytest.fixture(scope='module')
def queue_gateway(limits_gateway):
    """Two inferences at a time per model (one per replica), each ~5 model s (0.1 s here)."""
    return limits_gateway


@pytest.fixture(scope='module')
def small_body_gateway(limits_gateway):
    """Refusing bodies over 200 kB."""
    return limits_gateway


class IngressView:
    """The Ray gateway as test_gateway_abuse's Watch reads it: memory is the ingress's."""

    def __init__(self, process) -> None:
        self.process = process
        self.host, self.port, self.base_url = process.host, process.port, process.base_url
        self.pid = process.stats()['pid']

    def running(self) -> bool:
        """Whether both the launcher and the ingress replica are alive."""
        return self.process.running() and Path(f'/proc/{self.pid}').exists()

    def log(self) -> str:
        """Return what the launcher wrote; Ray's own logs stay in its session directory."""
        return self.process.log()


@pytest.fixture(scope='module')
def abuse_gateway(limits_gateway):
    """Body timeout 1.5 s; the memory baseline taken after a first inference, as in-process."""
    response = httpx.post(limits_gateway.base_url + '/v1/act', json=act_body(),
                          timeout=test_gateway_abuse.ANSWER_TIMEOUT_S)
    assert response.status_code == 200, response.text
    view = IngressView(limits_gateway)
    test_gateway_abuse._BASELINE_KIB[view.pid] = test_gateway_abuse._memory_kib(view.pid)['VmRSS']
    return view
