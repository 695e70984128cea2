"""Concurrency: requests beyond --concurrency queue FIFO and are all answered; connections."""

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
import statistics
import time

from fixtures_gateway import act_body, PREFIX
import httpx
import pytest
from sequence_ai_ros.gateway.fifo_gate import FifoGate

LATENCY_S = 5 * 0.02  # --latency-median-s 5 at --time-scale 0.02


def test_24_concurrent_calls_with_concurrency_2_are_all_answered(queue_gateway):
    body = act_body('lingbot-vla-v2-6b')
    before = queue_gateway.stats()

    def one_robot(_: int) -> httpx.Response:
        with httpx.Client(base_url=queue_gateway.base_url, timeout=30.0) as client:
            return client.post('/v1/act', json=body)

    started = time.monotonic()
    with ThreadPoolExecutor(24) as pool:
        responses = list(pool.map(one_robot, range(24)))
    elapsed = time.monotonic() - started
    assert [r.status_code for r in responses] == [200] * 24
    assert len({r.json()['id'] for r in responses}) == 24
    inference_s = [r.json()['perf']['inference_ms'] / 1000 for r in responses]
    assert statistics.median(inference_s) == pytest.approx(LATENCY_S, rel=0.3)
    # Two at a time: the wall time is at least half the summed inference time.
    assert elapsed >= 0.9 * sum(inference_s) / 2
    after = queue_gateway.stats()
    model = after['models'][PREFIX + 'lingbot-vla-v2-6b']
    assert model['max_queued'] >= 12 and model['queued'] == 0 and model['in_flight'] == 0
    assert after['acts'][PREFIX + 'lingbot-vla-v2-6b']['200'] == 24
    assert after['connections'] - before['connections'] == 24


def test_one_keep_alive_client_is_one_connection(queue_gateway):
    before = queue_gateway.stats()['connections']
    with httpx.Client(base_url=queue_gateway.base_url) as client:
        for _ in range(5):
            assert client.get('/v1/models').status_code == 200
    assert queue_gateway.stats()['connections'] - before == 1
    for _ in range(3):
        httpx.get(queue_gateway.base_url + '/v1/health')
    assert queue_gateway.stats()['connections'] - before == 4


def test_fifo_gate_admits_in_arrival_order_and_never_barges():
    async def scenario() -> list[int]:
        gate, order = FifoGate(2), []

        async def call(i: int) -> None:
            async with gate:
                order.append(i)
                await asyncio.sleep(0.001)

        tasks = []
        for i in range(30):
            tasks.append(asyncio.create_task(call(i)))
            if i % 3 == 0:
                await asyncio.sleep(0)  # let releases and arrivals interleave
        await asyncio.gather(*tasks)
        assert gate.queued == 0 and gate.holders == 0 and gate.max_queued > 10
        return order

    assert asyncio.run(scenario()) == list(range(30))


async def held_gate() -> tuple[FifoGate, list[str], Callable[[str], Awaitable[None]]]:
    """Return a one-slot gate already held, its order of entry, and a call that enters it."""
    gate, order = FifoGate(1), []
    await gate.acquire()

    async def call(name: str) -> None:
        async with gate:
            order.append(name)
    return gate, order, call


def test_fifo_gate_survives_cancelled_waiters():
    async def scenario() -> list[str]:
        gate, order, call = await held_gate()
        a, b, c = (asyncio.create_task(call(n)) for n in 'abc')
        await asyncio.sleep(0)
        b.cancel()
        gate.release()
        await asyncio.gather(a, c, return_exceptions=True)
        assert b.cancelled() and gate.holders == 0
        return order

    assert asyncio.run(scenario()) == ['a', 'c']


def test_fifo_gate_passes_on_a_slot_handed_to_a_waiter_that_gave_up():
    async def scenario() -> list[str]:
        gate, order, call = await held_gate()
        a, c = asyncio.create_task(call('a')), asyncio.create_task(call('c'))
        await asyncio.sleep(0)
        gate.release()  # hands the slot to a ...
        a.cancel()  # ... which gives up before it runs
        await asyncio.gather(a, c, return_exceptions=True)
        assert gate.holders == 0 and gate.queued == 0
        return order

    assert asyncio.run(scenario()) == ['c']
