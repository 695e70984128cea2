"""
One relayed connection: the client's socket, its upstream twin, and the faults they meet.

Each request is given the first armed fault as it starts (see ProxyState.claim). What a
request is depends on the stream: plain HTTP/1.1 is framed into requests; anything else (TLS)
is split into turns, a turn being the client's bytes after the server last spoke.
"""

import asyncio
from collections.abc import Awaitable
import socket
import struct

from .http_framing import CannedResponse, HttpFramer, looks_like_http
from .link import CLOSE, EOF, Pipe
from .state import ProxyState

_READ_BYTES = 65536


class Connection:
    """One client connection, its upstream twin, and the fault of the request in progress."""

    def __init__(self, state: ProxyState, upstream: tuple[str, int],
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.state = state
        self.upstream = upstream
        self.accepted = asyncio.get_running_loop().time()
        self.client_reader, self.client_writer = reader, writer
        self.upstream_writer: asyncio.StreamWriter | None = None
        self.framer: HttpFramer | None = None  # decided by the first bytes
        self.fault: str | None = None
        self.canned: CannedResponse | None = None
        self.cut_left: int | None = None
        self.server_spoke = True  # so the client's first bytes start a turn
        self.eofs = 0
        self.finished = False
        self.done = asyncio.Event()

    async def serve(self) -> None:
        """Connect upstream and relay both ways until either side ends or a fault ends it."""
        loop = asyncio.get_running_loop()
        handshake = self.accepted + 2 * self.state.settings.latency_s
        try:
            upstream_reader, self.upstream_writer = await asyncio.open_connection(
                *self.upstream)
        except OSError:
            self.finish(reset=True)  # as the client would see a dead host behind a router
            return
        if self.finished:  # closed while connecting: finish() could not reach this socket
            self.upstream_writer.transport.abort()
            return
        self.up = Pipe(self.state, self.upstream_writer, 'bytes_up', handshake)
        self.down = Pipe(self.state, self.client_writer, 'bytes_down')
        tasks = [loop.create_task(self._guard(work)) for work in (
            self._from_client(), self._from_upstream(upstream_reader),
            self._deliver(self.up, self.upstream_writer),
            self._deliver(self.down, self.client_writer))]
        try:
            await self.done.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.finish(abort=True)

    def finish(self, *, reset: bool = False, abort: bool = False) -> None:
        """Close both sides: gracefully, by abort, or with an RST to the client."""
        if self.finished:
            return
        self.finished = True
        client = self.client_writer.transport
        if reset:
            sock = client.get_extra_info('socket')
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        if reset or abort:
            client.abort()
        else:
            client.close()
        if self.upstream_writer is not None:
            (self.upstream_writer.transport.abort if abort else self.upstream_writer.close)()
        self.done.set()

    async def _guard(self, work: Awaitable[None]) -> None:
        try:
            await work
        except OSError:  # a peer went away: end the pair as a router would
            self.finish(abort=True)
        except Exception as exc:  # a bug here must not hang the connection
            self.state.error(exc)
            self.finish(abort=True)

    async def _from_client(self) -> None:
        while True:
            data = await self.client_reader.read(_READ_BYTES)
            if not data or self.finished:
                break
            if self.framer is None:
                self.framer = HttpFramer(http=looks_like_http(data))
            for piece, starts, ends in self.framer.feed(data):
                if self.finished:
                    return
                framed = starts is not None
                if not framed:  # opaque: a turn starts when the server has spoken since
                    starts, self.server_spoke = self.server_spoke, False
                if starts:
                    self.fault, self.canned, self.cut_left = self.state.claim(framed)
                await self._client_bytes(piece, framed, ends)
        await self.up.put(EOF)

    async def _client_bytes(self, piece: bytes, framed: bool, ends: bool) -> None:
        if self.fault == 'stall':
            return
        if self.fault == 'reset':
            if ends or not framed:
                self.finish(reset=True)
            return
        if self.fault == 'respond':
            if ends and self.canned is not None and self.framer is not None:
                # Answered from the far side of the link: the request's leg counts too.
                await self.down.put(self.canned.render(self.framer.close), self.state.delay())
                if self.framer.close:
                    await self.down.put(CLOSE)
            return
        await self.up.put(piece)

    async def _from_upstream(self, reader: asyncio.StreamReader) -> None:
        while True:
            data = await reader.read(_READ_BYTES)
            if not data:
                break
            self.server_spoke = True
            if self.fault == 'stall':
                continue
            if self.cut_left is not None:
                data = data[:self.cut_left]
                self.cut_left -= len(data)
                if data:
                    await self.down.put(data)
                if not self.cut_left:
                    await self.down.put(CLOSE)
                    return
                continue
            await self.down.put(data)
        await self.down.put(EOF)

    async def _deliver(self, pipe: Pipe, writer: asyncio.StreamWriter) -> None:
        if await pipe.run() == CLOSE:
            self.finish()
            return
        if writer.can_write_eof() and not writer.transport.is_closing():
            writer.write_eof()
        self.eofs += 1
        if self.eofs == 2:
            self.finish()
