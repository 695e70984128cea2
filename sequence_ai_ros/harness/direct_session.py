"""
A robot's session on the local gateway's direct protocol, spoken with plain httpx.

For tests and benchmarks that look below the client: it connects at the control plane, talks
to the worker the connect answer names, and numbers observations per episode as the
sequence-ai client does. The worker's certificate is self-signed; the pin is the tests' to
check (test_gateway_direct), so the worker is reached here without a CA.
"""

import httpx
from sequence_ai_ros.gateway.direct.wire import MSGPACK_TYPE, pack


class DirectSession:
    """One session (a seat) on one deployment: a control-plane and a worker connection."""

    def __init__(self, base_url: str, model: str, key: str, session: str | None = None,
                 timeout_s: float = 10.0) -> None:
        self.model = model
        self.session = session or f'session-{id(self):x}'
        self.timeout_s = timeout_s
        self.control = httpx.Client(base_url=base_url, timeout=timeout_s,
                                    headers={'Authorization': f'Bearer {key}'})
        self.answer: dict = {}
        self.worker: httpx.Client | None = None
        self.numbers: dict[str, int] = {}

    def connect(self, ping: bool = False) -> httpx.Response:
        """POST /v1/act/connect; on 200 open the worker's connection (and `ping` it)."""
        response = self.control.post('/v1/act/connect',
                                     json={'model': self.model, 'session': self.session})
        if response.status_code == 200:
            self.answer = response.json()
            self.worker = httpx.Client(
                base_url=self.answer['worker_url'], verify=False, timeout=self.timeout_s,
                headers={'Authorization': f'Bearer {self.answer["direct_secret"]}'})
            if ping:
                self.worker.get('/ping').raise_for_status()
        return response

    def observe(self, episode: str, inputs: dict, number: int | None = None) -> httpx.Response:
        """Post one observation, numbered next in `episode` unless `number` is given."""
        n = self.numbers.get(episode, 0) if number is None else number
        self.numbers[episode] = max(self.numbers.get(episode, 0), n + 1)
        body = {'episode_id': episode, 'frames': [{'seq': n, 'inputs': inputs}], 'skipped': []}
        assert self.worker is not None, 'connect first'
        return self.worker.post('/observe', content=pack(body),
                                headers={'Content-Type': MSGPACK_TYPE})

    def act(self, episode: str, seq: int | None = None, **extra: object) -> httpx.Response:
        """Ask for an action on every observation of `episode` so far (or up to `seq`)."""
        assert self.worker is not None, 'connect first'
        seq = self.numbers.get(episode, 0) if seq is None else seq
        return self.worker.post('/act', json={'model': self.model, 'episode_id': episode,
                                              'call': 'act', 'seq': seq, **extra})

    def keepalive(self) -> httpx.Response:
        """POST /v1/act/keepalive for this session."""
        return self.control.post('/v1/act/keepalive',
                                 json={'model': self.model, 'session': self.session})

    def release(self) -> httpx.Response:
        """POST /v1/act/release: give the seat back."""
        return self.control.post('/v1/act/release',
                                 json={'model': self.model, 'session': self.session})

    def close(self) -> None:
        """Close both connections (the seat is kept: release() gives it back)."""
        self.control.close()
        if self.worker is not None:
            self.worker.close()
