"""
Abusing the gateway's HTTP API: oversized, stalled, nested, garbage and slow bodies.

Each abusive request must be refused with a 4xx whose detail names the field or the limit
(the legitimate ones alongside, such as a large but valid frame, must still be served), the
gateway must answer /v1/health afterwards, its peak resident memory during the case (VmHWM,
reset before the case where the kernel allows it, else sampled) must stay within RSS_BOUND_MB
of where the case started, and what stays resident within RSS_BOUND_MB of where the abuse
started. Raw sockets send what no HTTP client library would.
"""

import base64
from collections.abc import Iterable, Iterator
import contextlib
import io
import json
import os
from pathlib import Path
import random
import select
import socket
import threading
import time

from fixtures_gateway import act_body, start_gateway
import httpx
import numpy as np
from PIL import Image
import pytest
from sequence_ai_ros.harness.fault_matrix import FaultRow

ABUSE_KEY = 'seq_abuse_key_for_gateway_tests_0001'
AUTH = {'Authorization': f'Bearer {ABUSE_KEY}'}
AUTH_LINE = [f'{name}: {value}' for name, value in AUTH.items()]
LIMIT = 8 * 1024 * 1024  # the default --max-body-bytes: abuse what a deployment would run
BODY_TIMEOUT_S = 1.5
RSS_BOUND_MB = 100
ANSWER_TIMEOUT_S = 15.0
_BASELINE_KIB: dict[int, int] = {}


@pytest.fixture(scope='module')
def abuse_gateway():
    """Run a keyed, warm gateway with the default body limit and a short body timeout."""
    process = start_gateway(['--start-warm', '--idle-cold-s', '1000000',
                             '--body-timeout-s', str(BODY_TIMEOUT_S)], keys={ABUSE_KEY: 10 ** 6})
    try:
        # The first inference imports and allocates what every later call shares.
        response = httpx.post(process.base_url + '/v1/act', json=act_body(), headers=AUTH,
                              timeout=ANSWER_TIMEOUT_S)
        assert response.status_code == 200, response.text
        _BASELINE_KIB[process.pid] = _memory_kib(process.pid)['VmRSS']
        yield process
    finally:
        process.close()


# -- watching memory and health ----------------------------------------------------------------

def _memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        name, _, value = line.partition(':')
        if name in ('VmRSS', 'VmHWM'):
            fields[name] = int(value.split()[0])
    return fields


def _reset_peak(pid: int) -> bool:
    """Reset the process's VmHWM to its current RSS (Linux 4.0+ clear_refs); False if refused."""
    try:
        Path(f'/proc/{pid}/clear_refs').write_text('5')
    except OSError:
        return False
    return True


class Watch:
    """
    The gateway's memory over one case, and its health at the end.

    `growth_mb` is the peak over the resident size at the start of the case; `retained_mb` is
    what is still resident afterwards over the size before any abuse (a leak would show there).
    """

    def __init__(self, gateway) -> None:
        self.gateway = gateway
        self.pid = gateway.pid
        self.start_kib = _memory_kib(self.pid)['VmRSS']
        self.peak_kib = self.start_kib
        self.growth_mb = self.retained_mb = 0.0
        self._exact = _reset_peak(self.pid)
        self._stop = threading.Event()
        self._sampler = None
        if not self._exact:
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak_kib = max(self.peak_kib, _memory_kib(self.pid)['VmRSS'])

    def stop(self) -> None:
        """Stop sampling (when the kernel could not reset the peak)."""
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()

    def finish(self) -> None:
        """Check the gateway is alive and healthy and its memory within the bounds."""
        self.stop()
        assert self.gateway.running(), self.gateway.log()[-4000:]
        memory = _memory_kib(self.pid)
        self.peak_kib = memory['VmHWM'] if self._exact else max(self.peak_kib, memory['VmRSS'])
        self.growth_mb = (self.peak_kib - self.start_kib) / 1024
        self.retained_mb = (memory['VmRSS'] - _BASELINE_KIB[self.pid]) / 1024
        health = httpx.get(self.gateway.base_url + '/v1/health', timeout=5.0)
        assert health.status_code == 200 and health.json()['status'] == 'ok'
        assert self.growth_mb < RSS_BOUND_MB, \
            f'peak RSS {self.growth_mb:.0f} MB over the start of the case, bound {RSS_BOUND_MB}'
        assert self.retained_mb < RSS_BOUND_MB, \
            f'{self.retained_mb:.0f} MB more resident than before the abuse, bound {RSS_BOUND_MB}'


