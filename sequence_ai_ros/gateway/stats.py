"""
Counting what the gateway saw, for GET /v1/_local/stats (local only, not the hosted contract).

`StatsMiddleware` sees every HTTP request except /v1/_local/*: the client's (host, port) (one
per TCP connection, so distinct pairs count connections) and the final status, per path and
per model. The stats body (assembled in app.py) holds: `connections` (distinct pairs),
`requests` {path: {status: n}}, `acts` {model id or "(none)": {status: n}}, `keys`
{masked key: {acts, credit_left}}, `models` {model id: {state cold|warming|warm, warm_in_s,
idle_s, warmups, in_flight, queued, max_queued}}, `queue_depth`, `in_flight`, `pid`, `uptime_s`,
`auth`, `scenario`, `time_scale`, `policy`, `protocol`, and with the direct protocol `direct`
{worker_url, draining, seats {model: {seats, held, sessions, line, released, expired}},
episodes {open, observations, acts, ended, lost, missing, labels}, worker {connections,
requests, acts}}, and `answer_faults` {armed {act, connect}, sent {act, connect}}.
"""

from collections import defaultdict
import os
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MODEL_SCOPE_KEY = 'sequence_ai_ros.model'
LOCAL_PREFIX = '/v1/_local/'
KNOWN_PATHS = ('/v1/act', '/v1/models', '/v1/health', '/openapi.json', '/v1/act/connect',
               '/v1/act/ready', '/v1/act/keepalive', '/v1/act/release', '/v1/latency',
               # the direct worker's own listener
               '/ping', '/observe', '/act', '/act/episode_end')
LABEL_PATH = '/v1/deployments/{name}/episodes/{episode}/label'
NO_MODEL = '(none)'


class Stats:
    """Counters: connections, requests per path/model and status."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.clients: set[tuple[str, int]] = set()
        self.by_path: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.by_model: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def record(self, client: Any, path: str, model: str | None, status: int) -> None:
        """Count one answered request."""
        if client:
            self.clients.add((str(client[0]), int(client[1])))
        # Unknown paths share one bucket so a scanner cannot grow the table without bound.
        if path.startswith('/v1/deployments/') and path.endswith('/label'):
            path = LABEL_PATH
        self.by_path[path if path in KNOWN_PATHS or path == LABEL_PATH else '(other)'][
            str(status)] += 1
        if path in ('/v1/act', '/act'):
            self.by_model[model or NO_MODEL][str(status)] += 1

    def snapshot(self) -> dict[str, Any]:
        """Return the counters as plain JSON-ready data."""
        return {
            'pid': os.getpid(),
            'uptime_s': time.monotonic() - self.started,
            'connections': len(self.clients),
            'requests': {p: dict(c) for p, c in self.by_path.items()},
            'acts': {m: dict(c) for m, c in self.by_model.items()},
        }


class StatsMiddleware:
    """Pure ASGI middleware recording each HTTP request's outcome into `stats`."""

    def __init__(self, app: ASGIApp, stats: Stats) -> None:
        self.app = app
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, noting the status it was answered with."""
        path = scope.get('path', '')
        if scope['type'] != 'http' or path.startswith(LOCAL_PREFIX):
            await self.app(scope, receive, send)
            return
        status = [500]

        async def send_and_note(message: Message) -> None:
            if message['type'] == 'http.response.start':
                status[0] = message['status']
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            self.stats.record(scope.get('client'), path, scope.get(MODEL_SCOPE_KEY), status[0])
