"""
sequence_ai_ros: drive a robot from a cloud-served robot policy, smoothly and safely.

    import sequence_ai_ros as sai

    with sai.connect(model='pi05-droid') as policy:
        outcome = policy.run(observe=robot.observe, act=robot.act, validate=robot.is_safe,
                             hold=robot.hold, max_actions=250)

Importing this package loads only the client core (httpx); the ROS node, the local gateway
and the simulated arm live in subpackages that are imported only when used.
"""

from importlib import import_module
import ssl
from typing import Any, TYPE_CHECKING

if TYPE_CHECKING:
    from .client.config import DEFAULT_BASE_URL
    from .client.engine import ChunkEngine
    from .client.errors import (
        AuthError,
        CertificateError,
        ChunkExhausted,
        InvalidRequest,
        MalformedResponse,
        OutOfCredit,
        PolicyBusy,
        PolicyClosed,
        SequencesError,
        Unavailable,
    )
    from .client.observer import PolicyObserver
    from .client.outcome import RunOutcome
    from .client.playback import PlaybackOptions
    from .client.policy import Policy
    from .client.stream import ActionStream
    from .client.transport import Transport
    from .client.types import (
        ActionChunk,
        ImageFrame,
        Model,
        Observation,
        Prediction,
        Proprioception,
    )

# Loaded on first use (PEP 562), so that `import sequence_ai_ros.world` or `.gateway` (which
# share this package) never loads the client and httpx.
_EXPORTS = {
    'DEFAULT_BASE_URL': 'config', 'ChunkEngine': 'engine', 'RunOutcome': 'outcome',
    'Policy': 'policy', 'ActionStream': 'stream', 'Transport': 'transport',
    'PolicyObserver': 'observer', 'PlaybackOptions': 'playback',
    **dict.fromkeys(('AuthError', 'CertificateError', 'ChunkExhausted', 'InvalidRequest',
                     'MalformedResponse', 'OutOfCredit', 'PolicyBusy', 'PolicyClosed',
                     'SequencesError', 'Unavailable'), 'errors'),
    **dict.fromkeys(('ActionChunk', 'ImageFrame', 'Model', 'Observation', 'Prediction',
                     'Proprioception'), 'types'),
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(import_module(f'.client.{_EXPORTS[name]}', __name__), name)
    globals()[name] = value
    return value


__version__ = '0.1.0'

__all__ = [
    'connect', 'models', 'Policy', 'ActionStream', 'ChunkEngine', 'Observation', 'ImageFrame',
    'Proprioception', 'ActionChunk', 'Prediction', 'RunOutcome', 'Model', 'SequencesError',
    'AuthError', 'OutOfCredit', 'InvalidRequest', 'Unavailable', 'ChunkExhausted',
    'MalformedResponse', 'CertificateError', 'PolicyBusy', 'PolicyClosed', 'DEFAULT_BASE_URL',
    'Transport', 'PolicyObserver', 'PlaybackOptions',
]


def connect(model: str, *, api_key: str | None = None, base_url: str | None = None,
            control_hz: float | None = None, timeout_s: float = 30.0,
            verify: bool | str | ssl.SSLContext = True,
            observer: 'PolicyObserver | None' = None) -> 'Policy':
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
    from .client.config import full_model_id
    from .client.policy import Policy
    from .client.transport import Transport
    transport = Transport(api_key=api_key, base_url=base_url, timeout_s=timeout_s,
                          verify=verify)
    return Policy(transport, full_model_id(model), control_hz=control_hz, observer=observer)


def models(*, endpoint: str | None = None, api_key: str | None = None,
           base_url: str | None = None) -> 'list[Model]':
    """Return the live catalogue (public: no key needed); endpoint='act' for action models."""
    from .client.transport import Transport
    from .client.types import Model
    transport = Transport(api_key=api_key, base_url=base_url, require_key=False)
    try:
        body = transport.get('/v1/models' + (f'?endpoint={endpoint}' if endpoint else ''))
        rows = body.get('data', [])
        return [Model.from_wire(row) for row in rows if isinstance(row, dict) and 'id' in row]
    finally:
        transport.close()