@contextlib.contextmanager
def watched(gateway) -> Iterator[Watch]:
    """Watch the gateway over the block; on a clean exit, check it survived (see Watch)."""
    watch = Watch(gateway)
    try:
        yield watch
    finally:
        watch.stop()
    watch.finish()


def _record(fault_matrix, case: str, outcome: str, watch: Watch, **extra: object) -> None:
    fault_matrix.record(FaultRow(
        area='gateway', case=case,
        outcome=f'{outcome}; RSS peak {watch.growth_mb:+.1f} MB, retained '
                f'{watch.retained_mb:+.1f} MB',
        extra={'rss_peak_growth_mb': round(watch.growth_mb, 1),
               'rss_retained_mb': round(watch.retained_mb, 1), **extra}))


# -- talking HTTP -------------------------------------------------------------------------------

def _detail(response: httpx.Response, status: int, *fragments: str) -> str:
    """Assert a JSON `{"detail": "..."}` answer with `status` whose detail holds `fragments`."""
    assert response.status_code == status, response.text[:2000]
    detail = response.json()['detail']
    assert isinstance(detail, str)
    for fragment in fragments:
        assert fragment in detail, detail
    return detail


def _post(gateway, content: bytes | Iterable[bytes], headers: dict[str, str] | None = None,
          **kwargs: object) -> httpx.Response:
    with httpx.Client(base_url=gateway.base_url, headers=AUTH,
                      timeout=ANSWER_TIMEOUT_S) as client:
        return client.post('/v1/act', content=content, headers=headers, **kwargs)


def _head(headers: dict[str, str], method: str = 'POST', path: str = '/v1/act') -> bytes:
    lines = [f'{method} {path} HTTP/1.1', 'Host: 127.0.0.1', *AUTH_LINE,
             *(f'{name}: {value}' for name, value in headers.items())]
    return ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1')


def _connect(gateway) -> socket.socket:
    return socket.create_connection((gateway.host, gateway.port), timeout=ANSWER_TIMEOUT_S)


