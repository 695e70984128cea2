"""
FaultProxy: a user-space TCP proxy between two loopback ports that shapes and breaks the link.

`tc netem` needs root and a kernel module; this needs neither. It forwards bytes (so TLS passes
through untouched) on an asyncio loop in its own daemon thread, and every setting below may be
changed from any thread while traffic flows.

The link (stays until changed or `clear()`):
  latency_s              one-way delay added in each direction, so a round trip gains 2x
  jitter_s               a random extra 0..jitter_s per delivered chunk; order is preserved
  bandwidth_bytes_per_s  per direction, per connection (None: unlimited)
  drip(bytes, s)         responses arrive `bytes` at a time, one piece every `s` seconds
A new connection's first byte also waits one round trip (2 x latency_s): the proxy's own
accept on loopback is instant, where a TCP handshake across a real link is not.

Faults, applied to requests in arrival order (one each, the first armed of: reset, stall,
respond, cut):
  reset_next(n)          RST (SO_LINGER 0) once the request has arrived; it is not forwarded
  stall_next(n)          read the request, never forward or answer it; the connection stays
                         open until clear() or close()
  respond_next(n, ...)   answer plain HTTP with a canned response instead of forwarding (it
                         takes the link's round trip, as if from the gateway), and keep the
                         connection alive for the next request
  cut_after(n_bytes)     forward the first n_bytes of the response, then close
Modes (stay until cleared): `stall = True` stalls every request; `refuse = True` resets every
new connection as soon as it is accepted.

What a request is: a client keeps one connection for many requests, so faults must reach the
next request on an open connection, not only new connections. Plain HTTP/1.1 (recognised by
its first bytes) is framed: a request is a head plus its Content-Length or chunked body. Other
streams (TLS) cannot be framed, so a request is a *turn*: the client's bytes after the server
last spoke. A TLS handshake's first flight is a turn too, so a fault armed before a new TLS
connection hits its handshake; on an open TLS connection it hits the next request.
`respond_next` needs plain HTTP and waits for the next framed request.
"""

import asyncio
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
import ipaddress
import math
import random
import re
import socket
import struct
import threading
from types import TracebackType
from typing import Any

_READ_BYTES = 65536
_MAX_LINE = 65536  # longest request head or chunk-size line framed before giving up on HTTP
_QUEUE_CHUNKS = 64  # per direction: a slow link pushes back on the sender instead of buffering
_SLICE_S = 0.005  # bandwidth is shaped in slices of this much link time
_STOP_WAIT_S = 5.0
_EOF, _CLOSE = 'eof', 'close'  # pipe sentinels: half-close the far side, or end the connection
_REQUEST_START = re.compile(rb'[A-Z]+ ')
_LOOPBACK_V4 = ipaddress.ip_network('127.0.0.0/8')
_LOOPBACK_V6 = ipaddress.ip_address('::1')
FAULTS = ('refuse', 'reset', 'stall', 'respond', 'cut')


