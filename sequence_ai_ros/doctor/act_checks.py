"""Checks 4, 5 and 7: one real POST /v1/act says whether the key is valid, has credit, is warm."""

from collections.abc import Callable
from dataclasses import dataclass
import time
from typing import Any

from sequence_ai_ros.client import (
    AuthError,
    certificate_refusal,
    CertificateError,
    InvalidRequest,
    OutOfCredit,
    Prediction,
    SequencesError,
    Transport,
    Unavailable,
)
from sequence_ai_ros.doctor.codes import (
    EXIT_ACT_FAILED,
    EXIT_KEY_INVALID,
    EXIT_NO_CREDIT,
    EXIT_NOT_WARM,
    EXIT_OK,
    EXIT_REFUSED,
)
from sequence_ai_ros.doctor.report import ms, Report

ACT_PATH = '/v1/act'


@dataclass
class ActAnswer:
    """The test call's outcome: a served prediction, or the 503 warming that answered it."""

    prediction: Prediction | None = None
    warming: Unavailable | None = None
    elapsed_s: float = 0.0
    waited_s: float = 0.0


@dataclass
class ActSettings:
    """How the test call is made and judged: a warming model is waited for up to `wait_s`."""

    wait_s: float | None  # None: not waited for
    sleep: Callable[[float], None]
    auth_enabled: bool  # False: any key passes, so a served call proves nothing about it


def _eta(exc: Unavailable) -> str:
    return 'unknown' if exc.retry_after_s is None else f'{exc.retry_after_s:g} s'


def check_act(report: Report, transport: Transport, payload: dict[str, Any],
              settings: ActSettings) -> ActAnswer:
    """4 and 5: one real POST /v1/act, which says whether the key is valid and has credit."""
    first = time.perf_counter()
    deadline = None if settings.wait_s is None else first + settings.wait_s
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
                    report.say(f'      model warming (ready in about {_eta(exc)}); waiting up '
                               f'to {settings.wait_s:g} s')
                    announced = True
                settings.sleep(min(max(exc.retry_after_s or 1.0, 0.05), remaining))
                continue
            elapsed = time.perf_counter() - started
            answer = ActAnswer(prediction=Prediction.from_wire(body), elapsed_s=elapsed,
                               waited_s=started - first)
            break
    except AuthError as exc:
        report.fail(4, 'key valid', f'401 {exc.message}',
                    'the gateway does not know this key: check it for typos, or get a new one',
                    EXIT_KEY_INVALID)
    except OutOfCredit as exc:
        _key_valid(report, settings.auth_enabled, 'not 401')
        report.fail(5, 'credit', f'402 {exc.message}', 'top up the account, or use another key',
                    EXIT_NO_CREDIT)
    except CertificateError as exc:  # trusted at check 2: the certificate changed since
        report.fail_certificate(4, 'test call', certificate_refusal(exc) or exc.message)
    except InvalidRequest as exc:
        _key_valid(report, settings.auth_enabled, f'not 401 but {exc.status}')
        report.fail(5, 'test call', f'refused: {exc.status} {exc.message}',
                    'the catalogue entry and the gateway disagree on a valid observation; '
                    'report this to the gateway operator', EXIT_REFUSED)
    except SequencesError as exc:
        status = f'{exc.status} ' if exc.status else ''
        report.fail(4, 'test call', f'failed: {status}{exc.message}',
                    'the gateway is up but could not serve the call; try again, or raise '
                    '--timeout', EXIT_ACT_FAILED)
    if answer.warming is not None:
        _key_valid(report, settings.auth_enabled, '503 warming, not 401')
        report.line('OK', 5, 'credit', 'not refused (the answer was 503 warming, not 402)')
    else:
        _key_valid(report, settings.auth_enabled, 'served')
        report.line('OK', 5, 'credit', 'has credit (the test call was served: 1 credit used)')
    return answer


def _key_valid(report: Report, auth_enabled: bool, detail: str) -> None:
    if auth_enabled:
        report.line('OK', 4, 'key valid', f'accepted by POST {ACT_PATH} ({detail})')
    else:
        report.line('WARN', 4, 'key valid', f'not checked: the gateway has auth disabled '
                    f'and accepts any key ({detail})')


def report_warmth(report: Report, answer: ActAnswer | None, wait_s: float | None) -> int:
    """7: is the model warm, as the test call found it."""
    if answer is None:
        report.line('WARN', 7, 'warm', 'unknown (--no-act)')
        return EXIT_OK
    if answer.warming is not None:
        exc = answer.warming
        state = (f'still warming after waiting {answer.waited_s:.1f} s'
                 if wait_s else 'cold: warming now')
        report.line('WARN', 7, 'warm', f'{state}, ready in about {_eta(exc)} (job {exc.job_id})',
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
    report.line('OK', 7, 'warm', f'served{waited} in {ms(answer.elapsed_s)}{split} '
                f'({len(chunk)} steps, {chunk.action_space})')
    return EXIT_OK