def _read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read one HTTP response: status, lower-cased headers, body."""
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f'closed before a whole answer: {data!r}')
        data += chunk
    head, _, body = data.partition(b'\r\n\r\n')
    status_line, *lines = head.decode('latin-1').split('\r\n')
    headers = {}
    for line in lines:
        name, _, value = line.partition(':')
        headers[name.strip().lower()] = value.strip()
    length = int(headers['content-length']) if 'content-length' in headers else None
    while length is None or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(status_line.split()[1]), headers, body


def _json_detail(body: bytes) -> str:
    detail = json.loads(body)['detail']
    assert isinstance(detail, str)
    return detail


# -- the cases ----------------------------------------------------------------------------------

def test_body_ten_times_over_the_limit_by_content_length(abuse_gateway, fault_matrix):
    declared = 10 * LIMIT
    with watched(abuse_gateway) as watch, _connect(abuse_gateway) as sock:
        started = time.perf_counter()
        sock.sendall(_head({'Content-Type': 'application/json',
                            'Content-Length': str(declared)}) + b'{"model": "' + b'A' * 65536)
        status, headers, body = _read_answer(sock)
        elapsed_ms = (time.perf_counter() - started) * 1000
    detail = _json_detail(body)
    assert status == 413 and headers.get('connection') == 'close'
    assert 'max_body_bytes' in detail and str(LIMIT) in detail and str(declared) in detail
    _record(fault_matrix, 'body 10x over the limit (Content-Length)',
            f'413 naming max_body_bytes in {elapsed_ms:.0f} ms, body never read', watch,
            declared_bytes=declared, limit=LIMIT)


def test_chunked_body_streaming_past_the_limit(abuse_gateway, fault_matrix):
    chunk = b'A' * 65536
    frame = b'%x\r\n%s\r\n' % (len(chunk), chunk)
    sent = 0
    with watched(abuse_gateway) as watch, _connect(abuse_gateway) as sock:
        sock.sendall(_head({'Content-Type': 'application/json',
                            'Transfer-Encoding': 'chunked'}))
        # Keep streaming, as an endless upload would, until the gateway answers.
        while sent < 4 * LIMIT and not select.select([sock], [], [], 0)[0]:
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        status, headers, body = _read_answer(sock)
    detail = _json_detail(body)
    assert status == 413 and 'max_body_bytes' in detail and str(LIMIT) in detail
    assert sent < 4 * LIMIT, 'the gateway kept reading past 4x its limit'
    _record(fault_matrix, 'chunked body with no Content-Length streaming past the limit',
            f'413 naming max_body_bytes after {sent / LIMIT:.1f}x the limit was sent '
            '(socket buffers included)', watch, sent_bytes=sent, limit=LIMIT)


def test_content_length_that_promises_more_than_is_sent(abuse_gateway, fault_matrix):
    partial = b'{"model": "accounts/sequences/models/pi05-droid"'
    with watched(abuse_gateway) as watch, _connect(abuse_gateway) as sock:
        sock.sendall(_head({'Content-Type': 'application/json', 'Content-Length': '100000'}) +
                     partial)
        started = time.perf_counter()
        status, headers, body = _read_answer(sock)
        waited_s = time.perf_counter() - started
        closed = sock.recv(1) == b''
    detail = _json_detail(body)
    assert status == 408 and headers.get('connection') == 'close' and closed
    assert 'body_timeout_s' in detail and 'Content-Length' in detail and '100000' in detail
    assert BODY_TIMEOUT_S * 0.9 < waited_s < BODY_TIMEOUT_S + 3.0
    _record(fault_matrix, 'Content-Length promising 100000 bytes, 48 sent, then silence',
            f'408 naming body_timeout_s after {waited_s:.2f} s, connection closed', watch,
            body_timeout_s=BODY_TIMEOUT_S)


def test_content_length_that_promises_less_than_is_sent(abuse_gateway, fault_matrix):
    body = json.dumps(act_body()).encode()
    with watched(abuse_gateway) as watch, _connect(abuse_gateway) as sock:
        sock.sendall(_head({'Content-Type': 'application/json', 'Content-Length': '20'}) + body)
        status, _, answer = _read_answer(sock)
        # The leftover bytes now look like the start of a next request that never completes;
        # closing our side must not disturb the server.
    assert status == 400 and 'not valid JSON' in _json_detail(answer)
    _record(fault_matrix, 'Content-Length of 20 on a whole act body (the rest left over)',
            "400 'not valid JSON' naming the truncated text; the leftover is never served",
            watch)


def test_deeply_nested_json(abuse_gateway, fault_matrix):
    depth = 100_000
    bodies = {
        'arrays': b'[' * depth + b']' * depth,
        'objects': b'{"a":' * depth + b'1' + b'}' * depth,
        'inside an option': json.dumps(act_body()).encode()[:-1] + b', "x": ' +
        b'[' * depth + b']' * depth + b'}',
    }
    with watched(abuse_gateway) as watch:
        for content in bodies.values():
            _detail(_post(abuse_gateway, content), 400, 'nested too deeply', '64 levels')
        # Nesting a real option needs stays well inside the limit.
        fine = act_body(robot_config=json.loads('[' * 50 + ']' * 50))
        assert _post(abuse_gateway, json.dumps(fine).encode()).status_code == 200
    _record(fault_matrix, f'JSON nested {depth} deep (arrays, objects, inside an option)',
            "400 'nested too deeply: more than 64 levels', before Python's json recurses; "
            '50 levels in an option still served', watch, depth=depth)


def test_many_small_json_values(abuse_gateway, fault_matrix):
    count = (LIMIT - 100) // 3
    flat = b'[' + b'{},' * (count - 1) + b'{}]'
    option = json.dumps(act_body()).encode()[:-1] + b', "pad": [' + b'0,' * 20_000 + b'0]}'
    with watched(abuse_gateway) as watch:
        for content in (flat, option):
            _detail(_post(abuse_gateway, content), 413, 'limit of 10000 JSON values')
    _record(fault_matrix, f'{count} empty objects in one 8 MiB body (about 0.5 GB as Python '
            'objects)', '413 naming the limit of 10000 JSON values, refused before parsing', watch,
            values=count)


def test_a_million_steps_requested(abuse_gateway, fault_matrix):
    with watched(abuse_gateway) as watch:
        _detail(_post(abuse_gateway, json.dumps(act_body(action_horizon=1_000_000)).encode()),
                422, 'action_horizon', 'between 1 and 15', '1000000')
        _detail(_post(abuse_gateway, json.dumps(act_body(action_horizon=1e300)).encode()), 422,
                'action_horizon: expected an integer')
        huge = json.dumps(act_body()).encode()[:-1] + b', "action_horizon": ' + b'9' * 5000 + b'}'
        _detail(_post(abuse_gateway, huge), 400, '5000 digits', 'more than the 1000')
    _record(fault_matrix, 'a million steps via action_horizon (and 1e300, and a 5000-digit '
            'integer)', '422 naming action_horizon and its range 1-15; 400 for the 5000-digit '
            'literal before int() runs', watch)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode('ascii')


def _png(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new('RGB', (width, height), (90, 90, 95)).save(buffer, 'PNG')
    return _b64(buffer.getvalue())


def _jpeg_claiming(width: int, height: int) -> str:
    """Make a small JPEG whose frame header claims width x height (no such pixels follow)."""
    buffer = io.BytesIO()
    Image.new('RGB', (16, 16), (90, 90, 95)).save(buffer, 'JPEG')
    raw = bytearray(buffer.getvalue())
    sof = raw.index(b'\xff\xc0')
    raw[sof + 5:sof + 9] = height.to_bytes(2, 'big') + width.to_bytes(2, 'big')
    return _b64(bytes(raw))


def _noise_jpeg(size: int) -> str:
    pixels = np.random.default_rng(5).integers(0, 256, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, 'JPEG', quality=95)
    return _b64(buffer.getvalue())


def _with_frame(data: str) -> bytes:
    body = act_body()
    body['observation']['images'][0]['data'] = data
    return json.dumps(body).encode()


def test_huge_image_base64(abuse_gateway, fault_matrix):
    noise = _noise_jpeg(1800)  # about 5 MB of base64: near the limit, and served
    cases = [
        ('frame base64 over the body limit', 'A' * LIMIT, 413, ('max_body_bytes',)),
        ('6000x6000 PNG (a decompression bomb of 100 kB)', _png(6000, 6000), 422,
         ('observation.images[0].data', 'PNG', '8294400 pixels')),
        ('JPEG header claiming 60000x50000', _jpeg_claiming(60000, 50000), 422,
         ('observation.images[0].data',)),
        ('JPEG header claiming 8000x6000', _jpeg_claiming(8000, 6000), 422,
         ('observation.images[0].data', 'over 40000000 pixels')),
        ('6 MB that is not base64', '*' * (6 * 1024 * 1024), 422,
         ('observation.images[0].data', 'not valid base64')),
        (f'{len(noise) / 1e6:.1f} MB base64 of an 1800x1800 noise JPEG', noise, 200, ()),
        ('3840x2160 PNG (the largest PNG read)', _png(3840, 2160), 200, ()),
    ]
    for case, data, status, fragments in cases:
        with watched(abuse_gateway) as watch:
            response = _post(abuse_gateway, _with_frame(data))
            if status == 200:
                assert response.status_code == 200, response.text[:2000]
                assert any('resiz' in w for w in response.json()['warnings'])
                outcome = '200 with a resize warning'
            else:
                detail = _detail(response, status, *fragments)
                outcome = f"{status}: {detail.split(';')[0].split(' (')[0]}"
        _record(fault_matrix, f'huge image: {case}', outcome, watch, frame_chars=len(data))


def test_concurrent_slow_uploads(abuse_gateway, fault_matrix):
    slow_heads, slow_bodies = [], []
    health_ms = []
    try:
        with watched(abuse_gateway) as watch:
            for _ in range(20):
                sock = _connect(abuse_gateway)
                sock.sendall(b'POST /v1/act HTTP/1.1\r\nHost: 127.0.0.1\r\n')
                slow_heads.append(sock)
                sock = _connect(abuse_gateway)
                sock.sendall(_head({'Content-Type': 'application/json',
                                    'Content-Length': '200000'}) + b'{"model": "')
                slow_bodies.append(sock)
            for round_ in range(8):
                for number, sock in enumerate(slow_heads):
                    sock.sendall(f'X-Slow-{round_}-{number}: 1\r\n'.encode())
                for sock in slow_bodies:
                    sock.sendall(b'A' * 1024)
                started = time.perf_counter()
                health = httpx.get(abuse_gateway.base_url + '/v1/health', timeout=5.0)
                health_ms.append((time.perf_counter() - started) * 1000)
                assert health.status_code == 200
                time.sleep(BODY_TIMEOUT_S / 4)
            started = time.perf_counter()
            response = httpx.post(abuse_gateway.base_url + '/v1/act', json=act_body(),
                                  headers=AUTH, timeout=ANSWER_TIMEOUT_S)
            act_ms = (time.perf_counter() - started) * 1000
            assert response.status_code == 200
            # The trickle stops: every stalled body is refused once body_timeout_s passes.
            started = time.perf_counter()
            stalled = [_read_answer(sock) for sock in slow_bodies]
            refused_after_s = time.perf_counter() - started
        for status, _, body in stalled:
            assert status == 408 and 'body_timeout_s' in _json_detail(body)
    finally:
        for sock in slow_heads + slow_bodies:
            sock.close()
    _record(fault_matrix, '40 slow uploads at once (20 trickling headers, 20 trickling bodies)',
            f'health answered in at most {max(health_ms):.0f} ms and a real call got 200 in '
            f'{act_ms:.0f} ms meanwhile; the 20 stalled bodies got 408 within '
            f'{refused_after_s:.1f} s of the trickle stopping', watch,
            health_ms_max=round(max(health_ms), 1), act_ms=round(act_ms, 1))


def test_garbage_bytes(abuse_gateway, fault_matrix):
    rng = random.Random(7)
    binary = bytes(rng.getrandbits(8) for _ in range(100_000))
    text = ''.join(rng.choice('{}[]:,"abc 0123') for _ in range(100_000)).encode()
    with watched(abuse_gateway) as watch:
        _detail(_post(abuse_gateway, binary), 400, 'not UTF-8')
        _detail(_post(abuse_gateway, text), 400)
        _detail(_post(abuse_gateway, b'\x00' * 1000), 400, 'not valid JSON')
        # Not even HTTP: uvicorn refuses it before the app sees anything.
        with _connect(abuse_gateway) as sock:
            sock.sendall(os.urandom(4096) + b'\r\n\r\n')
            status, _, _ = _read_answer(sock)
    assert status == 400
    _record(fault_matrix, 'garbage bytes (binary body, JSON-ish noise, NULs, non-HTTP on the '
            'socket)', "400 'not UTF-8' / 'not valid JSON'; non-HTTP gets uvicorn's 400 and a "
            'close', watch)


def test_wrong_content_type(abuse_gateway, fault_matrix):
    body = json.dumps(act_body()).encode()
    with watched(abuse_gateway) as watch:
        for content_type in ('text/plain', 'application/x-www-form-urlencoded',
                             'multipart/form-data; boundary=x', 'image/jpeg'):
            _detail(_post(abuse_gateway, body, {'Content-Type': content_type}), 415,
                    'Content-Type: expected application/json', content_type.split(';')[0])
        _detail(_post(abuse_gateway, body, {'Content-Type': 'application/json; charset=latin-1'}),
                415, 'charset', 'latin-1')
        for content_type in ('application/json; charset=UTF-8', 'application/vnd.api+json'):
            response = _post(abuse_gateway, body, {'Content-Type': content_type})
            assert response.status_code == 200, response.text
        # No Content-Type at all is read as JSON (curl --data-binary without -H, raw clients).
        assert _post(abuse_gateway, body).status_code == 200
    _record(fault_matrix, 'wrong Content-Type (text/plain, form, multipart, image/jpeg, '
            'charset=latin-1)', '415 naming Content-Type and what was sent; JSON types and a '
            'missing type still served', watch)


def test_non_utf8_and_lone_surrogates(abuse_gateway, fault_matrix):
    body = act_body()
    body['observation']['instruction'] = 'pick up the café cup'
    text = json.dumps(body, ensure_ascii=False)
    with watched(abuse_gateway) as watch:
        _detail(_post(abuse_gateway, text.encode('latin-1')), 400, 'not UTF-8', 'offset')
        _detail(_post(abuse_gateway, text.encode('utf-16')), 400, 'not UTF-8')
        assert _post(abuse_gateway, text.encode('utf-8-sig')).status_code == 200
        # A JSON escape can carry an unpaired surrogate that UTF-8 cannot encode: it used to
        # turn the warning echoing the option name into a 500.
        surrogate = json.dumps(act_body()).encode()[:-1] + b', "\\ud800x": 1}'
        response = _post(abuse_gateway, surrogate)
        assert response.status_code == 200, response.text
        assert any('\\ud800' in w for w in response.json()['warnings'])
    _record(fault_matrix, 'non-UTF-8 bodies (latin-1, UTF-16) and an unpaired surrogate',
            "400 'not UTF-8 (byte 0x.. at offset n)'; a lone \\ud800 in an option name is "
            'served (200), echoed escaped', watch)
