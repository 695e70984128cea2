"""The openpi test server (openpi_server.py) as a real process on a loopback port."""

from pathlib import Path
import subprocess
import sys
import tempfile
import time

import httpx
from sequence_ai_ros.gateway.process import free_port

SERVER = Path(__file__).with_name('openpi_server.py')


class OpenpiServerProcess:
    """Start on `start()`, stop on `stop()`; the same port across restarts."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()

    @property
    def url(self) -> str:
        return f'ws://127.0.0.1:{self.port}'

    def start(self, timeout_s: float = 20.0) -> 'OpenpiServerProcess':
        self.proc = subprocess.Popen([sys.executable, str(SERVER), '--port', str(self.port)],
                                     stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                if httpx.get(f'http://127.0.0.1:{self.port}/healthz', timeout=1).text == 'OK\n':
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        raise AssertionError(f'the openpi server did not come up:\n{self.log()}')

    def kill(self) -> None:
        """SIGKILL: the socket drops with no close frame, as when a GPU box dies."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors='replace')

    def __enter__(self) -> 'OpenpiServerProcess':
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()
        self._log.close()
