"""One pooled, kept-alive httpx client per Policy, and the HTTP status -> typed error mapping."""

import json
import ssl
import time
from typing import Any

import httpx
from sequence_ai_ros.contract.key_masking import mask_key

from ._config import DEFAULT_TIMEOUT_S, resolve_api_key, resolve_base_url
from ._error_map import error_from_body, has_code, number
from ._errors import (
    AuthError,
    CertificateError,
    InvalidRequest,
    MalformedResponse,
    OutOfCredit,
    SequencesError,
    Unavailable,
)

_INVALID_STATUSES = (400, 404, 413, 422)
# A chunk is kilobytes; a body this big is a broken or hostile server, not a plan to parse.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


def _version() -> str:
    try:
        from importlib.metadata import version
        return version('sequence_ai_ros')
    except Exception:  # a source checkout that was never installed
        return 'dev'


class HttpChannel:
    """
    One pooled httpx client and the rules for reading its answers.

    JSON bodies are read against one deadline and one size cap, non-2xx answers become typed
    errors. The gateway's Transport and the worker's WorkerChannel are both one.
    """

    _client: httpx.Client
    base_url: str
    timeout_s: float

    def post(self, path: str, payload: dict[str, Any], *, timeout_s: float | None = None,
             headers: dict[str, str] | None = None) -> dict[str, Any]:
        """POST JSON and return the decoded 2xx body, or raise the typed error."""
        try:
            body = json.dumps(payload, allow_nan=False)
        except ValueError as exc:
            raise InvalidRequest(f'request holds a non-finite number: {exc}') from exc
        return self.send('POST', path, body.encode(), 'application/json', timeout_s=timeout_s,
                         headers=headers)

    def get(self, path: str, *, timeout_s: float | None = None) -> dict[str, Any]:
        """GET and return the decoded 2xx body, or raise the typed error."""
        return self._exchange('GET', path, timeout_s)

    def send(self, method: str, path: str, content: bytes, media_type: str, *,
             timeout_s: float | None = None,
             headers: dict[str, str] | None = None) -> dict[str, Any]:
        """Send `content` of `media_type` and return the decoded 2xx JSON body."""
        return self._exchange(method, path, timeout_s, content=content,
                              headers={'Content-Type': media_type, **(headers or {})})

    def close(self) -> None:
        """Close the pooled connection. Idempotent."""
        try:
            self._client.close()
        except RuntimeError:
            # httpcore < 0.15 (httpx 0.21, Ubuntu 22.04) closes its connections, then raises
            # for a prefetch still in flight; that request fails on its own thread as it should.
            pass

    def _exchange(self, method: str, path: str, timeout_s: float | None = None,
                  **kwargs: Any) -> dict[str, Any]:
        # httpx's read timeout is per read: a server that drips a byte at a time would never
        # time out. The body is read piece by piece against one deadline and one size cap.
        limit = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        if timeout_s is not None:
            kwargs['timeout'] = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
        try:
            with self._client.stream(method, path, **kwargs) as streamed:
                pieces, size = [], 0
                for piece in streamed.iter_bytes():
                    size += len(piece)
                    if size > MAX_RESPONSE_BYTES:
                        raise MalformedResponse(
                            f'{streamed.status_code} answer is over {MAX_RESPONSE_BYTES} bytes; '
                            'refused without reading the rest', status=streamed.status_code)
                    if time.monotonic() > deadline:
                        raise Unavailable(f'{path}: the answer was still arriving after '
                                          f'{limit:g}s (timeout_s)')
                    pieces.append(piece)
                response = httpx.Response(streamed.status_code, headers=streamed.headers,
                                          content=b''.join(pieces), request=streamed.request)
        except httpx.HTTPError as exc:
            raise self._transport_error(path, exc, limit) from exc
        return self._unwrap(response)

    def _transport_error(self, path: str, exc: httpx.HTTPError,
                         limit: float) -> SequencesError:
        if isinstance(exc, httpx.TimeoutException):
            return Unavailable(f'{path} timed out after {limit:g}s', code='timeout')
        refusal = certificate_refusal(exc)
        if refusal is not None:
            return CertificateError(
                f'the TLS certificate of {self.base_url} failed verification ({refusal}); fix '
                'the certificate, or pass verify= a CA file that signs it')
        if isinstance(exc, httpx.ConnectError):
            return Unavailable(f'could not reach {self.base_url}: {type(exc).__name__}',
                               details={'reason': 'unreachable'})
        return Unavailable(f'the connection to {self.base_url} was lost during {path} '
                           f'({type(exc).__name__}); the next request opens a new one',
                           details={'reason': 'connection_lost'})

    @staticmethod
    def _unwrap(response: httpx.Response) -> dict[str, Any]:
        status = response.status_code
        if 200 <= status < 300:
            media = response.headers.get('content-type', '').split(';')[0].strip().lower()
            if not (media == 'application/json' or media.endswith('+json')):
                # e.g. a captive portal's HTML page or a proxy's text: not the gateway speaking
                raise MalformedResponse(f'{status} answer is {media or "untyped"}, not JSON',
                                        status=status, body=response.text[:2000])
            try:
                decoded = response.json()
            except ValueError as exc:
                raise MalformedResponse(f'{status} answer is not JSON', status=status,
                                        body=response.text[:2000]) from exc
            if not isinstance(decoded, dict):
                raise MalformedResponse(f'{status} answer is not a JSON object', status=status)
            return decoded
        raise error_for(response)


