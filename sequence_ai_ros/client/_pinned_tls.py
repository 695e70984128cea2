"""
The worker's certificate checked by the sha256 fingerprint the gateway pinned, never by a CA.

The worker's certificate is self-signed for a bare address, so the handshake itself verifies
nothing (CERT_NONE) and the whole trust decision is the digest of the certificate the worker
presented, checked on every connection the pool opens, before a byte of the request (and its
direct secret) is written. A pin that cannot be read, a missing certificate or another digest
raises CertPinError: there is no fallback to CA trust or to no check. Standard library only.

The context also keeps the sockets it opened, so that interrupt() can cut a request in flight
(shutdown wakes a thread blocked reading; close alone does not).
"""

import hashlib
import hmac
import socket
import ssl
import threading
from typing import Any
import weakref

from ._errors import CertPinError

_HEX = frozenset('0123456789abcdef')


def normalize_fingerprint(fingerprint: object) -> str:
    """Return a bare lowercase sha256 hex digest (colons and spaces allowed), else raise."""
    if not isinstance(fingerprint, str):
        raise CertPinError('the connect answer gave no certificate fingerprint to pin; '
                           'refusing to connect to the worker')
    cleaned = fingerprint.strip().replace(':', '').replace(' ', '').lower()
    if len(cleaned) != 64 or not set(cleaned) <= _HEX:
        raise CertPinError('the certificate fingerprint is not a sha256 hex digest; refusing '
                           'to connect to the worker')
    return cleaned


def fingerprint_of(der: bytes) -> str:
    """Return the sha256 hex digest of a DER certificate: how both ends name a certificate."""
    return hashlib.sha256(der).hexdigest()


def check_certificate(der: bytes | None, pinned: str) -> None:
    """Raise CertPinError unless `der` is the pinned certificate."""
    if not der:
        raise CertPinError('the worker presented no certificate; refusing to connect')
    if not hmac.compare_digest(fingerprint_of(der), pinned):
        raise CertPinError('the worker certificate does not match the fingerprint the gateway '
                           'pinned; refusing to connect (never retried)')


class _PinnedObject(ssl.SSLObject):
    """A connection wrapped in memory (TLS through an HTTPS proxy): checked after its handshake."""

    def do_handshake(self) -> None:
        super().do_handshake()
        context = self.context
        assert isinstance(context, PinnedContext)
        check_certificate(self.getpeercert(binary_form=True), context.pinned)


class PinnedContext(ssl.SSLContext):
    """An SSLContext that accepts exactly one certificate: the pinned one."""

    sslobject_class = _PinnedObject
    pinned = ''
    sockets: 'weakref.WeakSet[ssl.SSLSocket]'
    sockets_lock: threading.Lock

    def wrap_socket(self, sock: socket.socket, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        """Wrap and handshake, then check the certificate before the socket is handed out."""
        wrapped = super().wrap_socket(sock, *args, **kwargs)
        try:
            check_certificate(wrapped.getpeercert(binary_form=True), self.pinned)
        except BaseException:
            wrapped.close()
            raise
        with self.sockets_lock:
            self.sockets.add(wrapped)
        return wrapped

    def cut_connections(self) -> int:
        """Shut every socket this context opened (requests in flight fail at once); count them."""
        with self.sockets_lock:
            sockets = list(self.sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed
        return len(sockets)


def pinned_context(fingerprint: object) -> PinnedContext:
    """Return a context pinned to `fingerprint`, or raise CertPinError before any socket opens."""
    pinned = normalize_fingerprint(fingerprint)
    context = PinnedContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # before CERT_NONE, which check_hostname forbids
    context.verify_mode = ssl.CERT_NONE
    context.pinned = pinned
    context.sockets = weakref.WeakSet()
    context.sockets_lock = threading.Lock()
    return context
