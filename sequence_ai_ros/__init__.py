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
from typing import Any, TYPE_CHECKING

if TYPE_CHECKING:
    from .client import (
        ActionChunk,
        ActionSpaceUnknown,
        ActionStream,
        AuthError,
        CertificateError,
        CertPinError,
        ChunkEngine,
        ChunkExhausted,
        Conflict,
        connect,
        DEFAULT_BASE_URL,
        DEFAULT_TIMEOUT_S,
        EpisodeLost,
        Gone,
        ImageFrame,
        InternalError,
        Interrupted,
        InvalidRequest,
        MalformedResponse,
        Model,
        models,
        NotFound,
        Observation,
        OutOfCredit,
        PermissionDenied,
        PlaybackOptions,
        Policy,
        PolicyBusy,
        PolicyClosed,
        PolicyError,
        PolicyObserver,
        Prediction,
        Proprioception,
        PROTOCOLS,
        Readiness,
        RunOutcome,
        SeatLost,
        SequencesError,
        Transport,
        Unavailable,
    )

__version__ = '0.1.0'

__all__ = [
    'connect', 'models', 'Policy', 'ActionStream', 'ChunkEngine', 'Observation', 'ImageFrame',
    'Proprioception', 'ActionChunk', 'Prediction', 'RunOutcome', 'Model', 'SequencesError',
    'AuthError', 'OutOfCredit', 'InvalidRequest', 'Unavailable', 'ChunkExhausted',
    'MalformedResponse', 'CertificateError', 'PolicyBusy', 'PolicyClosed', 'DEFAULT_BASE_URL',
    'DEFAULT_TIMEOUT_S', 'Transport', 'PolicyObserver', 'PlaybackOptions', 'Readiness',
    'PermissionDenied', 'NotFound', 'Conflict', 'EpisodeLost', 'Gone', 'PolicyError',
    'InternalError', 'CertPinError', 'ActionSpaceUnknown', 'SeatLost', 'Interrupted',
    'PROTOCOLS',
]


# Loaded on first use (PEP 562), so that `import sequence_ai_ros.world` or `.gateway` (which
# share this package) never loads the client and httpx.
def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(import_module('.client', __name__), name)
    globals()[name] = value
    return value
