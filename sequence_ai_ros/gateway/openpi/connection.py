"""
A reconnecting client of openpi's websocket policy server, for the gateway's worker threads.

The protocol, from Physical-Intelligence/openpi, main, src/openpi/serving/
websocket_policy_server.py (`WebsocketPolicyServer._handler`) and packages/openpi-client/src/
openpi_client/websocket_client_policy.py: after the handshake (no compression, no size limit)
the server sends its metadata dict first; then each binary message is one observation dict and
is answered by one dict with `actions` and `server_timing`. When the policy raises, the server
sends the traceback as a text message and closes with 1011 (internal error). openpi's client
waits for a refused server forever and never reconnects; this one connects when a call needs
it and, when a socket it reused turns out to be dead (the server restarted), makes one fresh
attempt, which is safe because an inference moves nothing. Every failure is a `PolicyError`
whose status the contract's client reads: 503 unreachable or lost, 504 no answer in time, 502
a bad or failed answer.
"""

import logging
import queue
import time
from typing import Any
from urllib.parse import urlsplit

from sequence_ai_ros.gateway.policy_api import PolicyError
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.sync.client import ClientConnection, connect

from .codec import CodecError, packb, unpackb

LOG = logging.getLogger(__name__)
# An answer holds a few hundred numbers; a limit keeps a confused peer from filling memory.
MAX_ANSWER_BYTES = 16 * 1024 * 1024


def server_name(url: str) -> str:
    """Return `ws://host:port` without any user or password the URL carries, for messages."""
    parts = urlsplit(url)
    if parts.scheme not in ('ws', 'wss') or not parts.hostname:
        raise ValueError(f'--openpi takes ws://host:port or wss://host:port, got {url!r}')
    host = f'[{parts.hostname}]' if ':' in parts.hostname else parts.hostname
    return f'{parts.scheme}://{host}' + (f':{parts.port}' if parts.port else '')


class OpenpiConnection:
    """One websocket, opened on first use and again after a loss; one caller at a time."""

    def __init__(self, url: str, open_timeout_s: float, answer_timeout_s: float) -> None:
        self.url = url
        self.name = server_name(url)
        self.open_timeout_s = open_timeout_s
        self.answer_timeout_s = answer_timeout_s
        self.metadata: dict[str, Any] = {}
        self.connects = 0
        self._socket: ClientConnection | None = None

    def infer(self, observation: dict[str, Any]) -> dict[str, Any]:
        """Send one observation, return the server's decoded answer, or raise PolicyError."""
        message = packb(observation)
        reused = self._socket is not None
        try:
            return self._round_trip(message)
        except _Lost as lost:
            if not reused:
                raise PolicyError(f'openpi server {self.name} {lost}', status=503) from None
            LOG.info('openpi server %s: %s; reconnecting', self.name, lost)
        try:
            return self._round_trip(message)
        except _Lost as lost:
            raise PolicyError(f'openpi server {self.name} {lost}', status=503) from None

    def close(self) -> None:
        """Close the socket if one is open."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _open(self) -> ClientConnection:
        try:
            socket = connect(self.url, compression=None, max_size=MAX_ANSWER_BYTES,
                             open_timeout=self.open_timeout_s, proxy=None)
        except (OSError, TimeoutError) as exc:
            raise _Lost(f'is unreachable ({type(exc).__name__}: {exc})') from None
        except WebSocketException as exc:
            raise PolicyError(f'openpi server {self.name} refused the websocket handshake '
                              f'({type(exc).__name__}: {exc})', status=502) from None
        try:
            self.metadata = self._decode(socket.recv(timeout=self.open_timeout_s), socket)
        except BaseException:
            socket.close()
            raise
        self.connects += 1
        LOG.info('openpi server %s connected; metadata %s', self.name,
                 sorted(map(str, self.metadata)) if isinstance(self.metadata, dict) else '?')
        return socket

    def _round_trip(self, message: bytes) -> dict[str, Any]:
        started = time.monotonic()
        try:
            if self._socket is None:
                self._socket = self._open()
            socket = self._socket
            socket.send(message)
            left = self.answer_timeout_s - (time.monotonic() - started)
            answer = socket.recv(timeout=max(0.001, left))
        except TimeoutError:
            # A late answer would be read as the next call's: this socket is done.
            self.close()
            raise PolicyError(f'openpi server {self.name} did not answer within '
                              f'{self.answer_timeout_s:g} s', status=504) from None
        except (ConnectionClosed, OSError) as exc:
            self._socket = None
            raise _Lost(f'lost the connection ({type(exc).__name__}: {exc})') from None
        return self._decode(answer, socket)

    def _decode(self, data: str | bytes, socket: ClientConnection) -> dict[str, Any]:
        if isinstance(data, str):
            # openpi's server reports a failed inference as its traceback, then closes.
            self._forget(socket)
            last = data.strip().splitlines()[-1:] or ['(empty)']
            LOG.error('openpi server %s failed:\n%s', self.name, data.rstrip())
            raise PolicyError(f'openpi server {self.name} failed: {last[0][:300]}', status=502)
        try:
            decoded = unpackb(data)
        except CodecError as exc:
            self._forget(socket)
            raise PolicyError(f'openpi server {self.name} sent a malformed message: {exc}',
                              status=502) from None
        if not isinstance(decoded, dict):
            self._forget(socket)
            raise PolicyError(f'openpi server {self.name} sent a {type(decoded).__name__}, '
                              'not a dict', status=502)
        return decoded

    def _forget(self, socket: ClientConnection) -> None:
        socket.close()
        if self._socket is socket:
            self._socket = None


class _Lost(Exception):
    """The socket could not be opened or was lost: the call may be tried on a fresh one."""


class ConnectionPool:
    """A fixed set of connections handed to callers in arrival order (FIFO)."""

    def __init__(self, url: str, size: int, open_timeout_s: float,
                 answer_timeout_s: float) -> None:
        if size < 1:
            raise ValueError('the openpi connection pool needs at least one connection')
        self.connections = [OpenpiConnection(url, open_timeout_s, answer_timeout_s)
                            for _ in range(size)]
        self._idle: queue.Queue[OpenpiConnection] = queue.Queue()
        for connection in self.connections:
            self._idle.put(connection)

    def infer(self, observation: dict[str, Any]) -> dict[str, Any]:
        """Run one inference on the next free connection."""
        connection = self._idle.get()
        try:
            return connection.infer(observation)
        finally:
            self._idle.put(connection)

    def close(self) -> None:
        """Close every connection (callers still running finish on a fresh one)."""
        for connection in self.connections:
            connection.close()
