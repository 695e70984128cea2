"""The ASGI app: the hosted wire contract's routes (openapi.json) and the local stats endpoint."""

import json
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .act import ActService
from .answer_faults import AnswerFaults, CannedAnswers, faults_route
from .catalogue import Catalogue, load_catalogue
from .config import GatewayConfig
from .core import PolicyCore
from .errors import JsonReply
from .keys import KeyLedger
from .latency import LatencySampler
from .policy_api import load_factory, PolicyFactory
from .policy_backend import PolicyBackend, ThreadPoolBackend
from .reference_policy import ReferencePolicy
from .stats import Stats, StatsMiddleware
from .warmth import Warmth

OPENAPI_FILE = Path(__file__).with_name('openapi.json')
LOCAL_NOTE = ('Local gateway introspection for tests and benchmarks; not part of the hosted '
              'contract and never served by api.generalsequences.com.')


def serving_for(config: GatewayConfig) -> tuple[Catalogue, PolicyFactory, str]:
    """
    Return what `config` serves: the scaled catalogue, its policies' factory and their name.

    `--openpi` serves one model from an openpi server, `--policy` a plug-in (any action
    space), else the reference policies. The in-process app and every Ray replica ask here.
    """
    catalogue = load_catalogue(config.catalogue, config.time_scale, config.latency_median_s,
                               config.cold_start_s, any_space=bool(config.policy))
    if config.openpi:
        from .openpi.policy import openpi_serving  # msgpack and websockets only for --openpi

        served = openpi_serving(config.openpi, config.openpi_model, catalogue)
        return served.catalogue, served.factory, served.name
    if config.policy:
        return catalogue, load_factory(config.policy), config.policy
    return catalogue, ReferencePolicy, 'reference'


def create_app(config: GatewayConfig, backend: PolicyBackend | None = None) -> Starlette:
    """
    Build the gateway app for `config` (raises ValueError/ImportError on a bad set-up).

    Without `backend` the policies run in this process (`ThreadPoolBackend`, one per model).
    """
    scale = config.time_scale
    catalogue, factory, name = serving_for(config)
    if backend is None:
        backend = ThreadPoolBackend({p.id: factory(p) for p in catalogue.profiles}, name)
    policy_name = backend.name
    ledger = KeyLedger(config.keys, config.robot_keys)
    warmth = Warmth({p.id: p.cold_start_s for p in catalogue.profiles},
                    config.idle_cold_s * scale, config.start_warm)
    core = PolicyCore(catalogue, warmth,
                      LatencySampler(config.scenario, scale, config.step_after_s, config.seed),
                      backend, config.concurrency * backend.replicas, config.seed)
    service = ActService(core, ledger, config.max_body_bytes, config.body_timeout_s)
    faults = AnswerFaults()
    direct, worker, control_routes = None, None, []
    if config.protocol != 'v1':
        # Here: a v1-only gateway (and every Ray replica) needs neither msgpack nor cryptography.
        from .direct.control import ControlPlane
        from .direct.state import DirectState
        from .direct.worker import Worker

        direct = DirectState(core, ledger, config.direct, scale, config.max_body_bytes,
                             config.body_timeout_s)
        worker = Worker(direct, faults)
        control_routes = ControlPlane(direct).routes()
    stats = Stats()
    openapi = json.loads(OPENAPI_FILE.read_text(encoding='utf-8'))

    async def models(request: Request) -> JSONResponse:
        endpoint = request.query_params.get('endpoint') or None
        rows = [] if config.unlisted else catalogue.rows(endpoint)
        return JsonReply({'object': 'list', 'data': rows})

    async def health(request: Request) -> JSONResponse:
        return JsonReply({'status': 'ok', 'backend': 'local',
                          'auth': 'keys' if ledger.enabled else 'disabled'})

    async def local_stats(request: Request) -> JSONResponse:
        queues = core.queue_snapshot()
        body: dict[str, Any] = {'note': LOCAL_NOTE, **stats.snapshot()}
        body.update(
            keys=ledger.snapshot(),
            models={m: {**state, **queues[m]} for m, state in warmth.snapshot().items()},
            queue_depth=sum(q['queued'] for q in queues.values()),
            in_flight=sum(q['in_flight'] for q in queues.values()),
            auth='keys' if ledger.enabled else 'disabled',
            scenario=config.scenario, time_scale=scale, policy=policy_name,
            protocol=config.protocol, answer_faults=faults.snapshot(), **backend.describe())
        if direct is not None and worker is not None:
            seen = worker.stats.snapshot()
            body['direct'] = {**direct.snapshot(), 'worker': {
                k: seen[k] for k in ('connections', 'requests', 'acts')}}
        return JsonReply(body)

    async def local_drain(request: Request) -> JSONResponse:
        # Tests and rehearsals: answer `draining` from now on, as a gateway shutting down does.
        if direct is not None:
            direct.draining = True
        return JsonReply({'draining': direct is not None})

    async def openapi_json(request: Request) -> JSONResponse:
        return JsonReply(openapi)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return JsonReply({'detail': exc.detail}, exc.status_code, headers=exc.headers)

    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        return JsonReply({'detail': f'internal error: {type(exc).__name__}'}, 500)

    routes = [
        Route('/v1/models', models, methods=['GET']),
        Route('/v1/health', health, methods=['GET']),
        Route('/v1/_local/stats', local_stats, methods=['GET']),
        Route('/v1/_local/drain', local_drain, methods=['POST']),
        Route('/v1/_local/faults', faults_route(faults), methods=['POST', 'DELETE']),
        Route('/openapi.json', openapi_json, methods=['GET']),
    ]
    if config.protocol != 'direct':
        routes.append(Route('/v1/act', service.handle, methods=['POST']))
    routes += control_routes
    # Stats outside the canned answers: they count what the caller was answered.
    app = Starlette(routes=routes, middleware=[Middleware(StatsMiddleware, stats=stats),
                                               Middleware(CannedAnswers, faults=faults)],
                    exception_handlers={HTTPException: http_error, Exception: server_error})
    # The worker's app serves on its own listener (server.py); it shares the direct state.
    app.state.direct = direct
    app.state.worker = worker
    return app