def is_loopback(host: str) -> bool:
    """Tell whether `host` is 127.0.0.0/8, ::1 or 'localhost' (no name is looked up)."""
    if host.lower() == 'localhost':
        return True
    try:
        address = ipaddress.ip_address(host[1:-1] if host.startswith('[') else host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address in _LOOPBACK_V4
    return address == _LOOPBACK_V6


@dataclass(frozen=True)
class ProxyStats:
    """
    What the proxy has seen since it started.

    `requests` counts plain-HTTP requests only (TLS is opaque); `bytes_up` and `bytes_down` are
    bytes delivered to the gateway and to the client; `faults` counts each fault that fired;
    `late_s` sums how long after its due time each of the `deliveries` was written (timer
    wake-up, a busy machine): the proxy's own addition to the link it emulates; `errors`
    holds unexpected internal errors (a bug if not empty).
    """

    accepted: int
    open_now: int
    requests: int
    bytes_up: int
    bytes_down: int
    faults: dict[str, int]
    deliveries: int = 0
    late_s: float = 0.0
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Canned:
    status: int
    body: bytes
    content_type: str | None
    headers: tuple[tuple[str, str], ...] = field(default=())

    def render(self, close: bool) -> bytes:
        try:
            reason = HTTPStatus(self.status).phrase
        except ValueError:
            reason = 'Unknown'
        fields = {'content-length': ('Content-Length', str(len(self.body)))}
        if self.content_type is not None:
            fields['content-type'] = ('Content-Type', self.content_type)
        fields['connection'] = ('Connection', 'close' if close else 'keep-alive')
        for name, value in self.headers:  # the caller's headers win, even a lying length
            fields[name.lower()] = (name, value)
        head = ''.join(f'{name}: {value}\r\n' for name, value in fields.values())
        return f'HTTP/1.1 {self.status} {reason}\r\n{head}\r\n'.encode('latin-1') + self.body


class _HttpFramer:
    """Split a client's bytes into HTTP/1.1 requests; anything it cannot frame goes opaque."""

    def __init__(self, http: bool) -> None:
        self.state = 'head' if http else 'opaque'
        self.buffer = bytearray()  # the head or line being read
        self.left = 0  # bytes left of a body, or of a chunk with its CRLF
        self.close = False  # the current request asked for the connection to close

    def feed(self, data: bytes) -> list[tuple[bytes, bool | None, bool]]:
        """Return segments (bytes, starts a request or None if unknown, ends a request)."""
        out: list[tuple[bytes, bool | None, bool]] = []
        while data:
            if self.state == 'opaque':
                out.append((data, None, False))
                break
            starts = self.state == 'head' and not self.buffer
            used, ends = self._step(data)
            out.append((data[:used], starts, ends))
            data = data[used:]
        return out

    def _step(self, data: bytes) -> tuple[int, bool]:
        if self.state in ('body', 'data'):
            used = min(self.left, len(data))
            self.left -= used
            if self.left:
                return used, False
            ended = self.state == 'body'
            self.state = 'head' if ended else 'size'
            return used, ended
        marker = b'\r\n\r\n' if self.state == 'head' else b'\r\n'
        start = max(0, len(self.buffer) - len(marker) + 1)
        self.buffer += data
        found = self.buffer.find(marker, start)
        if found < 0:
            if len(self.buffer) > _MAX_LINE:
                self.state = 'opaque'
            return len(data), False
        used = len(data) - (len(self.buffer) - found - len(marker))
        line = bytes(self.buffer[:found])
        self.buffer.clear()
        return used, self._line(line)

    def _line(self, line: bytes) -> bool:
        """Act on a whole head, chunk-size line or trailer line; True when the request ends."""
        if self.state == 'head':
            return self._head(line)
        if self.state == 'size':
            try:
                size = int(line.split(b';', 1)[0].strip(), 16)
            except ValueError:
                self.state = 'opaque'
                return False
            self.state, self.left = ('trailer', 0) if size == 0 else ('data', size + 2)
            return False
        if line:  # a trailer field; the empty line ends the request
            return False
        self.state = 'head'
        return True

    def _head(self, head: bytes) -> bool:
        lines = head.split(b'\r\n')
        parts = lines[0].split(b' ')
        fields: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(b':')
            fields[name.strip().lower()] = value.strip().lower()
            if not colon:
                parts = []
        if len(parts) != 3 or not parts[2].startswith(b'HTTP/1.'):
            self.state = 'opaque'
            return False
        connection = fields.get(b'connection', b'')
        self.close = b'close' in connection or (
            parts[2] == b'HTTP/1.0' and b'keep-alive' not in connection)
        if b'chunked' in fields.get(b'transfer-encoding', b''):
            self.state = 'size'
            return False
        try:
            length = int(fields.get(b'content-length', b'0'))
        except ValueError:
            length = -1
        if length < 0:
            self.state = 'opaque'
        elif length:
            self.state, self.left = 'body', length
        return length == 0


async def _sleep_until(loop: asyncio.AbstractEventLoop, when: float) -> None:
    delay = when - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)


class _Pipe:
    """One direction of one connection: chunks delivered in order, each when the link says."""

    def __init__(self, proxy: 'FaultProxy', writer: asyncio.StreamWriter, counter: str,
                 not_before: float = 0.0) -> None:
        self.proxy = proxy
        self.writer = writer
        self.counter = counter
        self.not_before = not_before
        self.queue: asyncio.Queue[tuple[float, bytes | str]] = asyncio.Queue(_QUEUE_CHUNKS)
        self.last_due = 0.0
        self.free_at = 0.0  # when the shaped link has finished sending the previous chunk

    async def put(self, data: bytes | str, extra_s: float = 0.0) -> None:
        """Queue bytes (or a sentinel) to arrive one latency, plus jitter and extra, from now."""
        delay = self.proxy._delay() + extra_s
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
            bandwidth, drip = self.proxy._shaping(self.counter == 'bytes_down')
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
        self.proxy._delivered(self.counter, len(data), late_s)


