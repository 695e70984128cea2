"""
FaultProxy between httpx and the real gateway process: the link it shapes and the faults it fires.

Timings are asserted as lower bounds only: a loaded machine may be slower, never faster.
"""

import json
import os
import ssl
import threading
import time

from fixtures_gateway import act_body, AUTH
import httpx
import pytest
from sequence_ai_ros.faults import FaultProxy, is_loopback, ProxyProcess
from sequence_ai_ros.faults.http_framing import HttpFramer
from sequence_ai_ros.gateway.process import free_port

BODY = act_body()


@pytest.fixture
def proxy(open_gateway):
    with FaultProxy('127.0.0.1', open_gateway.port) as running:
        yield running
    assert running.stats().errors == ()


@pytest.fixture
def client(proxy):
    with httpx.Client(base_url=proxy.url(), timeout=10.0) as http:
        yield http


def act(http, body=BODY, **kwargs):
    return http.post('/v1/act', json=body, **kwargs)


def acts(gateway):
    return sum(gateway.stats()['requests'].get('/v1/act', {}).values())


def timed(fn, *args, **kwargs):
    began = time.monotonic()
    result = fn(*args, **kwargs)
    return result, time.monotonic() - began


def open_fds():
    return len(os.listdir('/proc/self/fd'))


# -- pass-through and the link --------------------------------------------------------------

def test_a_clean_link_passes_act_through(gateway):
    with FaultProxy('127.0.0.1', gateway.port) as proxy, \
            httpx.Client(base_url=proxy.url(), headers=AUTH, timeout=10.0) as http:
        answers = [act(http, act_body(seed=3)) for _ in range(3)]
        stats = proxy.stats()
    assert [a.status_code for a in answers] == [200] * 3
    assert answers[0].json()['action_chunk'] == answers[2].json()['action_chunk']
    assert len(answers[0].json()['action_chunk']['steps']) == 15
    assert (stats.accepted, stats.requests, sum(stats.faults.values())) == (1, 3, 0)
    assert stats.bytes_up > 3 * len(json.dumps(BODY)) and stats.bytes_down > 3 * 1000


def test_latency_is_added_each_way_and_to_a_new_connections_handshake(proxy, client):
    proxy.latency_s = 0.1
    first, new_connection = timed(act, client)
    second, kept_alive = timed(act, client)
    assert first.status_code == second.status_code == 200
    assert kept_alive >= 0.2  # one round trip
    assert new_connection >= 0.4  # the handshake's round trip, then the request's
    assert proxy.stats().accepted == 1


def test_jitter_keeps_the_byte_order(proxy, client):
    proxy.latency_s, proxy.jitter_s = 0.005, 0.02
    proxy.bandwidth_bytes_per_s = 2_000_000  # many small slices, each jittered
    answers = [act(client, act_body(seed=s)) for s in range(3)]
    assert [len(a.json()['action_chunk']['steps']) for a in answers] == [15] * 3


