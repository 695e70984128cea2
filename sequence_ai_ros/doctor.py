"""`sequence-ai-ros doctor`: the questions behind "it does not work", asked in order."""

import base64
from collections.abc import Callable
from dataclasses import dataclass
import os
from pathlib import Path
import statistics
import sys
import time
from typing import Any, NoReturn, TextIO

import httpx

from . import __version__
from .client.config import (
    credentials_path,
    full_model_id,
    read_credentials_file,
    resolve_base_url,
)
from .client.errors import (
    AuthError,
    CertificateError,
    InvalidRequest,
    OutOfCredit,
    SequencesError,
    Unavailable,
)
from .client.transport import certificate_refusal, tls_context, Transport
from .client.types import Prediction
from .contract.key_masking import mask_key

EXIT_OK = 0
EXIT_NO_KEY = 10
EXIT_GATEWAY = 11
EXIT_MODEL = 12
EXIT_KEY_INVALID = 13
EXIT_NO_CREDIT = 14
EXIT_REFUSED = 15
EXIT_ACT_FAILED = 16
EXIT_LATENCY = 17
EXIT_NOT_WARM = 20

EXIT_CODES = (
    (EXIT_OK, 'no check failed and the model is warm (or --no-act); other WARN lines are '
              'advice'),
    (2, 'bad command line'),
    (EXIT_NO_KEY, 'no API key found (check 1)'),
    (EXIT_GATEWAY, 'the gateway does not answer GET /v1/health with ok, or its TLS '
                   'certificate is not trusted (check 2; --ca-file)'),
    (EXIT_MODEL, 'the model is not in the catalogue, or the catalogue is unreadable (check 3)'),
    (EXIT_KEY_INVALID, 'the key is refused: 401 (check 4)'),
    (EXIT_NO_CREDIT, 'the key has no credit: 402 (check 5)'),
    (EXIT_REFUSED, "the test call was refused (400/404/413/422; the server's message is shown)"),
    (EXIT_ACT_FAILED, 'the test call failed otherwise (5xx, timeout, unusable answer)'),
    (EXIT_LATENCY, 'a latency probe failed (check 6)'),
    (EXIT_NOT_WARM, 'nothing failed but the model is cold or warming (check 7); '
                    '--wait warms it first'),
)

DEFAULT_SAMPLES = 6
DEFAULT_WAIT_S = 300.0
ACT_PATH = '/v1/act'
PUBLIC_PATH = '/v1/models'
INSTRUCTION = 'hold still (sequence-ai-ros doctor)'

# A 224x224 plain grey JPEG (quality 90): a uniform frame entropy-codes to zero bytes, so only
# the headers need spelling out. Built here rather than with Pillow, which the client lacks.
_JPEG_HEAD = (
    '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQEBQoHBwYIDAoMDAsKCwsN'
    'DhIQDQ4RDgsLEBYQERMUFRUVDA8XGBYUGBIUFRT/2wBDAQMEBAUEBQkFBQkUDQsNFBQUFBQUFBQUFBQU'
    'FBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBT/wAARCADgAOADASIAAhEBAxEB/8QA'
    'FAABAAAAAAAAAAAAAAAAAAAAAP/EABQQAQAAAAAAAAAAAAAAAAAAAAD/xAAUAQEAAAAAAAAAAAAAAAAA'
    'AAAA/8QAFBEBAAAAAAAAAAAAAAAAAAAAAP/aAAwDAQACEQMRAD8A'
)
PLAIN_JPEG = base64.b64decode(_JPEG_HEAD) + bytes(294) + b'\xff\xd9'


@dataclass
class DoctorOptions:
    """What `doctor` was asked to check."""

    model: str = 'pi05-droid'
    base_url: str | None = None
    api_key_file: str | None = None
    samples: int = DEFAULT_SAMPLES
    act: bool = True
    wait_s: float | None = None
    timeout_s: float = 30.0
    ca_file: str | None = None  # trust only this CA bundle (PEM), else the system's CAs


