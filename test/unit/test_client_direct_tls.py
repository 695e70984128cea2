"""The worker channel's pinned TLS against a real HTTPS server: the pin holds, fails closed."""

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import json
import pathlib
import ssl
import threading
import time

from fixtures_gateway import tls_files  # noqa: F401 (a fixture)
import pytest
from sequence_ai_ros.client import (
    CertPinError,
    fingerprint_of,
    pinned_context,
    Unavailable,
    WorkerChannel,
    WorkerRoute,
)

SECRET = 'ds_pinned_tls_test_secret_0123456789'


class Handler(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        Handler.seen.append(self.headers.get('Authorization', ''))
        if self.path == '/slow':
            time.sleep(10)
        body = json.dumps({'ok': True}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope='module')
def server(tls_files):  # noqa: F811 (the fixture)
    cert, key = tls_files
    httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    httpd.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    der = ssl.PEM_cert_to_DER_cert(pathlib.Path(cert).read_text())
    yield f'https://127.0.0.1:{httpd.server_address[1]}', fingerprint_of(der)
    httpd.shutdown()


def channel(url, fingerprint):
    route = WorkerRoute.from_connect({'worker_url': url, 'direct_secret': SECRET,
                                      'cert_fingerprint': fingerprint})
    return WorkerChannel(route, 'session-0001', timeout_s=20.0)


def test_the_pinned_certificate_is_accepted_with_colons_or_not(server):
    url, fingerprint = server
    spaced = ':'.join(fingerprint[i:i + 2] for i in range(0, 64, 2)).upper()
    for pin in (fingerprint, spaced):
        worker = channel(url, pin)
        try:
            assert worker.get('/ping') == {'ok': True}
        finally:
            worker.close()
    assert Handler.seen[-1] == f'Bearer {SECRET}'


def test_another_certificate_fails_closed_before_the_secret_is_sent(server):
    url, fingerprint = server
    wrong = ('0' if fingerprint[0] != '0' else '1') + fingerprint[1:]
    seen = len(Handler.seen)
    worker = channel(url, wrong)
    try:
        for _ in range(2):  # every connection is checked, not only the first
            with pytest.raises(CertPinError):
                worker.get('/ping')
    finally:
        worker.close()
    assert len(Handler.seen) == seen  # no request reached the server


@pytest.mark.parametrize('pin', [None, '', 'abc', 'zz' * 32])
def test_a_pin_that_cannot_be_read_refuses_before_any_socket(pin):
    with pytest.raises(CertPinError):
        pinned_context(pin)


def test_cut_ends_a_request_in_flight_at_once(server):
    url, fingerprint = server
    worker = channel(url, fingerprint)
    threading.Timer(0.5, worker.cut).start()
    began = time.monotonic()
    try:
        with pytest.raises(Unavailable):
            worker.get('/slow')
    finally:
        worker.close()
    assert time.monotonic() - began < 5.0  # the server would answer after 10 s