@pytest.mark.parametrize('path', ['/v1/models', '/v1/act'])
def test_drip_slows_the_response(proxy, client, path):
    proxy.drip(500, 0.02)
    response, elapsed = timed(client.post if path == '/v1/act' else client.get, path,
                              **({'json': BODY} if path == '/v1/act' else {}))
    assert response.status_code == 200 and response.json()
    assert len(response.content) > 1500
    assert elapsed >= (len(response.content) // 500) * 0.02


def test_bandwidth_caps_each_direction(proxy, client):
    proxy.bandwidth_bytes_per_s = 40_000
    response, elapsed = timed(act, client)
    assert response.status_code == 200
    assert elapsed >= (len(json.dumps(BODY)) + len(response.content)) / 40_000
    proxy.bandwidth_bytes_per_s = None
    assert act(client).status_code == 200


# -- faults on a kept-alive connection ------------------------------------------------------

def test_reset_hits_the_next_request_on_the_open_connection(proxy, client, open_gateway):
    assert act(client).status_code == 200
    before = acts(open_gateway)
    proxy.reset_next()
    with pytest.raises(httpx.TransportError):
        act(client)
    assert acts(open_gateway) == before  # reset before it was forwarded
    assert act(client).status_code == 200  # the next one passes, on a new connection
    stats = proxy.stats()
    assert stats.faults['reset'] == 1 and stats.accepted == 2


def test_stall_is_a_read_timeout_until_cleared(proxy, client):
    assert act(client).status_code == 200
    proxy.stall_next()
    with pytest.raises(httpx.ReadTimeout):
        act(client, timeout=0.5)
    assert act(client).status_code == 200  # one request only
    proxy.stall = True
    done = []
    stalled = threading.Thread(target=lambda: done.append(
        pytest.raises(httpx.TransportError, act, client, timeout=30.0)))
    began = time.monotonic()
    stalled.start()
    deadline = began + 10
    while proxy.stats().faults['stall'] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert not done  # held open
    proxy.clear()  # closes the stalled connection: the client sees it end at once
    stalled.join(10)
    assert done and time.monotonic() - began < 20
    assert act(client).status_code == 200


def test_cut_ends_the_response_midway(proxy, client):
    assert act(client).status_code == 200
    proxy.cut_after(400)  # past the head, inside the body
    with pytest.raises(httpx.RemoteProtocolError):
        act(client)
    proxy.cut_after(10)  # inside the status line
    with pytest.raises(httpx.RemoteProtocolError):
        act(client)
    assert act(client).status_code == 200
    assert proxy.stats().faults['cut'] == 2


def test_respond_answers_then_the_same_connection_passes_through(proxy, client, open_gateway):
    assert act(client).status_code == 200
    before = acts(open_gateway)
    proxy.respond_next(2, 503, b'{"detail": "overloaded"}', headers={'Retry-After': '3'})
    answers = [act(client) for _ in range(3)]
    assert [a.status_code for a in answers] == [503, 503, 200]
    assert answers[0].json() == {'detail': 'overloaded'}
    assert answers[0].headers['retry-after'] == '3'
    assert answers[0].headers['content-type'] == 'application/json'
    assert acts(open_gateway) == before + 1
    proxy.latency_s = 0.1
    proxy.respond_next(1, 500, b'{}')
    answer, elapsed = timed(act, client)
    assert answer.status_code == 500 and elapsed >= 0.2  # as if from across the link
    stats = proxy.stats()
    assert stats.accepted == 1 and stats.faults['respond'] == 3


@pytest.mark.parametrize('body, content_type', [
    (b'<html>gateway error</html>', 'text/html'),
    (b'{"id": "act_1", "action_chunk": {"steps": [[NaN]]}}', 'application/json'),
    (b'{"id": "act_1"}', None),
    (b'{"x": "' + b'y' * 3_000_000 + b'"}', 'application/json'),
])
def test_respond_delivers_malformed_answers_faithfully(proxy, client, body, content_type):
    proxy.respond_next(1, 200, body, content_type=content_type)
    answer = act(client)
    assert answer.status_code == 200 and answer.content == body
    assert answer.headers.get('content-type') == content_type
    assert act(client).json()['action_chunk']


def test_respond_frames_a_chunked_request(proxy, client):
    proxy.respond_next(1, 502, b'bad gateway', content_type='text/plain')
    pieces = [json.dumps(BODY).encode()[i:i + 1000] for i in range(0, 5000, 1000)]
    answer = client.post('/v1/health', content=iter(pieces))  # no length: sent chunked
    assert answer.status_code == 502 and answer.text == 'bad gateway'
    assert client.get('/v1/health').json()['status'] == 'ok'
    assert proxy.stats().accepted == 1 and proxy.stats().requests == 2


def test_refuse_closes_new_connections_until_cleared(proxy, client):
    proxy.refuse = True
    with pytest.raises(httpx.TransportError):
        act(client)
    proxy.clear()
    assert act(client).status_code == 200
    assert proxy.stats().faults['refuse'] == 1


def test_faults_are_taken_in_order_and_cleared(proxy, client):
    proxy.reset_next()
    proxy.respond_next(1, 500, b'{}')
    with pytest.raises(httpx.TransportError):
        act(client)
    assert act(client).status_code == 500
    proxy.latency_s, proxy.jitter_s = 0.3, 0.1
    proxy.drip(10, 1.0)
    proxy.stall_next(5)
    proxy.clear()
    assert (proxy.latency_s, proxy.jitter_s, proxy.bandwidth_bytes_per_s) == (0.0, 0.0, None)
    _, elapsed = timed(act, client)
    assert elapsed < 5.0  # neither stalled (30 s) nor dripped (hundreds of seconds)


# -- TLS ------------------------------------------------------------------------------------

def test_tls_passes_through_and_faults_reach_an_open_tls_connection(tls_gateway, tls_files):
    trust = ssl.create_default_context(cafile=tls_files[0])
    with FaultProxy('127.0.0.1', tls_gateway.port) as proxy, \
            httpx.Client(base_url=proxy.url('https'), verify=trust, headers=AUTH,
                         timeout=10.0) as http:
        proxy.latency_s = 0.05
        answer, elapsed = timed(act, http)
        assert answer.status_code == 200 and len(answer.json()['action_chunk']['steps']) == 15
        assert elapsed >= 0.1 * 3  # handshake RTT, TLS 1.3 RTT, request RTT
        assert act(http).status_code == 200
        proxy.reset_next()  # the next turn on the open TLS connection
        with pytest.raises(httpx.TransportError):
            act(http)
        assert act(http).status_code == 200
        stats = proxy.stats()
    assert stats.requests == 0  # encrypted: not counted as HTTP
    assert stats.accepted == 2 and stats.faults['reset'] == 1


# -- safety and hygiene ---------------------------------------------------------------------

@pytest.mark.parametrize('host', ['10.0.0.1', '0.0.0.0', '192.168.1.20', 'example.com', '::',
                                  '::ffff:127.0.0.1', '2001:db8::1', ''])
def test_non_loopback_addresses_are_refused(host):
    assert not is_loopback(host)
    with pytest.raises(ValueError, match='not loopback'):
        FaultProxy(host, 8000)
    with pytest.raises(ValueError, match='not loopback'):
        FaultProxy('127.0.0.1', 8000, listen_host=host)


def test_loopback_addresses_are_accepted_and_urls_are_well_formed():
    assert all(is_loopback(h) for h in ('127.0.0.1', '127.9.8.7', '::1', '[::1]', 'localhost'))
    assert FaultProxy('localhost', 1, listen_port=9).url() == 'http://127.0.0.1:9'
    assert FaultProxy('::1', 1, listen_host='::1', listen_port=9).url('https') == \
        'https://[::1]:9'
    for bad in (0, 70000, True):
        with pytest.raises(ValueError):
            FaultProxy('127.0.0.1', bad)


def test_an_unreachable_upstream_resets_the_client():
    with FaultProxy('127.0.0.1', free_port()) as proxy, httpx.Client(timeout=10.0) as http:
        with pytest.raises(httpx.TransportError):
            http.get(proxy.url() + '/v1/health')
        assert proxy.stats().accepted == 1 and proxy.stats().errors == ()


def test_it_listens_on_ipv6_loopback(open_gateway):
    try:
        proxy = FaultProxy('127.0.0.1', open_gateway.port, listen_host='::1').start()
    except OSError:
        pytest.skip('no IPv6 loopback here')
    with proxy, httpx.Client(timeout=10.0) as http:
        assert proxy.url().startswith('http://[::1]:')
        assert http.get(proxy.url() + '/v1/health').json()['status'] == 'ok'


def test_settings_are_validated(proxy):
    for name, value in (('latency_s', -1), ('jitter_s', float('nan')),
                        ('bandwidth_bytes_per_s', 0)):
        with pytest.raises(ValueError):
            setattr(proxy, name, value)
    with pytest.raises(ValueError):
        proxy.reset_next(0)
    with pytest.raises(ValueError):
        proxy.respond_next(1, 42, b'')
    with pytest.raises(TypeError):
        proxy.respond_next(1, 200, 'text')


def test_close_leaks_no_descriptor_or_thread(open_gateway):
    with httpx.Client(timeout=10.0) as warm:  # httpx's first use opens nothing that stays
        warm.get(open_gateway.base_url + '/v1/health')
    before = open_fds()
    proxy = FaultProxy('127.0.0.1', open_gateway.port).start()
    with httpx.Client(base_url=proxy.url(), timeout=10.0) as http:
        assert act(http).status_code == 200
        proxy.stall_next()
        with pytest.raises(httpx.ReadTimeout):
            act(http, timeout=0.3)
        proxy.reset_next()
        with pytest.raises(httpx.TransportError):
            act(http)
    idle = httpx.Client(base_url=proxy.url(), timeout=10.0)
    assert idle.get('/v1/health').status_code == 200  # still open when the proxy closes
    stalled = httpx.Client(base_url=proxy.url(), timeout=10.0)
    proxy.stall = True
    caught = []
    waiter = threading.Thread(target=lambda: caught.append(
        pytest.raises(httpx.TransportError, stalled.get, '/v1/health')))
    waiter.start()
    deadline = time.monotonic() + 10
    while proxy.stats().faults['stall'] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    proxy.close()
    proxy.close()
    waiter.join(10)
    assert caught
    with pytest.raises(httpx.TransportError):
        idle.get('/v1/health')
    idle.close()
    stalled.close()
    assert not any(t.name.startswith('FaultProxy') for t in threading.enumerate())
    assert open_fds() == before
    with pytest.raises(RuntimeError):
        proxy.start()


# -- framing --------------------------------------------------------------------------------

def test_the_framer_finds_request_boundaries_byte_by_byte():
    stream = (b'POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello'
              b'GET /b HTTP/1.1\r\nConnection: close\r\n\r\n'
              b'POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n'
              b'3;x=y\r\nabc\r\n0\r\nTrailer: 1\r\n\r\n'
              b'GET /d HTTP/1.1\r\n\r\n')
    for step in (1, 7, len(stream)):
        framer = HttpFramer(http=True)
        seen, forwarded = [], b''
        for i in range(0, len(stream), step):
            for piece, starts, ends in framer.feed(stream[i:i + step]):
                forwarded += piece
                seen += ['start'] * bool(starts) + ['end'] * ends
        assert forwarded == stream
        assert seen == ['start', 'end'] * 4 and framer.state == 'head'


def test_the_framer_gives_up_on_what_is_not_http():
    assert HttpFramer(http=False).feed(b'\x16\x03\x01') == [(b'\x16\x03\x01', None, False)]
    framer = HttpFramer(http=True)
    framer.feed(b'POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n')
    assert framer.state == 'opaque'


# -- in a process of its own ----------------------------------------------------------------

def test_a_proxy_process_relays_with_latency_and_reports_its_counters(open_gateway):
    with ProxyProcess('127.0.0.1', open_gateway.port, latency_s=0.05) as proxy, \
            httpx.Client(base_url=proxy.url(), timeout=10.0) as http:
        assert proxy.url('https').startswith('https://127.0.0.1:')
        assert http.get('/v1/health').json()['status'] == 'ok'
        _, kept_alive = timed(http.get, '/v1/health')
        assert kept_alive >= 0.1  # one round trip of 50 ms each way
    stats = proxy.stats
    assert stats is not None and proxy.close() is stats
    assert (stats.accepted, stats.requests, stats.open_now) == (1, 2, 0)
    assert stats.bytes_up > 0 and stats.bytes_down > 0 and stats.deliveries >= 2
    assert stats.late_s >= 0 and proxy.stderr == ''
    with pytest.raises(RuntimeError):
        proxy.url()


def test_a_proxy_process_that_cannot_start_says_why():
    with pytest.raises(RuntimeError, match='not loopback'):
        ProxyProcess('10.0.0.1', 80).start()