class _Stop(Exception):
    """A check failed: stop here and exit with `code`."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _ms(seconds: float) -> str:
    return f'{seconds * 1000:.1f} ms'


def _eta(exc: Unavailable) -> str:
    return 'unknown' if exc.retry_after_s is None else f'{exc.retry_after_s:g} s'


def _cell(value: Any) -> str:
    return f'{value:g}' if isinstance(value, float) else str(value)


def _short(model_id: str) -> str:
    return model_id.rsplit('/', 1)[-1]


def ca_file_hint(ca_file: str | None, reason: str) -> str:
    """Say what to do about a refused certificate, given the --ca-file in use (if any)."""
    if 'mismatch' in reason.lower():
        return ('the certificate names another host: use the name or address it was issued '
                'for in --base-url')
    if ca_file:
        return (f'--ca-file {ca_file} does not sign this certificate: pass the CA that does '
                "(for a self-signed gateway, the gateway's own certificate file)")
    return ('pass --ca-file PATH with the CA certificate that signs it (for a self-signed '
            "gateway, the gateway's own certificate file)")


def probe_observation(row: dict[str, Any]) -> dict[str, Any]:
    """Build the smallest valid observation for a catalogue row: plain frames, zero joints."""
    joints = row.get('joint_count')
    if not isinstance(joints, int) or isinstance(joints, bool):
        dim = row.get('action_dim')
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 2:
            raise ValueError('the catalogue row has neither joint_count nor a usable action_dim')
        joints = dim - 1
    frame = base64.b64encode(PLAIN_JPEG).decode('ascii')
    stamp = int(time.time() * 1000)
    return {
        'images': [{'view': str(view), 'data': frame, 'timestamp_ms': stamp}
                   for view in row.get('camera_views') or ()],
        'proprioception': {'joint_positions': [0.0] * joints, 'gripper': 0.0},
        'instruction': INSTRUCTION,
    }


class Doctor:
    """Run the checks in order, one line each, stopping at the first FAIL."""

    def __init__(self, options: DoctorOptions, out: TextIO | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.options = options
        self.out = out or sys.stdout
        self.sleep = sleep
        self.base_url = resolve_base_url(options.base_url)
        self.model_id = full_model_id(options.model)
        # One trust for every connection doctor makes, the same the client is given.
        self.tls = tls_context(options.ca_file or True)
        self.key: str | None = None
        self.auth_enabled = True
        self.row: dict[str, Any] = {}
        self.public: httpx.Client | None = None
        self.warnings = 0

    # -- output -------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        # Server messages are passed through; a server that echoed the key must not leak it.
        return text.replace(self.key, mask_key(self.key)) if self.key else text

    def line(self, status: str, number: int, name: str, message: str,
             hint: str | None = None) -> None:
        """Print one check's verdict."""
        self.warnings += status == 'WARN'
        text = f'{status:<4}  {number} {name:<9}  {message}'
        if hint:
            text += f'  hint: {hint}'
        print(self._scrub(text), file=self.out, flush=True)

    def fail(self, number: int, name: str, message: str, hint: str, code: int) -> NoReturn:
        """Print a FAIL line and stop."""
        self.line('FAIL', number, name, message, hint)
        raise _Stop(code)

    # -- the checks ---------------------------------------------------------------------------

    def run(self) -> int:
        """Run every check; return the exit code."""
        trusting = f' (CA file {self.options.ca_file})' if self.options.ca_file else ''
        print(f'sequence-ai-ros {__version__} doctor: {_short(self.model_id)} at '
              f'{self.base_url}{trusting}', file=self.out, flush=True)
        try:
            self.check_key()
            self.public = self._client(headers={'User-Agent': f'sequence_ai_ros/{__version__}'})
            self.check_gateway()
            self.check_model()
            answer = self.check_act() if self.options.act else None
            if not self.options.act:
                self.line('WARN', 4, 'key valid', 'not checked (--no-act): validity unknown',
                          'run without --no-act to test the key with one call')
                self.line('WARN', 5, 'credit', 'not checked (--no-act)')
            self.check_latency()
            code = self.report_warmth(answer)
        except _Stop as stop:
            print(f'stopped: exit {stop.code}', file=self.out, flush=True)
            return stop.code
        finally:
            if self.public is not None:
                self.public.close()
        if code != EXIT_OK:
            verdict = f'done: exit {code} (model not warm)'
        elif self.warnings:
            verdict = f'no check failed ({self.warnings} WARN)'
        else:
            verdict = 'all checks passed'
        print(verdict, file=self.out, flush=True)
        return code

    def _client(self, headers: httpx.Headers | dict[str, str]) -> httpx.Client:
        timeout = httpx.Timeout(self.options.timeout_s, connect=min(self.options.timeout_s, 10.0))
        return httpx.Client(base_url=self.base_url, timeout=timeout, headers=headers,
                            verify=self.tls)

    def _fail_certificate(self, number: int, name: str, reason: str) -> NoReturn:
        self.fail(number, name, f'the TLS certificate of {self.base_url} is not trusted '
                  f'({reason})', ca_file_hint(self.options.ca_file, reason), EXIT_GATEWAY)

    def check_key(self) -> None:
        """1: is there a key, and which source gave it (never the key itself)."""
        # (where, the key it holds, the file it is in)
        sources: list[tuple[str, str | None, Path | None]] = []
        if self.options.api_key_file:
            given = Path(self.options.api_key_file).expanduser()
            sources.append((f'--api-key-file {given}', read_credentials_file(given), given))
            if not sources[0][1]:
                why = 'does not exist' if not given.exists() else 'holds no key line'
                self.fail(1, 'key', f'{given} {why}',
                          'put the key on the first non-comment line of the file',
                          EXIT_NO_KEY)
        sources.append(('environment ($SEQUENCES_API_KEY)',
                        os.environ.get('SEQUENCES_API_KEY') or None, None))
        sources.append((f'credentials file {credentials_path()}', read_credentials_file(),
                        credentials_path()))
        found = [source for source in sources if source[1]]
        if not found:
            self.fail(1, 'key', 'no API key found',
                      f'set $SEQUENCES_API_KEY, or write the key to {credentials_path()} '
                      '(mode 0600), or pass --api-key-file (a local gateway without keys '
                      'accepts any seq_ key)', EXIT_NO_KEY)
        label, key, path = found[0]
        assert key is not None
        self.key = key
        message = f'{mask_key(key)} from {label}'
        ignored = [f'{other} ({mask_key(value)})' for other, value, _ in found[1:] if value != key]
        if ignored:
            message += '; ignored, different: ' + ', '.join(ignored)
        problem = self._key_problem(key, path)
        if problem:
            self.line('WARN', 1, 'key', message, problem)
        else:
            self.line('OK', 1, 'key', message)

    @staticmethod
    def _key_problem(key: str, path: Path | None) -> str | None:
        if not key.startswith('seq_'):
            return 'keys start with seq_: is this the whole key, without quotes or "Bearer"?'
        if path is not None:
            try:
                mode = path.stat().st_mode & 0o777
            except OSError:
                return None
            if mode & 0o077:
                return f'{path} is mode {mode:04o}, readable by others: chmod 600 {path}'
        return None

    def check_gateway(self) -> None:
        """2: does the gateway answer GET /v1/health with ok."""
        hint = ('start one with `sequence-ai-ros gateway`, or check --base-url / '
                '$SEQUENCES_BASE_URL')
        assert self.public is not None
        started = time.perf_counter()
        try:
            response = self.public.get('/v1/health')
        except httpx.HTTPError as exc:
            reason = certificate_refusal(exc)
            if reason is not None:
                self._fail_certificate(2, 'gateway', reason)
            self.fail(2, 'gateway', f'nothing answers at {self.base_url} '
                      f'({type(exc).__name__}: {exc})', hint, EXIT_GATEWAY)
        except (httpx.InvalidURL, ValueError) as exc:
            self.fail(2, 'gateway', f'{self.base_url} is not a usable URL ({exc})',
                      'give a URL such as http://127.0.0.1:8000', EXIT_GATEWAY)
        elapsed = time.perf_counter() - started
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code != 200 or not isinstance(body, dict):
            self.fail(2, 'gateway', f'GET /v1/health answered {response.status_code} '
                      f'{response.text[:200]!r}', f'is {self.base_url} a sequence-ai gateway?',
                      EXIT_GATEWAY)
        if body.get('status') != 'ok':
            self.fail(2, 'gateway', f'health status is {body.get("status")!r}, not ok',
                      'the gateway reports itself unhealthy; try again or ask its operator',
                      EXIT_GATEWAY)
        auth = str(body.get('auth', 'unknown'))
        self.auth_enabled = auth != 'disabled'
        self.line('OK', 2, 'gateway', f'up: backend {body.get("backend", "unknown")}, auth '
                  f'{auth} (GET /v1/health in {_ms(elapsed)})')

    def check_model(self) -> None:
        """3: is the model in the catalogue, as an act model."""
        assert self.public is not None
        hint = 'the gateway answers health but not its catalogue; try again'
        try:
            response = self.public.get(PUBLIC_PATH)
            rows = response.json().get('data') if response.status_code == 200 else None
        except httpx.HTTPError as exc:
            self.fail(3, 'model', f'GET {PUBLIC_PATH} failed ({type(exc).__name__}: {exc})',
                      hint, EXIT_MODEL)
        except (ValueError, AttributeError):
            rows = None
        if not isinstance(rows, list):
            self.fail(3, 'model', f'GET {PUBLIC_PATH} answered {response.status_code} without '
                      'a catalogue', hint, EXIT_MODEL)
        rows = [row for row in rows if isinstance(row, dict) and 'id' in row]
        act_names = [_short(str(row['id'])) for row in rows if row.get('endpoint') == 'act']
        row = next((r for r in rows if r['id'] == self.model_id), None)
        if row is None:
            self.fail(3, 'model', f'{self.options.model!r} is not in the catalogue',
                      f'act models here: {", ".join(act_names) or "none"} '
                      '(`sequence-ai-ros models`)', EXIT_MODEL)
        if row.get('endpoint', 'act') != 'act':
            self.fail(3, 'model', f'{_short(self.model_id)} is a {row.get("endpoint")!r} '
                      'model, not an act model', f'act models here: {", ".join(act_names)}',
                      EXIT_MODEL)
        try:
            probe_observation(row)
        except ValueError as exc:
            self.fail(3, 'model', f'{_short(self.model_id)}: {exc}',
                      'the catalogue entry is incomplete; ask the gateway operator', EXIT_MODEL)
        self.row = row
        views = ', '.join(row.get('camera_views') or ()) or 'none'
        self.line('OK', 3, 'model', f'{_short(self.model_id)}: {row.get("robot")}, '
                  f'{row.get("action_space", "?")}, {row.get("action_dim")} dims, '
                  f'{row.get("action_horizon")} steps at {_cell(row.get("control_hz"))} Hz, '
                  f'views {views}')

    def check_act(self) -> 'ActAnswer':
        """4 and 5: one real POST /v1/act, which says whether the key is valid and has credit."""
        payload = {'model': self.model_id, 'observation': probe_observation(self.row)}
        transport = Transport(api_key=self.key, base_url=self.base_url,
                              timeout_s=self.options.timeout_s, verify=self.tls)
        first = time.perf_counter()
        deadline = None if self.options.wait_s is None else first + self.options.wait_s
        announced = False
        try:
            while True:
                started = time.perf_counter()
                try:
                    body = transport.post(ACT_PATH, payload)
                except Unavailable as exc:
                    if not exc.warming:
                        raise
                    remaining = 0.0 if deadline is None else deadline - time.perf_counter()
                    if remaining <= 0:
                        answer = ActAnswer(warming=exc, waited_s=time.perf_counter() - first)
                        break
                    if not announced:
                        print(f'      model warming (ready in about {_eta(exc)}); waiting up to '
                              f'{self.options.wait_s:g} s', file=self.out, flush=True)
                        announced = True
                    self.sleep(min(max(exc.retry_after_s or 1.0, 0.05), remaining))
                    continue
                elapsed = time.perf_counter() - started
                answer = ActAnswer(prediction=Prediction.from_wire(body), elapsed_s=elapsed,
                                   waited_s=started - first)
                break
        except AuthError as exc:
            self.fail(4, 'key valid', f'401 {exc.message}',
                      'the gateway does not know this key: check it for typos, or get a new one',
                      EXIT_KEY_INVALID)
        except OutOfCredit as exc:
            self._key_valid('not 401')
            self.fail(5, 'credit', f'402 {exc.message}', 'top up the account, or use another key',
                      EXIT_NO_CREDIT)
        except CertificateError as exc:  # trusted at check 2: the certificate changed since
            self._fail_certificate(4, 'test call', certificate_refusal(exc) or exc.message)
        except InvalidRequest as exc:
            self._key_valid(f'not 401 but {exc.status}')
            self.fail(5, 'test call', f'refused: {exc.status} {exc.message}',
                      'the catalogue entry and the gateway disagree on a valid observation; '
                      'report this to the gateway operator', EXIT_REFUSED)
        except SequencesError as exc:
            status = f'{exc.status} ' if exc.status else ''
            self.fail(4, 'test call', f'failed: {status}{exc.message}',
                      'the gateway is up but could not serve the call; try again, or raise '
                      '--timeout', EXIT_ACT_FAILED)
        finally:
            transport.close()
        if answer.warming is not None:
            self._key_valid('503 warming, not 401')
            self.line('OK', 5, 'credit', 'not refused (the answer was 503 warming, not 402)')
        else:
            self._key_valid('served')
            self.line('OK', 5, 'credit', 'has credit (the test call was served: 1 credit used)')
        return answer

    def _key_valid(self, detail: str) -> None:
        if self.auth_enabled:
            self.line('OK', 4, 'key valid', f'accepted by POST {ACT_PATH} ({detail})')
        else:
            self.line('WARN', 4, 'key valid', f'not checked: the gateway has auth disabled '
                      f'and accepts any key ({detail})')

    def check_latency(self) -> None:
        """6: a new connection per call against one reused connection, on a public GET."""
        assert self.public is not None
        samples = self.options.samples
        fresh, reused = [], []
        try:
            for _ in range(samples):
                with self._client(headers=self.public.headers) as client:
                    fresh.append(self._timed_get(client))
            # The public client has stayed open since check 2, so every call here reuses it.
            for _ in range(samples):
                reused.append(self._timed_get(self.public))
        except (httpx.HTTPError, RuntimeError) as exc:
            self.fail(6, 'latency', f'GET {PUBLIC_PATH} failed during sampling ({exc})',
                      'the gateway is flaky: look at its logs or the network', EXIT_LATENCY)
        new_ms, reuse_ms = statistics.median(fresh), statistics.median(reused)
        saving = new_ms - reuse_ms
        verdict = (f'reusing saves {_ms(saving)} per call ({saving / new_ms:.0%})'
                   if saving > 0 else 'no saving measured')
        self.line('OK', 6, 'latency', f'new connection {_ms(new_ms)}, one reused connection '
                  f'{_ms(reuse_ms)} (medians of {samples}, GET {PUBLIC_PATH}): {verdict}')

    @staticmethod
    def _timed_get(client: httpx.Client) -> float:
        started = time.perf_counter()
        response = client.get(PUBLIC_PATH)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f'answered {response.status_code}')
        return elapsed

    def report_warmth(self, answer: 'ActAnswer | None') -> int:
        """7: is the model warm, as the test call found it."""
        if answer is None:
            self.line('WARN', 7, 'warm', 'unknown (--no-act)')
            return EXIT_OK
        if answer.warming is not None:
            exc = answer.warming
            state = (f'still warming after waiting {answer.waited_s:.1f} s'
                     if self.options.wait_s else 'cold: warming now')
            self.line('WARN', 7, 'warm', f'{state}, ready in about {_eta(exc)} (job {exc.job_id})',
                      'a robot started now holds until the model is warm; `doctor --wait` '
                      'warms it first')
            return EXIT_NOT_WARM
        assert answer.prediction is not None
        chunk = answer.prediction.action_chunk
        server_s = answer.prediction.perf.get('inference_ms')
        split = ''
        if isinstance(server_s, (int, float)):
            overhead = answer.elapsed_s * 1000 - server_s
            split = f': {server_s:.1f} ms inference + {overhead:.1f} ms network and queue'
        waited = (f' after {answer.waited_s:.1f} s of warm-up' if answer.waited_s >= 0.05
                  else '')
        self.line('OK', 7, 'warm', f'served{waited} in {_ms(answer.elapsed_s)}{split} '
                  f'({len(chunk)} steps, {chunk.action_space})')
        return EXIT_OK


@dataclass
class ActAnswer:
    """The test call's outcome: a served prediction, or the 503 warming that answered it."""

    prediction: Prediction | None = None
    warming: Unavailable | None = None
    elapsed_s: float = 0.0
    waited_s: float = 0.0


def run_doctor(options: DoctorOptions, out: TextIO | None = None) -> int:
    """Run the checks and return the exit code."""
    return Doctor(options, out).run()
