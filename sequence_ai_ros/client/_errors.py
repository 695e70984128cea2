"""Typed errors: a controller reacts differently to each, so each is its own class."""


class SequencesError(Exception):
    """Base error. Keeps the HTTP status and the server's raw body (which never holds the key)."""

    def __init__(self, message: str, *, status: int | None = None,
                 body: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body


class AuthError(SequencesError):
    """401: the key is missing, revoked or expired. Retrying will not help."""


class OutOfCredit(SequencesError):
    """402: the balance is exhausted. Stop and hold; top up."""


class InvalidRequest(SequencesError):
    """400/404/413/422: bad model, malformed observation or body too large. Deterministic."""


class Unavailable(SequencesError):
    """503/504, a timeout or no connection. `warming` means a cold worker that will be ready."""

    def __init__(self, message: str, *, status: int | None = None,
                 body: str | None = None, warming: bool = False,
                 retry_after_s: float | None = None, job_id: str | None = None) -> None:
        super().__init__(message, status=status, body=body)
        self.warming = warming
        self.retry_after_s = retry_after_s
        self.job_id = job_id


class CertificateError(SequencesError):
    """The gateway's TLS certificate failed verification. Deterministic: fix it or pass verify=."""


class MalformedResponse(SequencesError):
    """A 2xx answer that is not a usable chunk (not JSON, missing fields, NaN, wrong shape)."""


class ChunkExhausted(SequencesError):
    """next_action() found an empty buffer and was given no observation to refill from."""


class PolicyBusy(SequencesError):
    """A second thread tried to drive a Policy that another thread is driving."""


class PolicyClosed(SequencesError):
    """The Policy was closed; open a new one with connect()."""


def is_transient(error: BaseException) -> bool:
    """
    Say whether asking again could succeed: a lost connection, a timeout, a 5xx, a bad answer.

    A warming worker is not transient here: it takes minutes, and only the wait before the
    first action is the client's to make. Auth, credit and invalid requests are deterministic.
    """
    if isinstance(error, Unavailable):
        return not error.warming
    if isinstance(error, MalformedResponse):
        return True  # the bad chunk is dropped unplayed; a fresh one may be fine
    return type(error) is SequencesError and (error.status or 0) >= 500
