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

from types import TracebackType

from . import arguments
from .arguments import is_loopback
from .http_framing import CannedResponse
from .server import RelayServer
from .state import ProxyState, ProxyStats

__all__ = ['FaultProxy', 'ProxyStats', 'is_loopback']


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
        arguments.loopback('upstream', upstream_host)
        arguments.loopback('listen', listen_host)
        arguments.port(upstream_port, 'upstream_port', 1)
        arguments.port(listen_port, 'listen_port', 0)
        self.upstream = (upstream_host.strip('[]'), upstream_port)
        # One address family only: 'localhost' would bind ::1 and 127.0.0.1 on two ports.
        self.host = '127.0.0.1' if listen_host.lower() == 'localhost' else listen_host.strip('[]')
        self.port = listen_port
        self._state = ProxyState(seed)
        self._server: RelayServer | None = None
        self._closed = False

    def __repr__(self) -> str:
        state = 'closed' if self._closed else 'running' if self._server else 'not started'
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
        return self._state.settings.latency_s

    @latency_s.setter
    def latency_s(self, value: float) -> None:
        self._state.change(latency_s=arguments.seconds(value, 'latency_s'))

    @property
    def jitter_s(self) -> float:
        """Up to this much random extra delay per delivered chunk (order is kept)."""
        return self._state.settings.jitter_s

    @jitter_s.setter
    def jitter_s(self, value: float) -> None:
        self._state.change(jitter_s=arguments.seconds(value, 'jitter_s'))

    @property
    def bandwidth_bytes_per_s(self) -> float | None:
        """Cap on bytes per second, per direction and per connection; None for no cap."""
        return self._state.settings.bandwidth_bytes_per_s

    @bandwidth_bytes_per_s.setter
    def bandwidth_bytes_per_s(self, value: float | None) -> None:
        self._state.change(bandwidth_bytes_per_s=arguments.bandwidth(value))

    def drip(self, chunk_bytes: int, interval_s: float) -> None:
        """Deliver responses `chunk_bytes` at a time, one piece per `interval_s`, until clear()."""
        chunk_bytes = arguments.whole_number(chunk_bytes, 'chunk_bytes')
        interval_s = arguments.seconds(interval_s, 'interval_s')
        self._state.change(drip=(chunk_bytes, interval_s))

    # -- faults -----------------------------------------------------------------------------

    @property
    def stall(self) -> bool:
        """Stall mode: every request is read and never answered, until cleared."""
        return self._state.settings.stall

    @stall.setter
    def stall(self, value: bool) -> None:
        self._state.change(stall=bool(value))
        if not value:
            self._release_stalled()

    @property
    def refuse(self) -> bool:
        """Refuse mode: every new connection is reset at once, until cleared."""
        return self._state.settings.refuse

    @refuse.setter
    def refuse(self, value: bool) -> None:
        self._state.change(refuse=bool(value))

    def reset_next(self, n: int = 1) -> None:
        """Reset the next n requests (RST) once each has arrived; they are not forwarded."""
        self._state.arm('reset', arguments.whole_number(n, 'n'))

    def stall_next(self, n: int = 1) -> None:
        """Read the next n requests and never answer; held open until clear() or close()."""
        self._state.arm('stall', arguments.whole_number(n, 'n'))

    def respond_next(self, n: int, status: int, body: bytes,
                     content_type: str | None = 'application/json',
                     headers: dict[str, str] | None = None) -> None:
        """
        Answer the next n plain-HTTP requests with this response instead of forwarding them.

        A real HTTP/1.1 answer with Content-Length; the connection stays alive unless the
        request asked to close it. `content_type=None` sends no Content-Type; `headers` are
        added and replace defaults of the same name (even Content-Length, to lie on purpose).
        """
        n = arguments.whole_number(n, 'n')
        status = arguments.status_code(status)
        if not isinstance(body, (bytes, bytearray)):
            raise TypeError(f'body must be bytes, got {type(body).__name__}')
        canned = CannedResponse(status, bytes(body), content_type,
                                tuple((str(k), str(v)) for k, v in (headers or {}).items()))
        self._state.arm_respond(n, canned)

    def cut_after(self, n_bytes: int, times: int = 1) -> None:
        """Forward only the first n_bytes of the next `times` responses, then close."""
        n_bytes = arguments.whole_number(n_bytes, 'n_bytes', 0)
        times = arguments.whole_number(times, 'times')
        self._state.arm_cut(times, n_bytes)

    def clear(self) -> None:
        """Make the link clean: no latency, no shaping, no faults; close stalled connections."""
        self._state.clear()
        self._release_stalled()

    def stats(self) -> ProxyStats:
        """Return a snapshot of the counters."""
        return self._state.stats()

    def _release_stalled(self) -> None:
        if self._server is not None:
            self._server.release_stalled()

    # -- lifetime ---------------------------------------------------------------------------

    def start(self) -> 'FaultProxy':
        """Bind and start forwarding in a daemon thread; OSError if the port cannot be bound."""
        if self._closed:
            raise RuntimeError('this FaultProxy is closed; make a new one')
        if self._server is not None:
            return self
        self._server = RelayServer(self._state, self.upstream, self.host, self.port)
        try:
            self.port = self._server.start()
        except OSError:
            self._closed = True
            raise
        return self

    def close(self) -> None:
        """Close every connection and the listening socket, and join the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> 'FaultProxy':
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
