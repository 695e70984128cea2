"""
What the node publishes on /diagnostics: four statuses an operator reads in rqt_robot_monitor.

Each status's level says whether to act and its message says what to do; the key/values hold
the numbers. The API key is never a field of :class:`Health`; as a second line of defence every
string is passed through a redactor that masks anything shaped like a key before it is sent.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from sequence_ai_ros.client import (
    AuthError,
    CertificateError,
    InvalidRequest,
    MalformedResponse,
    OutOfCredit,
    Unavailable,
)
from sequence_ai_ros.contract.key_masking import redact

from .safety import input_age_problem

__all__ = [
    'EPISODE_OUTCOMES',
    'EPISODE_STATES',
    'ERROR_KINDS',
    'NODE_STATES',
    'Health',
    'build_statuses',
    'diagnostic_array',
    'error_kind',
]

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR

NODE_STATES = ('unconfigured', 'inactive', 'active')
EPISODE_STATES = ('idle', 'starting', 'warming', 'running', 'underrun', 'holding', 'ended')
# Why an ended episode ended; 'safety' and 'error' are failures an operator must look at.
EPISODE_OUTCOMES = ('', 'completed', 'stopped', 'safety', 'error')
ERROR_KINDS = ('', 'auth', 'credit', 'invalid', 'certificate', 'unavailable', 'warming',
               'malformed', 'other')


@dataclass
class Health:
    """
    A snapshot of what the node knows, filled by the node before each diagnostics tick.

    Never put the API key (or a header, or a URL with credentials) in any field; ``base_url`` is
    shown without user info or query. ``last_error`` / ``last_error_kind`` describe the most
    recent failed request (kind from :data:`ERROR_KINDS`, see :func:`error_kind`) and are
    cleared ('') when a request succeeds. ``input_ages`` maps topic -> seconds since its last
    message (None = never received); ``input_timeouts`` maps topic -> the age that holds the arm.
    ``input_problems`` maps topic -> why its latest message is unusable (NaN, a missing joint,
    an image encoding); ``input_dropped`` maps topic -> messages dropped for a stamp older than
    the last accepted one. ``retries`` counts the transient failures retried this episode,
    ``retries_in_a_row`` those since the last chunk (> 0: retrying now, up to ``retry_limit``);
    ``last_transient_error`` / ``_kind`` describe the latest of them and stay after a success.
    """

    node_state: str = 'unconfigured'
    episode_state: str = 'idle'
    episode_reason: str = ''
    episode_outcome: str = ''
    model: str = ''
    base_url: str = ''
    # 'direct' or 'v1' once connected; the direct worker's readiness ('ready', 'waiting: ...')
    protocol: str = ''
    readiness: str = ''
    seat_lost: bool = False
    gateway_reachable: bool | None = None
    warming_eta_s: float | None = None
    last_error: str = ''
    last_error_kind: str = ''
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    server_inference_p50_ms: float | None = None
    requests: int = 0
    failed_requests: int = 0
    retries: int = 0
    retries_in_a_row: int = 0
    retry_limit: int = 0
    last_transient_error: str = ''
    last_transient_error_kind: str = ''
    buffered_s: float = 0.0
    underruns: int = 0
    underrun_s: float = 0.0
    longest_underrun_s: float = 0.0
    max_seam_jump: float | None = None
    action_space: str = ''
    join_mode: str = ''
    actions: int = 0
    chunks: int = 0
    max_actions: int = 0
    input_ages: dict[str, float | None] = field(default_factory=dict)
    input_timeouts: dict[str, float] = field(default_factory=dict)
    input_problems: dict[str, str] = field(default_factory=dict)
    input_dropped: dict[str, int] = field(default_factory=dict)
    gate_open: bool | None = None
    holds: int = 0
    last_hold_reason: str = ''
    hold_service: str = ''
    hold_service_calls: int = 0
    hold_service_failures: int = 0
    hold_service_problem: str = ''
    internal_faults: int = 0
    last_internal_fault: str = ''
    output_mode: str = ''
    command_topic: str = ''
    planned_ahead_s: float = 0.0
    gripper_interface: str = ''
    gripper_goals: int = 0
    gripper_failures: int = 0
    gripper_problem: str = ''
    # Where the episode is recorded (or why not), and messages dropped because the disk could
    # not keep up: recording never delays a command.
    recording: str = ''
    recording_dropped: int = 0


def error_kind(error: BaseException) -> str:
    """Return the :data:`ERROR_KINDS` entry for an exception raised by the client."""
    if isinstance(error, AuthError):
        return 'auth'
    if isinstance(error, OutOfCredit):
        return 'credit'
    if isinstance(error, InvalidRequest):
        return 'invalid'
    if isinstance(error, CertificateError):
        return 'certificate'
    if isinstance(error, Unavailable):
        return 'warming' if error.warming else 'unavailable'
    if isinstance(error, MalformedResponse):
        return 'malformed'
    return 'other'


def _url(url: str) -> str:
    if not url:
        return 'default'
    try:
        parts = urlsplit(url)
        host = parts.hostname or ''
        if parts.port is not None:
            host = f'{host}:{parts.port}'
    except ValueError:  # e.g. a non-numeric port; diagnostics must still publish
        return 'unparsable URL'
    return urlunsplit((parts.scheme, host, parts.path, '', ''))


def _num(value: float | None, digits: int = 3) -> str:
    return 'n/a' if value is None else f'{value:.{digits}f}'


def _flag(value: bool | None) -> str:
    return 'n/a' if value is None else ('yes' if value else 'no')


def _status(name: str, hardware_id: str, level: bytes, message: str,
            values: Sequence[tuple[str, str]]) -> DiagnosticStatus:
    return DiagnosticStatus(
        level=level, name=name, hardware_id=hardware_id, message=redact(message),
        values=[KeyValue(key=k, value=redact(str(v))) for k, v in values])


def _input(h: Health, topic: str) -> str:
    age = h.input_ages.get(topic)
    timeout = h.input_timeouts.get(topic)
    text = 'never received' if age is None else f'{age:.3f} s old'
    text = text if timeout is None else f'{text} (timeout {timeout:.3f} s)'
    dropped = h.input_dropped.get(topic)
    text = f'{text}; {dropped} dropped, stamped older than the last' if dropped else text
    problem = h.input_problems.get(topic)
    return f'{text}; unusable: {problem}' if problem else text


def _gateway(h: Health) -> tuple[bytes, str]:
    error = h.last_error or 'no detail'
    eta = (f'ready in ~{h.warming_eta_s:.0f} s' if h.warming_eta_s is not None
           else 'no ETA given')
    if h.last_error_kind == 'auth':
        return ERROR, f'gateway refused the API key: check the API key ({error})'
    if h.last_error_kind == 'credit':
        return ERROR, f'out of credit: top up credit ({error})'
    if h.last_error_kind == 'invalid':
        return ERROR, f'gateway rejected the request: check model and cameras ({error})'
    if h.last_error_kind == 'certificate':
        return ERROR, f'TLS certificate not trusted: set ca_file to the CA that signs it ({error})'
    if h.last_error_kind == 'warming' or h.episode_state == 'warming':
        return WARN, f'model {h.model or "?"} is warming up: {eta}'
    if h.seat_lost:
        return ERROR, ('the gateway no longer holds the seat of this robot: the arm holds, and '
                       'the next request connects again')
    if h.readiness.startswith('waiting'):
        return WARN, f'model {h.model or "?"} is not ready: {h.readiness}'
    if h.last_error_kind and h.episode_state == 'ended':
        # The stream raises a transient failure only once the retries are spent.
        return ERROR, (f'request failed ({h.last_error_kind}) after {h.retries_in_a_row} '
                       f'retries in a row; the episode ended holding: {error}')
    if h.last_error_kind:
        return WARN, f'request failed ({h.last_error_kind}), retrying: {error}'
    if h.retries_in_a_row and h.episode_state != 'ended':
        return WARN, (f'request failed ({h.last_transient_error_kind or "?"}), retry '
                      f'{h.retries_in_a_row} of {h.retry_limit} while the plan plays: '
                      f'{h.last_transient_error or "no detail"}')
    if h.gateway_reachable is False:
        return WARN, 'gateway unreachable'
    if h.latency_p50_s is not None:
        return OK, (f'answering: latency p50 {h.latency_p50_s:.3f} s, '
                    f'p95 {_num(h.latency_p95_s)} s')
    if h.node_state == 'unconfigured':
        return OK, 'not configured'
    return OK, 'no request yet'


def _buffer(h: Health) -> tuple[bytes, str]:
    now = 'in an underrun now; ' if h.episode_state == 'underrun' else ''
    if h.underruns or now:
        return WARN, (f'{now}{h.underruns} underruns, {h.underrun_s:.2f} s without actions '
                      f'(longest {h.longest_underrun_s:.2f} s): latency exceeds the buffer')
    return OK, f'{h.buffered_s:.2f} s buffered, no underruns'


def _inputs(h: Health) -> tuple[bytes, str]:
    if h.node_state != 'active':
        return OK, f'{h.node_state}: inputs not checked'
    problem = '; '.join(p for p in h.input_problems.values() if p) or \
        input_age_problem(h.input_ages, h.input_timeouts)
    if problem:
        return ERROR, f'holding: {problem}'
    if h.gate_open is False:
        return WARN, 'safety gate closed: holding'
    return OK, 'all inputs fresh'


def _episode(h: Health) -> tuple[bytes, str]:
    state, reason = h.episode_state, h.episode_reason
    progress = f'{h.actions}/{h.max_actions} actions'
    if h.hold_service_problem:  # the second line of holding is broken until a call succeeds
        return ERROR, h.hold_service_problem
    if h.gripper_problem:
        return ERROR, h.gripper_problem
    if h.last_internal_fault and state in ('idle', 'ended'):
        return ERROR, (f'internal error ({h.internal_faults} so far), the node held and stays '
                       f'up: {h.last_internal_fault}')
    if state == 'ended':
        if h.episode_outcome == 'safety':
            return ERROR, f'ended by a safety check: {reason or "no reason given"}'
        if h.episode_outcome == 'error':
            return ERROR, f'ended by an error: {reason or "no reason given"}'
        return OK, f'{h.episode_outcome or "ended"}: {reason or progress}'
    if state == 'holding':
        return WARN, f'holding: {h.last_hold_reason or reason or "no reason given"}'
    if state == 'underrun':
        return WARN, f'underrun: waiting for the next chunk ({progress})'
    if state == 'running':
        return OK, f'running: {progress}'
    if state == 'starting':
        return OK, 'starting: waiting for the first chunk'
    if state == 'warming':
        return OK, 'waiting for the model to warm up'
    if state == 'idle':
        return OK, 'idle: no episode' + ('' if h.node_state == 'active' else f' ({h.node_state})')
    return WARN, f'unknown episode state {state!r}'


def build_statuses(health: Health, node_name: str, hardware_id: str) -> list[DiagnosticStatus]:
    """Build the gateway, buffer, inputs and episode statuses for one diagnostics tick."""
    h = health
    topics = [*h.input_timeouts, *(t for t in h.input_ages if t not in h.input_timeouts)]
    parts = {
        'gateway': (_gateway(h), [
            ('model', h.model or 'n/a'), ('base_url', _url(h.base_url)),
            ('protocol', h.protocol or 'n/a'), ('readiness', h.readiness or 'n/a'),
            ('seat', ('lost' if h.seat_lost else 'held') if h.protocol == 'direct' else 'n/a'),
            ('reachable', _flag(h.gateway_reachable)),
            ('warming ETA (s)', _num(h.warming_eta_s, 0)),
            ('last error', h.last_error or 'none'),
            ('last error kind', h.last_error_kind or 'none'),
            ('latency p50 (s)', _num(h.latency_p50_s)), ('latency p95 (s)', _num(h.latency_p95_s)),
            ('server inference p50 (ms)', _num(h.server_inference_p50_ms, 1)),
            ('requests', str(h.requests)), ('failed requests', str(h.failed_requests)),
            ('retries', str(h.retries)),
            ('retries in a row', f'{h.retries_in_a_row} of {h.retry_limit}'),
            ('last transient error', h.last_transient_error or 'none'),
            ('last transient error kind', h.last_transient_error_kind or 'none')]),
        'buffer': (_buffer(h), [
            ('buffered (s)', _num(h.buffered_s)), ('underruns', str(h.underruns)),
            ('underrun time (s)', _num(h.underrun_s)),
            ('longest underrun (s)', _num(h.longest_underrun_s)),
            ('max seam jump', _num(h.max_seam_jump, 4)),
            ('action space', h.action_space or 'n/a'), ('join mode', h.join_mode or 'n/a'),
            ('chunks', str(h.chunks)), ('output mode', h.output_mode or 'n/a'),
            ('command topic', h.command_topic or 'n/a'),
            # How far the controller moves the arm if no further message arrives.
            ('sent ahead (s)', _num(h.planned_ahead_s))]),
        'inputs': (_inputs(h), [*((t, _input(h, t)) for t in topics),
                                ('safety gate open', _flag(h.gate_open))]),
        'episode': (_episode(h), [
            ('node state', h.node_state), ('episode state', h.episode_state),
            ('outcome', h.episode_outcome or 'n/a'), ('reason', h.episode_reason or 'n/a'),
            ('actions', str(h.actions)), ('max actions', str(h.max_actions)),
            ('chunks', str(h.chunks)), ('holds', str(h.holds)),
            ('last hold reason', h.last_hold_reason or 'n/a'),
            ('hold service', h.hold_service or 'none'),
            ('hold service calls', str(h.hold_service_calls)),
            ('hold service failures', str(h.hold_service_failures)),
            ('gripper interface', h.gripper_interface or 'n/a'),
            ('gripper goals', str(h.gripper_goals)),
            ('gripper failures', str(h.gripper_failures)),
            ('internal errors', str(h.internal_faults)),
            ('last internal error', h.last_internal_fault or 'none'),
            ('recording', h.recording or 'n/a'),
            ('recording dropped', str(h.recording_dropped))]),
    }
    return [_status(f'{node_name}: {part}', hardware_id, level, message, values)
            for part, ((level, message), values) in parts.items()]


def diagnostic_array(statuses: Sequence[DiagnosticStatus], stamp: Time) -> DiagnosticArray:
    """Build a DiagnosticArray of ``statuses`` stamped ``stamp`` (the node clock's now)."""
    array = DiagnosticArray(status=list(statuses))
    array.header.stamp = stamp
    return array
