"""
A FIFO concurrency gate: at most N holders, waiters admitted strictly in arrival order.

asyncio.Semaphore lets a newcomer barge past woken waiters on Python 3.10 (fixed later), which
would reorder queued requests; here a released slot is handed straight to the oldest waiter.
"""

import asyncio
from collections import deque
from types import TracebackType


class FifoGate:
    """An async context manager bounding concurrency, first come first served, never dropping."""

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.holders = 0
        self.max_queued = 0

    @property
    def queued(self) -> int:
        """Count the calls waiting for a slot now."""
        return sum(1 for f in self._waiters if not f.done())

    async def acquire(self) -> None:
        """Wait for a slot, behind everyone who asked earlier."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
        else:
            future = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            self.max_queued = max(self.max_queued, self.queued)
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._release_slot()  # handed a slot just as we gave up: pass it on
                else:
                    try:
                        self._waiters.remove(future)
                    except ValueError:
                        pass
                raise
        self.holders += 1

    def release(self) -> None:
        """Give the slot to the oldest waiter, or back to the pool."""
        self.holders -= 1
        self._release_slot()

    def _release_slot(self) -> None:
        while self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)
                return
        self._free += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
