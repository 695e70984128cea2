"""
A robot's session on the gateway's direct protocol spoken with plain httpx, for tests.

`Robot` connects at the control plane and talks to the worker the connect answer names; its
`observe` numbers observations per episode as the sequence-ai client does. `error_of` checks a
code-based error answer against the code table.
"""

from fixtures_gateway import MAIN_KEY
import httpx
from sequence_ai_ros.contract.error_codes import CODES
from sequence_ai_ros.gateway.direct.wire import MSGPACK_TYPE, pack
from sequence_ai_ros.gateway.process import GatewayProcess

ERROR_KEYS = {'detail', 'code', 'retryable', 'retry_after_s', 'request_id', 'hint', 'details'}


class Robot:
    """One robot's session on the direct protocol, spoken with httpx."""

    def __init__(self, gateway: GatewayProcess, model: str = 'pi05-droid',
                 key: str = MAIN_KEY, session: str | None = None) -> None:
        self.gateway = gateway
        self.model = model
        self.key = key
        self.session = session or f'session-{id(self):x}'
        self.control = httpx.Client(base_url=gateway.base_url, timeout=10.0,
                                    headers={'Authorization': f'Bearer {key}'})
        self.answer: dict = {}
        self.worker: httpx.Client | None = None
        self.numbers: dict[str, int] = {}

    def connect(self) -> httpx.Response:
        response = self.control.post('/v1/act/connect',
                                     json={'model': self.model, 'session': self.session})
        if response.status_code == 200:
            self.answer = response.json()
            # The certificate is self-signed: test_connect_names_the_certificate_it_serves
            # checks the pin; here the worker is reached without a CA.
            self.worker = httpx.Client(
                base_url=self.answer['worker_url'], verify=False, timeout=10.0,
                headers={'Authorization': f'Bearer {self.answer["direct_secret"]}'})
        return response

    def observe(self, episode: str, inputs: dict, number: int | None = None) -> httpx.Response:
        n = self.numbers.get(episode, 0) if number is None else number
        self.numbers[episode] = max(self.numbers.get(episode, 0), n + 1)
        body = {'episode_id': episode, 'frames': [{'seq': n, 'inputs': inputs}], 'skipped': []}
        assert self.worker is not None
        return self.worker.post('/observe', content=pack(body),
                                headers={'Content-Type': MSGPACK_TYPE})

    def act(self, episode: str, seq: int | None = None, **extra: object) -> httpx.Response:
        assert self.worker is not None
        seq = self.numbers.get(episode, 0) if seq is None else seq
        return self.worker.post('/act', json={'model': self.model, 'episode_id': episode,
                                              'call': 'act', 'seq': seq, **extra})

    def keepalive(self) -> httpx.Response:
        return self.control.post('/v1/act/keepalive',
                                 json={'model': self.model, 'session': self.session})

    def release(self) -> httpx.Response:
        return self.control.post('/v1/act/release',
                                 json={'model': self.model, 'session': self.session})

    def close(self) -> None:
        self.control.close()
        if self.worker is not None:
            self.worker.close()


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
