"""WorkerChannel: the data plane, HTTPS to one worker pinned by its certificate's fingerprint."""

from typing import Any

import httpx

from ._direct_wire import WorkerRoute
from ._errors import InvalidRequest
from ._msgpack import MEDIA_TYPE, pack
from ._pinned_tls import pinned_context
from ._redaction import remember_secret
from ._transport import _version, HttpChannel


class WorkerChannel(HttpChannel):
    """
    One pooled connection per request in flight to the worker.

    It is authenticated by the direct secret alone (the API key never leaves for the worker)
    and trusted by the certificate the connect answer pinned.
    """

    def __init__(self, route: WorkerRoute, session: str, timeout_s: float) -> None:
        self._context = pinned_context(route.fingerprint)  # raises before any socket opens
        remember_secret(route.direct_secret)
        self.route = route
        self.base_url = route.worker_url
        self.timeout_s = timeout_s
        self._client = httpx.Client(
            base_url=route.worker_url,
            headers={'Authorization': f'Bearer {route.direct_secret}',
                     'X-Seq-Session': session, 'Accept': 'application/json',
                     'User-Agent': f'sequence_ai_ros/{_version()}'},
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=4, max_keepalive_connections=4,
                                keepalive_expiry=300.0),
            verify=self._context,
        )

    def __repr__(self) -> str:
        return f'WorkerChannel({self.base_url!r}, secret=<hidden>)'

    def post_packed(self, path: str, payload: dict[str, Any], *,
                    timeout_s: float | None = None,
                    headers: dict[str, str] | None = None) -> dict[str, Any]:
        """POST `payload` as msgpack (the observe stream's encoding); the answer is JSON."""
        try:
            content = pack(payload)
        except ValueError as exc:
            raise InvalidRequest(f'the observation cannot be sent: {exc}') from exc
        return self.send('POST', path, content, MEDIA_TYPE, timeout_s=timeout_s,
                         headers=headers)

    def cut(self) -> None:
        """Shut the connections now: a request in flight fails at once (interrupt())."""
        self._context.cut_connections()
