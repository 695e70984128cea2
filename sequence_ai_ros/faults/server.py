"""
The proxy's listening side: an asyncio loop in a daemon thread.

It accepts connections and relays each one until it is stopped, from any thread.
"""

import asyncio
from collections.abc import Callable
import threading
from typing import Any

from .connection import Connection
from .state import ProxyState

_STOP_WAIT_S = 5.0


class RelayServer:
    """Listen on (host, port) and relay every connection to `upstream` through `state`'s link."""

    def __init__(self, state: ProxyState, upstream: tuple[str, int], host: str,
                 port: int) -> None:
        self.state = state
        self.upstream = upstream
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._start_error: OSError | None = None
        self._conns: set[Connection] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = False

    def start(self) -> int:
        """Bind and start the loop thread; return the bound port, or raise OSError."""
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(self._loop, ready), daemon=True,
                                        name=f'FaultProxy->{self.upstream[1]}')
        self._thread.start()
        ready.wait()
        if self._start_error is not None:
            self._thread.join()
            raise self._start_error
        return self.port

    def stop(self) -> None:
        """Close every connection and the listening socket, and join the thread."""
        if self._stop is not None:
            self._on_loop(self._stop.set)
        if self._thread is not None:
            self._thread.join()

    def release_stalled(self) -> None:
        """Close the connections whose request is stalled (the clients see them end)."""
        def release() -> None:
            for conn in list(self._conns):
                if conn.fault == 'stall':
                    conn.finish()

        self._on_loop(release)

    def _on_loop(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the loop thread, unless the loop is gone (nothing left to do)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(callback)
        except RuntimeError:  # the loop closed in between
            pass

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(self.state, self.upstream, reader, writer)
        if self.state.accepted() or self._stopping:
            conn.finish(reset=True)
            return
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._conns.add(conn)
        self.state.count('open_now')
        try:
            await conn.serve()
        except Exception as exc:  # the server task would only log it
            self.state.error(exc)
            conn.finish(abort=True)
        finally:
            self._conns.discard(conn)
            self.state.count('open_now', -1)
            if task is not None:
                self._tasks.discard(task)

    async def _main(self, ready: threading.Event) -> None:
        self._stop = asyncio.Event()
        try:
            server = await asyncio.start_server(self._accept, self.host, self.port)
        except OSError as exc:
            self._start_error = exc
            ready.set()
            return
        self.port = int(server.sockets[0].getsockname()[1])
        ready.set()
        await self._stop.wait()
        self._stopping = True
        server.close()
        for conn in list(self._conns):
            conn.finish(abort=True)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=_STOP_WAIT_S)
        try:
            await asyncio.wait_for(server.wait_closed(), _STOP_WAIT_S)
        except asyncio.TimeoutError:
            pass

    def _run(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main(ready))
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()
                ready.set()
