"""
HTTP/1.1 as the proxy sees it: request boundaries, and canned responses.

Where each request in a client's byte stream starts and ends, so that a fault reaches the next
request on an open connection; and the answers sent in place of the gateway's. Framing is best
effort: a stream that does not parse as HTTP/1.1 (TLS, or a head too long to buffer) goes
opaque and is relayed as bytes from then on.
"""

from dataclasses import dataclass, field
from http import HTTPStatus
import re

MAX_LINE = 65536  # longest request head or chunk-size line framed before giving up on HTTP
_REQUEST_START = re.compile(rb'[A-Z]+ ')

# (bytes, starts a request or None if unknown, ends a request)
Segment = tuple[bytes, bool | None, bool]


def looks_like_http(first_bytes: bytes) -> bool:
    """Tell whether a connection's first bytes open a plain HTTP request (a method and space)."""
    return bool(_REQUEST_START.match(first_bytes))


@dataclass(frozen=True)
class CannedResponse:
    """An HTTP/1.1 answer with Content-Length, sent in place of the gateway's."""

    status: int
    body: bytes
    content_type: str | None
    headers: tuple[tuple[str, str], ...] = field(default=())

    def render(self, close: bool) -> bytes:
        """Return the response's bytes; `close` says Connection: close, else keep-alive."""
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


class HttpFramer:
    """Split a client's bytes into HTTP/1.1 requests; anything it cannot frame goes opaque."""

    def __init__(self, http: bool) -> None:
        self.state = 'head' if http else 'opaque'
        self.buffer = bytearray()  # the head or line being read
        self.left = 0  # bytes left of a body, or of a chunk with its CRLF
        self.close = False  # the current request asked for the connection to close

    def feed(self, data: bytes) -> list[Segment]:
        """Return segments (bytes, starts a request or None if unknown, ends a request)."""
        out: list[Segment] = []
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
            if len(self.buffer) > MAX_LINE:
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
