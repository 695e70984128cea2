"""connect() and models(): the sequence-ai client's two entry points."""

import ssl

from ._config import DEFAULT_TIMEOUT_S, full_model_id
from ._observer import PolicyObserver
from ._policy import Policy
from ._transport import Transport
from ._types import Model


def connect(model: str, *, api_key: str | None = None, base_url: str | None = None,
            control_hz: float | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
            verify: bool | str | ssl.SSLContext = True,
            observer: PolicyObserver | None = None) -> Policy:
    """
    Open a Policy on one model; nothing is sent (or billed) until the first request.

    model       `pi05-droid` or the full `accounts/sequences/models/pi05-droid`
    api_key     else $SEQUENCES_API_KEY, else the credentials file
    base_url    else $SEQUENCES_BASE_URL, else the hosted gateway
    control_hz  play actions at this rate instead of the rate each chunk declares
    timeout_s   per-request timeout
    verify      TLS: True (system CAs), a CA file path, or an ssl.SSLContext; never off
    observer    a PolicyObserver told of every request (instrumentation), else none
    """
    transport = Transport(api_key=api_key, base_url=base_url, timeout_s=timeout_s,
                          verify=verify)
    return Policy(transport, full_model_id(model), control_hz=control_hz, observer=observer)


def models(*, endpoint: str | None = None, api_key: str | None = None,
           base_url: str | None = None) -> list[Model]:
    """Return the live catalogue (public: no key needed); endpoint='act' for action models."""
    transport = Transport(api_key=api_key, base_url=base_url, require_key=False)
    try:
        body = transport.get('/v1/models' + (f'?endpoint={endpoint}' if endpoint else ''))
        rows = body.get('data', [])
        return [Model.from_wire(row) for row in rows if isinstance(row, dict) and 'id' in row]
    finally:
        transport.close()