class _Connection:
    """One client connection, its upstream twin, and the fault of the request in progress."""

    def __init__(self, proxy: 'FaultProxy', reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.accepted = asyncio.get_running_loop().time()
        self.client_reader, self.client_writer = reader, writer
        self.upstream_writer: asyncio.StreamWriter | None = None
        self.framer: _HttpFramer | None = None  # decided by the first bytes
        self.fault: str | None = None
        self.canned: _Canned | None = None
        self.cut_left: int | None = None
        self.server_spoke = True  # so the client's first bytes start a turn
        self.eofs = 0
        self.finished = False
        self.done = asyncio.Event()

    async def serve(self) -> None:
        """Connect upstream and relay both ways until either side ends or a fault ends it."""
        loop = asyncio.get_running_loop()
        handshake = self.accepted + 2 * self.proxy.latency_s
        try:
            upstream_reader, self.upstream_writer = await asyncio.open_connection(
                *self.proxy.upstream)
        except OSError:
            self.finish(reset=True)  # as the client would see a dead host behind a router
            return
        if self.finished:  # closed while connecting: finish() could not reach this socket
            self.upstream_writer.transport.abort()
            return
        self.up = _Pipe(self.proxy, self.upstream_writer, 'bytes_up', handshake)
        self.down = _Pipe(self.proxy, self.client_writer, 'bytes_down')
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

    async def _guard(self, work: Any) -> None:
        try:
            await work
        except OSError:  # a peer went away: end the pair as a router would
            self.finish(abort=True)
        except Exception as exc:  # a bug here must not hang the connection
            self.proxy._error(exc)
            self.finish(abort=True)

    async def _from_client(self) -> None:
        while True:
            data = await self.client_reader.read(_READ_BYTES)
            if not data or self.finished:
                break
            if self.framer is None:
                self.framer = _HttpFramer(http=bool(_REQUEST_START.match(data)))
            for piece, starts, ends in self.framer.feed(data):
                if self.finished:
                    return
                framed = starts is not None
                if not framed:  # opaque: a turn starts when the server has spoken since
                    starts, self.server_spoke = self.server_spoke, False
                if starts:
                    self.fault, self.canned, self.cut_left = self.proxy._claim(framed)
                await self._client_bytes(piece, framed, ends)
        await self.up.put(_EOF)

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
                await self.down.put(self.canned.render(self.framer.close), self.proxy._delay())
                if self.framer.close:
                    await self.down.put(_CLOSE)
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
                    await self.down.put(_CLOSE)
                    return
                continue
            await self.down.put(data)
        await self.down.put(_EOF)

    async def _deliver(self, pipe: _Pipe, writer: asyncio.StreamWriter) -> None:
        if await pipe.run() == _CLOSE:
            self.finish()
            return
        if writer.can_write_eof() and not writer.transport.is_closing():
            writer.write_eof()
        self.eofs += 1
        if self.eofs == 2:
            self.finish()


def _seconds(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value < 0:
        raise ValueError(f'{name} must be a finite number of seconds >= 0, got {value!r}')
    return float(value)


def _count_arg(value: int, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f'{name} must be a whole number >= {minimum}, got {value!r}')
    return value


class FaultProxy:
    """
    Forward a loopback port to a loopback upstream, with latency and faults (see the module).

    Use as a context manager, or `start()` and `close()`. `port` is the bound port once
    started; point the client at `url()`. Only loopback addresses are accepted on either side:
    this is a test tool, never a relay onto a network.
    """

    def __init__(self, upstream_host: str, upstream_port: int, *,
                 listen_host: str = '127.0.0.1', listen_port: int = 0,
                 seed: int | None = None) -> None:
        for role, host in (('upstream', upstream_host), ('listen', listen_host)):
            if not isinstance(host, str) or not is_loopback(host):
                raise ValueError(f'{role} address {host!r} is not loopback (127.0.0.0/8, ::1 or '
                                 'localhost): FaultProxy only relays between local ports')
        _count_arg(upstream_port, 'upstream_port')
        if upstream_port > 65535:
            raise ValueError(f'upstream_port must be <= 65535, got {upstream_port}')
        if _count_arg(listen_port, 'listen_port', 0) > 65535:
            raise ValueError(f'listen_port must be <= 65535, got {listen_port}')
        self.upstream = (upstream_host.strip('[]'), upstream_port)
        # One address family only: 'localhost' would bind ::1 and 127.0.0.1 on two ports.
        self.host = '127.0.0.1' if listen_host.lower() == 'localhost' else listen_host.strip('[]')
        self.port = listen_port
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(
            ('accepted', 'open_now', 'requests', 'bytes_up', 'bytes_down', 'deliveries'), 0)
        self._late_s = 0.0
        self._fired = dict.fromkeys(FAULTS, 0)
        self._errors: list[str] = []
        self._reset_link()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._start_error: BaseException | None = None
        self._conns: set[_Connection] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._closed = False

    def _reset_link(self) -> None:
        self._latency_s = 0.0
        self._jitter_s = 0.0
        self._bandwidth: float | None = None
        self._drip: tuple[int, float] | None = None
        self._stall = False
        self._refuse = False
        self._armed = {'reset': 0, 'stall': 0}
        self._respond: deque[list[Any]] = deque()  # [remaining, _Canned]
        self._cut: deque[list[int]] = deque()  # [remaining, n_bytes]

    def __repr__(self) -> str:
        state = 'closed' if self._closed else 'running' if self._thread else 'not started'
        return (f'FaultProxy({self.url()} -> {self.upstream[0]}:{self.upstream[1]}, '
                f'latency_s={self.latency_s}, {state})')

    def url(self, scheme: str = 'http') -> str:
        """Return `scheme://host:port` of the listening side, for a client's base_url."""
        host = f'[{self.host}]' if ':' in self.host else self.host
        return f'{scheme}://{host}:{self.port}'

    # -- the link ---------------------------------------------------------------------------

    @property
    def latency_s(self) -> float:
        """One-way delay added in each direction (a round trip gains twice this)."""
        with self._lock:
            return self._latency_s

    @latency_s.setter
    def latency_s(self, value: float) -> None:
        value = _seconds(value, 'latency_s')
        with self._lock:
            self._latency_s = value

    @property
    def jitter_s(self) -> float:
        """Up to this much random extra delay per delivered chunk (order is kept)."""
        with self._lock:
            return self._jitter_s

    @jitter_s.setter
    def jitter_s(self, value: float) -> None:
        value = _seconds(value, 'jitter_s')
        with self._lock:
            self._jitter_s = value

    @property
    def bandwidth_bytes_per_s(self) -> float | None:
        """Cap on bytes per second, per direction and per connection; None for no cap."""
        with self._lock:
            return self._bandwidth

    @bandwidth_bytes_per_s.setter
    def bandwidth_bytes_per_s(self, value: float | None) -> None:
        if value is not None and not (isinstance(value, (int, float)) and
                                      math.isfinite(value) and value > 0):
            raise ValueError(f'bandwidth_bytes_per_s must be > 0 or None, got {value!r}')
        with self._lock:
            self._bandwidth = None if value is None else float(value)

    def drip(self, chunk_bytes: int, interval_s: float) -> None:
        """Deliver responses `chunk_bytes` at a time, one piece per `interval_s`, until clear()."""
        chunk_bytes = _count_arg(chunk_bytes, 'chunk_bytes')
        interval_s = _seconds(interval_s, 'interval_s')
        with self._lock:
            self._drip = (chunk_bytes, interval_s)

    # -- faults -----------------------------------------------------------------------------

    @property
    def stall(self) -> bool:
        """Stall mode: every request is read and never answered, until cleared."""
        with self._lock:
            return self._stall

    @stall.setter
    def stall(self, value: bool) -> None:
        with self._lock:
            self._stall = bool(value)
        if not value:
            self._release_stalled()

    @property
    def refuse(self) -> bool:
        """Refuse mode: every new connection is reset at once, until cleared."""
        with self._lock:
            return self._refuse

    @refuse.setter
    def refuse(self, value: bool) -> None:
        with self._lock:
            self._refuse = bool(value)

    def reset_next(self, n: int = 1) -> None:
        """Reset the next n requests (RST) once each has arrived; they are not forwarded."""
        n = _count_arg(n, 'n')
        with self._lock:
            self._armed['reset'] += n

    def stall_next(self, n: int = 1) -> None:
        """Read the next n requests and never answer; held open until clear() or close()."""
        n = _count_arg(n, 'n')
        with self._lock:
            self._armed['stall'] += n

    def respond_next(self, n: int, status: int, body: bytes,
                     content_type: str | None = 'application/json',
                     headers: dict[str, str] | None = None) -> None:
        """
        Answer the next n plain-HTTP requests with this response instead of forwarding them.

        A real HTTP/1.1 answer with Content-Length; the connection stays alive unless the
        request asked to close it. `content_type=None` sends no Content-Type; `headers` are
        added and replace defaults of the same name (even Content-Length, to lie on purpose).
        """
        n = _count_arg(n, 'n')
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 999:
            raise ValueError(f'status must be an HTTP status code, got {status!r}')
        if not isinstance(body, (bytes, bytearray)):
            raise TypeError(f'body must be bytes, got {type(body).__name__}')
        canned = _Canned(status, bytes(body), content_type,
                         tuple((str(k), str(v)) for k, v in (headers or {}).items()))
        with self._lock:
            self._respond.append([n, canned])

    def cut_after(self, n_bytes: int, times: int = 1) -> None:
        """Forward only the first n_bytes of the next `times` responses, then close."""
        n_bytes = _count_arg(n_bytes, 'n_bytes', 0)
        times = _count_arg(times, 'times')
        with self._lock:
            self._cut.append([times, n_bytes])

    def clear(self) -> None:
        """Make the link clean: no latency, no shaping, no faults; close stalled connections."""
        with self._lock:
            self._reset_link()
        self._release_stalled()

    def stats(self) -> ProxyStats:
        """Return a snapshot of the counters."""
        with self._lock:
            return ProxyStats(faults=dict(self._fired), late_s=self._late_s,
                              errors=tuple(self._errors), **self._counts)

    # -- called on the loop thread ------------------------------------------------------------

    def _delay(self) -> float:
        with self._lock:
            latency, jitter = self._latency_s, self._jitter_s
        return latency + (self._rng.uniform(0.0, jitter) if jitter else 0.0)

    def _shaping(self, down: bool) -> tuple[float | None, tuple[int, float] | None]:
        with self._lock:
            return self._bandwidth, self._drip if down else None

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def _delivered(self, counter: str, n_bytes: int, late_s: float) -> None:
        with self._lock:
            self._counts[counter] += n_bytes
            self._counts['deliveries'] += 1
            self._late_s += max(0.0, late_s)

    def _error(self, exc: BaseException) -> None:
        with self._lock:
            self._errors.append(f'{type(exc).__name__}: {exc}')

    def _claim(self, http: bool) -> tuple[str | None, _Canned | None, int | None]:
        """Give a starting request the first armed fault, if any: (fault, canned, cut)."""
        with self._lock:
            self._counts['requests'] += http
            fault, canned, cut = None, None, None
            if self._armed['reset']:
                self._armed['reset'] -= 1
                fault = 'reset'
            elif self._stall:
                fault = 'stall'
            elif self._armed['stall']:
                self._armed['stall'] -= 1
                fault = 'stall'
            elif http and self._respond:
                fault, canned = 'respond', self._take(self._respond)
            elif self._cut:
                fault, cut = 'cut', self._take(self._cut)
            if fault:
                self._fired[fault] += 1
            return fault, canned, cut

    @staticmethod
    def _take(queue: deque[list[Any]]) -> Any:
        entry = queue[0]
        entry[0] -= 1
        if not entry[0]:
            queue.popleft()
        return entry[1]

    def _release_stalled(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def release() -> None:
            for conn in list(self._conns):
                if conn.fault == 'stall':
                    conn.finish()

        try:
            loop.call_soon_threadsafe(release)
        except RuntimeError:  # the loop closed in between
            pass

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(self, reader, writer)
        with self._lock:
            self._counts['accepted'] += 1
            refuse = self._refuse
            self._fired['refuse'] += refuse
        if refuse or self._stopping:
            conn.finish(reset=True)
            return
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._conns.add(conn)
        self._count('open_now')
        try:
            await conn.serve()
        except Exception as exc:  # the server task would only log it
            self._error(exc)
            conn.finish(abort=True)
        finally:
            self._conns.discard(conn)
            self._count('open_now', -1)
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

    # -- lifetime ---------------------------------------------------------------------------

    def start(self) -> 'FaultProxy':
        """Bind and start forwarding in a daemon thread; OSError if the port cannot be bound."""
        if self._closed:
            raise RuntimeError('this FaultProxy is closed; make a new one')
        if self._thread is not None:
            return self
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(self._loop, ready), daemon=True,
                                        name=f'FaultProxy->{self.upstream[1]}')
        self._thread.start()
        ready.wait()
        if self._start_error is not None:
            self._thread.join()
            self._closed = True
            raise self._start_error
        return self

    def close(self) -> None:
        """Close every connection and the listening socket, and join the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        loop, thread, stop = self._loop, self._thread, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop closed in between
                pass
        if thread is not None:
            thread.join()

    def __enter__(self) -> 'FaultProxy':
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
