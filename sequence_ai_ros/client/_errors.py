"""Typed errors: a controller reacts differently to each, so each is its own class."""

from typing import Any

from ._redaction import scrub


class SequencesError(Exception):
    """
    Base error: the server's message, status, raw body and, on the direct protocol, its code.

    `code`, `retryable`, `retry_after_s`, `request_id`, `hint` and `details` are the fields of
    the service's error body (None or empty when an answer had none). Every text is scrubbed of
    API keys and direct secrets when the error is made, so no str(), repr() or log shows one.
    """

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None,
                 code: str | None = None, retryable: bool | None = None,
                 retry_after_s: float | None = None, request_id: str | None = None,
                 hint: str | None = None, details: dict[str, Any] | None = None) -> None:
        message = scrub(message)
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = scrub(body) if body is not None else None
        self.code = code
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.request_id = request_id
        self.hint = scrub(hint) if hint is not None else None
        self.details: dict[str, Any] = dict(details or {})

    def __str__(self) -> str:
        out = f'{self.message} (hint: {self.hint})' if self.hint else self.message
        if self.request_id:
            out += f' [{self.reason or self.code}, request {self.request_id}]'
        return out

    def __repr__(self) -> str:
        return f'{type(self).__name__}({str(self)!r}, status={self.status})'

    def fields(self) -> dict[str, Any]:
        """Return the error body's fields as keywords, for an error that restates this one."""
        return {'status': self.status, 'body': self.body, 'code': self.code,
                'retryable': self.retryable, 'retry_after_s': self.retry_after_s,
                'request_id': self.request_id, 'hint': self.hint, 'details': dict(self.details)}

    @property
    def reason(self) -> str | None:
        """Return `details.reason`, the refinement of the code (draining, episode_lost...)."""
        reason = self.details.get('reason')
        return reason if isinstance(reason, str) and reason else None


class AuthError(SequencesError):
    """401: the key is missing, revoked or expired. Retrying will not help."""


class OutOfCredit(SequencesError):
    """402: the balance (or the deployment's budget) is exhausted. Stop and hold; top up."""


class InvalidRequest(SequencesError):
    """400/404/413/422: bad model, malformed observation or body too large. Deterministic."""


class PermissionDenied(InvalidRequest):
    """403: the key is valid but may not do this (a robot key bound to another deployment)."""


class NotFound(InvalidRequest):
    """404: no such deployment (or route: a gateway without the direct protocol)."""


class Conflict(InvalidRequest):
    """409: the request conflicts with the state; `reason` says which (frames_missing...)."""


class EpisodeLost(Conflict):
    """409 episode_lost: the worker no longer holds this episode (it restarted); hold the arm."""


class Gone(InvalidRequest):
    """410: it existed and does not any more."""


class Unavailable(SequencesError):
    """
    503/504/502/429, a timeout or no connection: worth asking again later.

    `warming` is a cold worker that will be ready; `queued` a place in line (queue_position).
    """

    def __init__(self, message: str, *, warming: bool = False, job_id: str | None = None,
                 **fields: Any) -> None:
        super().__init__(message, **fields)
        self.warming = warming
        self.job_id = job_id

    @property
    def queued(self) -> bool:
        """Return whether this answer puts the robot in line (details.queue_position)."""
        return self.reason == 'queued' or 'queue_position' in self.details

    @property
    def queue_position(self) -> int | None:
        """Return the robot's place in line, when it has one."""
        position = self.details.get('queue_position')
        return position if isinstance(position, int) else None


class PolicyError(SequencesError):
    """500 policy_error: the deployed policy's own code failed; `remote_traceback` says where."""

    @property
    def remote_traceback(self) -> str | None:
        """Return the policy's traceback as the worker reported it, if it did."""
        exception = self.details.get('exception')
        trace = exception.get('traceback') if isinstance(exception, dict) else None
        return scrub(trace) if isinstance(trace, str) else None


class InternalError(SequencesError):
    """500/424: the service failed on its side."""


class CertificateError(SequencesError):
    """The gateway's TLS certificate failed verification. Deterministic: fix it or pass verify=."""


class CertPinError(CertificateError):
    """The worker's certificate is not the pinned one. Never retried, never bypassed."""


class MalformedResponse(SequencesError):
    """A 2xx answer that is not a usable chunk (not JSON, missing fields, NaN, wrong shape)."""


class ActionSpaceUnknown(SequencesError):
    """The answer does not say its action space and connect(action_space=) did not either."""


class SeatLost(SequencesError):
    """
    The gateway dropped this Policy's seat (keepalive answered `held: false`) mid-episode.

    Raised once, by the request after the loss; that episode is gone with the seat. A seat lost
    between episodes is not raised: the next request connects again.
    """


class Interrupted(SequencesError):
    """interrupt() was called: the request or wait in flight was cut short, nothing was played."""


class ChunkExhausted(SequencesError):
    """next_action() found an empty buffer and was given no observation to refill from."""


class PolicyBusy(SequencesError):
    """A second thread tried to drive a Policy that another thread is driving."""


class PolicyClosed(SequencesError):
    """The Policy was closed; open a new one with connect()."""


def is_transient(error: BaseException) -> bool:
    """
    Say whether asking again could succeed: a lost connection, a timeout, a 5xx, a bad answer.

    A warming or queued worker is not transient here: it takes minutes, and only the wait
    before the first action is the client's to make. Auth, credit and invalid requests are
    deterministic; so are a wrong certificate, a lost seat or episode, and an interrupt.
    """
    if isinstance(error, Unavailable):
        return not (error.warming or error.queued)
    if isinstance(error, MalformedResponse):
        return True  # the bad chunk is dropped unplayed; a fresh one may be fine
    return isinstance(error, SequencesError) and \
        type(error) in (SequencesError, InternalError) and (error.status or 0) >= 500 and \
        error.code != 'dependency_missing'
