"""
The client core: plain Python over httpx, no ROS.

Its modules are private (the leading underscore): what the rest of the package may use is
this list, and what a user may use is the part of it that `sequence_ai_ros` exports. Ruff and
mypy read each list as written, so that part is written in both; test_layout checks that they
agree, and that nothing outside the client imports a private module. The names beyond the
public API are the package's own: the constants and rules the node, the CLI, the doctor and
the benches share with the client.
"""

from ._api import connect, models
from ._blend import blend_weight
from ._config import (
    credentials_path,
    DEFAULT_BASE_URL,
    DEFAULT_TIMEOUT_S,
    full_model_id,
    read_credentials_file,
    resolve_api_key,
    resolve_base_url,
    write_credentials_file,
)
from ._direct import busy_backoff, DirectConnection
from ._direct_answer import chunk_from_outputs
from ._direct_wire import Readiness, renew_after, WorkerRoute
from ._engine import ChunkEngine
from ._engine_stats import EngineReport, EngineStats
from ._episodes import EpisodeBook
from ._error_map import error_from_body
from ._errors import (
    ActionSpaceUnknown,
    AuthError,
    CertificateError,
    CertPinError,
    ChunkExhausted,
    Conflict,
    EpisodeLost,
    Gone,
    InternalError,
    Interrupted,
    InvalidRequest,
    is_transient,
    MalformedResponse,
    NotFound,
    OutOfCredit,
    PermissionDenied,
    PolicyBusy,
    PolicyClosed,
    PolicyError,
    SeatLost,
    SequencesError,
    Unavailable,
)
from ._interrupt import InterruptSignal
from ._latency import LatencyWindow, quantile
from ._msgpack import pack as pack_msgpack
from ._observer import PolicyObserver
from ._outcome import RunOutcome
from ._pinned_tls import fingerprint_of, pinned_context
from ._plan import PlannedStep
from ._playback import BLENDS, FALLBACK_CONTROL_RATE_HZ, JOIN_MODES, PlaybackOptions
from ._policy import Policy
from ._policy_direct import PROTOCOLS
from ._redaction import remember_secret, scrub
from ._rtc import PREFIX_TOLERANCE
from ._stream import ActionStream
from ._transport import certificate_refusal, error_for, tls_context, Transport
from ._types import ActionChunk, ImageFrame, Model, Observation, Prediction, Proprioception
from ._worker import WorkerChannel

__all__ = [
    # The public API: sequence_ai_ros.__all__, the same names.
    'connect', 'models', 'Policy', 'ActionStream', 'ChunkEngine', 'Observation', 'ImageFrame',
    'Proprioception', 'ActionChunk', 'Prediction', 'RunOutcome', 'Model', 'SequencesError',
    'AuthError', 'OutOfCredit', 'InvalidRequest', 'Unavailable', 'ChunkExhausted',
    'MalformedResponse', 'CertificateError', 'PolicyBusy', 'PolicyClosed', 'DEFAULT_BASE_URL',
    'DEFAULT_TIMEOUT_S', 'Transport', 'PolicyObserver', 'PlaybackOptions', 'Readiness',
    'PermissionDenied', 'NotFound', 'Conflict', 'EpisodeLost', 'Gone', 'PolicyError',
    'InternalError', 'CertPinError', 'ActionSpaceUnknown', 'SeatLost', 'Interrupted',
    'PROTOCOLS',
    # The package's own: what the engine plays and counts, its settings' values and rules.
    'PlannedStep', 'EngineStats', 'EngineReport', 'JOIN_MODES', 'BLENDS',
    'FALLBACK_CONTROL_RATE_HZ', 'PREFIX_TOLERANCE', 'blend_weight', 'LatencyWindow', 'quantile',
    # Where the key, the URL and the model id come from; TLS and HTTP errors (CLI, doctor).
    'full_model_id', 'resolve_api_key', 'resolve_base_url', 'credentials_path',
    'read_credentials_file', 'write_credentials_file', 'tls_context', 'certificate_refusal',
    'error_for',
    # The direct protocol's parts: the transport, its wire rules and its errors' table.
    'DirectConnection', 'WorkerChannel', 'WorkerRoute', 'EpisodeBook', 'InterruptSignal',
    'error_from_body', 'is_transient', 'renew_after', 'busy_backoff', 'chunk_from_outputs',
    'pinned_context', 'fingerprint_of', 'remember_secret', 'scrub', 'pack_msgpack',
]
