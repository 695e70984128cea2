"""Checks 2, 3 and 6, on the public endpoints: the gateway's health, the catalogue, latency."""

from collections.abc import Callable
import statistics
import time
from typing import Any

import httpx
from sequence_ai_ros.client import certificate_refusal
from sequence_ai_ros.doctor.codes import EXIT_GATEWAY, EXIT_LATENCY, EXIT_MODEL
from sequence_ai_ros.doctor.probe import probe_observation
from sequence_ai_ros.doctor.report import cell, ms, Report, short

PUBLIC_PATH = '/v1/models'


def check_gateway(report: Report, public: httpx.Client) -> bool:
    """2: does the gateway answer GET /v1/health with ok; return whether it checks keys."""
    hint = ('start one with `sequence-ai-ros gateway`, or check --base-url / '
            '$SEQUENCES_BASE_URL')
    started = time.perf_counter()
    try:
        response = public.get('/v1/health')
    except httpx.HTTPError as exc:
        reason = certificate_refusal(exc)
        if reason is not None:
            report.fail_certificate(2, 'gateway', reason)
        report.fail(2, 'gateway', f'nothing answers at {report.base_url} '
                    f'({type(exc).__name__}: {exc})', hint, EXIT_GATEWAY)
    except (httpx.InvalidURL, ValueError) as exc:
        report.fail(2, 'gateway', f'{report.base_url} is not a usable URL ({exc})',
                    'give a URL such as http://127.0.0.1:8000', EXIT_GATEWAY)
    elapsed = time.perf_counter() - started
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200 or not isinstance(body, dict):
        report.fail(2, 'gateway', f'GET /v1/health answered {response.status_code} '
                    f'{response.text[:200]!r}', f'is {report.base_url} a sequence-ai gateway?',
                    EXIT_GATEWAY)
    if body.get('status') != 'ok':
        report.fail(2, 'gateway', f'health status is {body.get("status")!r}, not ok',
                    'the gateway reports itself unhealthy; try again or ask its operator',
                    EXIT_GATEWAY)
    auth = str(body.get('auth', 'unknown'))
    report.line('OK', 2, 'gateway', f'up: backend {body.get("backend", "unknown")}, auth '
                f'{auth} (GET /v1/health in {ms(elapsed)})')
    return auth != 'disabled'


def check_model(report: Report, public: httpx.Client, model: str, model_id: str
                ) -> dict[str, Any]:
    """3: is the model (as given, and its full id) in the catalogue, as an act model; its row."""
    hint = 'the gateway answers health but not its catalogue; try again'
    try:
        response = public.get(PUBLIC_PATH)
        rows = response.json().get('data') if response.status_code == 200 else None
    except httpx.HTTPError as exc:
        report.fail(3, 'model', f'GET {PUBLIC_PATH} failed ({type(exc).__name__}: {exc})',
                    hint, EXIT_MODEL)
    except (ValueError, AttributeError):
        rows = None
    if not isinstance(rows, list):
        report.fail(3, 'model', f'GET {PUBLIC_PATH} answered {response.status_code} without '
                    'a catalogue', hint, EXIT_MODEL)
    rows = [row for row in rows if isinstance(row, dict) and 'id' in row]
    act_names = [short(str(row['id'])) for row in rows if row.get('endpoint') == 'act']
    row = next((r for r in rows if r['id'] == model_id), None)
    if row is None:
        report.fail(3, 'model', f'{model!r} is not in the catalogue',
                    f'act models here: {", ".join(act_names) or "none"} '
                    '(`sequence-ai-ros models`)', EXIT_MODEL)
    if row.get('endpoint', 'act') != 'act':
        report.fail(3, 'model', f'{short(model_id)} is a {row.get("endpoint")!r} '
                    'model, not an act model', f'act models here: {", ".join(act_names)}',
                    EXIT_MODEL)
    try:
        probe_observation(row)
    except ValueError as exc:
        report.fail(3, 'model', f'{short(model_id)}: {exc}',
                    'the catalogue entry is incomplete; ask the gateway operator', EXIT_MODEL)
    views = ', '.join(row.get('camera_views') or ()) or 'none'
    report.line('OK', 3, 'model', f'{short(model_id)}: {row.get("robot")}, '
                f'{row.get("action_space", "?")}, {row.get("action_dim")} dims, '
                f'{row.get("action_horizon")} steps at {cell(row.get("control_hz"))} Hz, '
                f'views {views}')
    return row


def check_latency(report: Report, public: httpx.Client,
                  new_client: Callable[[], httpx.Client], samples: int) -> None:
    """6: a new connection per call (`new_client`) against one reused connection (`public`)."""
    fresh, reused = [], []
    try:
        for _ in range(samples):
            with new_client() as client:
                fresh.append(_timed_get(client))
        # The public client has stayed open since check 2, so every call here reuses it.
        for _ in range(samples):
            reused.append(_timed_get(public))
    except (httpx.HTTPError, RuntimeError) as exc:
        report.fail(6, 'latency', f'GET {PUBLIC_PATH} failed during sampling ({exc})',
                    'the gateway is flaky: look at its logs or the network', EXIT_LATENCY)
    new_ms, reuse_ms = statistics.median(fresh), statistics.median(reused)
    saving = new_ms - reuse_ms
    verdict = (f'reusing saves {ms(saving)} per call ({saving / new_ms:.0%})'
               if saving > 0 else 'no saving measured')
    report.line('OK', 6, 'latency', f'new connection {ms(new_ms)}, one reused connection '
                f'{ms(reuse_ms)} (medians of {samples}, GET {PUBLIC_PATH}): {verdict}')


def _timed_get(client: httpx.Client) -> float:
    started = time.perf_counter()
    response = client.get(PUBLIC_PATH)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f'answered {response.status_code}')
    return elapsed