class Transport(HttpChannel):
    """
    HTTP to the gateway over one connection that stays open for the life of the Policy.

    The handshake is most of a bare request over the internet (185 ms of 306 ms measured on the
    hosted gateway), so the connection is the thing to keep. The key lives only in the
    Authorization header and is never part of a repr, log line or error.
    """

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, require_key: bool = True,
                 verify: bool | str | ssl.SSLContext = True) -> None:
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise ValueError('timeout_s must be a positive number of seconds')
        tls = tls_context(verify)
        key, self.key_source = resolve_api_key(api_key)
        if require_key and not key:
            raise AuthError('no API key: pass api_key=, set $SEQUENCES_API_KEY, or write it to '
                            'the credentials file ($XDG_CONFIG_HOME/sequence-ai/credentials)')
        self._masked_key = mask_key(key)
        self.timeout_s = float(timeout_s)
        self.base_url = resolve_base_url(base_url)
        headers = {'User-Agent': f'sequence_ai_ros/{_version()}'}
        if key:  # never 'Bearer None'
            headers['Authorization'] = f'Bearer {key}'
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            # One robot, one connection, kept as long as the gateway allows.
            limits=httpx.Limits(max_connections=4, max_keepalive_connections=4,
                                keepalive_expiry=300.0),
            verify=tls,
        )

    def __repr__(self) -> str:
        return f'Transport(base_url={self.base_url!r}, key={self._masked_key})'


def certificate_refusal(exc: BaseException) -> str | None:
    """Return why the server's TLS certificate was refused, if that is what `exc` comes from."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:  # httpx wraps the ssl error
        if isinstance(cause, ssl.SSLCertVerificationError):
            return str(cause.verify_message or cause)
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def tls_context(verify: bool | str | ssl.SSLContext) -> ssl.SSLContext:
    """
    Return the SSL context for `verify`: True (system CAs), a CA file path, or a context.

    False is refused: a robot that moves on commands from an unauthenticated server is the
    one failure this client will not make easy.
    """
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is True:
        return ssl.create_default_context()
    if isinstance(verify, str) and verify:
        return ssl.create_default_context(cafile=verify)
    raise ValueError('TLS verification stays on: pass verify=True (system CAs), a CA file '
                     'path, or an ssl.SSLContext')


def _retry_after(detail: dict[str, Any], headers: httpx.Headers) -> float | None:
    """Return the body's number, else the header's, else None: never a made-up wait."""
    found = number(detail.get('retry_after_s'))
    return found if found is not None else number(headers.get('Retry-After'))


def error_for(response: httpx.Response) -> SequencesError:
    """Build the typed error for a non-2xx answer, with the server's own message passed through."""
    status = response.status_code
    text = response.text[:4000]
    try:
        decoded: Any = response.json()
    except ValueError:
        decoded = None
    if has_code(decoded):  # the direct protocol's body, wherever it comes from
        return error_from_body(status, decoded, text=text, headers=response.headers)
    detail = decoded.get('detail') if isinstance(decoded, dict) else None
    structured = detail if isinstance(detail, dict) else {}
    if structured:
        message = str(structured.get('message') or structured.get('detail') or structured)
    else:
        message = str(detail) if detail else (text or response.reason_phrase)
    if status == 401:
        return AuthError(message, status=status, body=text)
    if status == 402:
        return OutOfCredit(message, status=status, body=text)
    if status in (503, 504):
        return Unavailable(message, status=status, body=text,
                           warming=structured.get('status') == 'warming_up',
                           retry_after_s=_retry_after(structured, response.headers),
                           job_id=structured.get('warming_job_id'))
    if status in _INVALID_STATUSES or 400 <= status < 500:
        return InvalidRequest(message, status=status, body=text)
    return SequencesError(message, status=status, body=text)
