"""connect() and models(): the sequence-ai client's two entry points."""

from collections.abc import Callable
import ssl

from ._config import DEFAULT_TIMEOUT_S, full_model_id
from ._direct import DirectConnection
from ._direct_wire import WorkerRoute
from ._interrupt import InterruptSignal
from ._observer import PolicyObserver
from ._policy import Policy
from ._policy_direct import PROTOCOLS
from ._transport import Transport
from ._types import Model


def connect(model: str, *, api_key: str | None = None, base_url: str | None = None,
            control_hz: float | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
            verify: bool | str | ssl.SSLContext = True,
            observer: PolicyObserver | None = None, protocol: str = 'auto',
            action_space: str | None = None,
            _pin: Callable[[WorkerRoute], WorkerRoute] | None = None) -> Policy:
    """
    Open a Policy on one model; nothing is sent (or billed) until the first request.

    model       `pi05-droid` (a deployment's name on the direct protocol; v1 expands it to
                `accounts/sequences/models/pi05-droid`, and takes the full id as well)
    api_key     else $SEQUENCES_API_KEY, else the credentials file
    base_url    else $SEQUENCES_BASE_URL, else the hosted gateway
    control_hz  play actions at this rate instead of the rate each chunk declares
    timeout_s   per-request timeout
    verify      TLS: True (system CAs), a CA file path, or an ssl.SSLContext; never off
    observer    a PolicyObserver told of every request (instrumentation), else none
    protocol    `auto` (the service's current, direct protocol; /v1/act only when the gateway
                has no direct protocol), `direct` or `v1`; policy.protocol says which
    action_space  the deployment's action space (`joint_velocity`, `joint_position`, ...)
                when its answers do not state it (direct, no preset chunk); never guessed
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f'protocol must be one of {", ".join(PROTOCOLS)}, got {protocol!r}')
    transport = Transport(api_key=api_key, base_url=base_url, timeout_s=timeout_s,
                          verify=verify)
    full_id = full_model_id(model)
    direct = None
    if protocol != 'v1':
        direct = DirectConnection(transport, full_id.rsplit('/', 1)[-1],
                                  interrupt=InterruptSignal(), action_space=action_space,
                                  pin=_pin)
    return Policy(transport, full_id, control_hz=control_hz, observer=observer,
                  protocol=protocol, direct=direct)


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
