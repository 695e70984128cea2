"""
A robot's session on the gateway's direct protocol spoken with plain httpx, for tests.

`Robot` is the harness's DirectSession on a gateway process with the tests' key; `error_of`
checks a code-based error answer against the code table.
"""

from fixtures_gateway import MAIN_KEY
import httpx
from sequence_ai_ros.contract.error_codes import CODES
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.direct_session import DirectSession

ERROR_KEYS = {'detail', 'code', 'retryable', 'retry_after_s', 'request_id', 'hint', 'details'}


class Robot(DirectSession):
    """One robot's session on the direct protocol of `gateway`, with the tests' key."""

    def __init__(self, gateway: GatewayProcess, model: str = 'pi05-droid',
                 key: str = MAIN_KEY, session: str | None = None) -> None:
        super().__init__(gateway.base_url, model, key, session)
        self.gateway = gateway


def error_of(response: httpx.Response, code: str, reason: str | None = None) -> dict:
    """Check a code-based error answer and return its body."""
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    assert body['code'] == code, body
    assert response.status_code == CODES[code].status
    assert body['retryable'] is CODES[code].retryable
    assert body['request_id'] == response.headers['X-Seq-Request-Id']
    if reason is not None:
        assert body['details'].get('reason') == reason, body
    return body
