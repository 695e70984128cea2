"""
One direction of one relayed connection: chunks delivered in order, each when the link says.

A chunk is due one latency (plus jitter) after it was queued, and never before the chunk ahead
of it, so jitter delays without reordering. A bandwidth cap or a drip then splits it into
pieces that arrive as a slow link would carry them.
"""

import asyncio

from .state import ProxyState

EOF, CLOSE = 'eof', 'close'  # sentinels: half-close the far side, or end the connection
_QUEUE_CHUNKS = 64  # a slow link pushes back on the sender instead of buffering
_SLICE_S = 0.005  # bandwidth is shaped in slices of this much link time


async def _sleep_until(loop: asyncio.AbstractEventLoop, when: float) -> None:
    delay = when - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)


class Pipe:
    """Deliver one direction's chunks to `writer`, counting them under `counter`."""

    def __init__(self, state: ProxyState, writer: asyncio.StreamWriter, counter: str,
                 not_before: float = 0.0) -> None:
        self.state = state
        self.writer = writer
        self.counter = counter
        self.not_before = not_before
        self.queue: asyncio.Queue[tuple[float, bytes | str]] = asyncio.Queue(_QUEUE_CHUNKS)
        self.last_due = 0.0
        self.free_at = 0.0  # when the shaped link has finished sending the previous chunk

    async def put(self, data: bytes | str, extra_s: float = 0.0) -> None:
        """Queue bytes (or a sentinel) to arrive one latency, plus jitter and extra, from now."""
        delay = self.state.delay() + extra_s
        due = max(asyncio.get_running_loop().time(), self.not_before) + delay
        self.last_due = due = max(due, self.last_due)
        await self.queue.put((due, data))

    async def run(self) -> str:
        """Deliver chunks until a sentinel arrives; return it."""
        loop = asyncio.get_running_loop()
        while True:
            due, data = await self.queue.get()
            if isinstance(data, str):
                await _sleep_until(loop, max(due, self.free_at))
                return data
            bandwidth, drip = self.state.shaping(self.counter == 'bytes_down')
            if bandwidth is None and drip is None:
                await _sleep_until(loop, due)
                await self._write(data, loop.time() - due)
                continue
            size = drip[0] if drip is not None else max(1, int((bandwidth or 0) * _SLICE_S))
            at = max(due, self.free_at)
            for start in range(0, len(data), size):
                piece = data[start:start + size]
                # A piece arrives once the link has carried all of it: serialisation first.
                at += max(len(piece) / bandwidth if bandwidth else 0.0, drip[1] if drip else 0.0)
                await _sleep_until(loop, at)
                await self._write(piece, loop.time() - at)
            self.free_at = at

    async def _write(self, data: bytes, late_s: float) -> None:
        self.writer.write(data)
        await self.writer.drain()
        self.state.delivered(self.counter, len(data), late_s)
