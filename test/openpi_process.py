"""The openpi test server (openpi_server.py) as a real process on a loopback port."""

from pathlib import Path
import signal
import tempfile
import time

import httpx
from sequence_ai_ros.gateway.process import free_port
from sequence_ai_ros.harness.child_processes import child_env, ChildProcess

TEST_DIR = Path(__file__).resolve().parent


class OpenpiServerProcess:
    """Start on `start()`, stop on `stop()`; the same port across restarts."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.child: ChildProcess | None = None
        self._dir = tempfile.TemporaryDirectory(prefix='openpi_server_')

    @property
    def url(self) -> str:
        return f'ws://127.0.0.1:{self.port}'

    @property
    def proc(self):
        """Return the running (or last) server's Popen, None before the first start."""
        return None if self.child is None else self.child.proc

    def start(self, timeout_s: float = 20.0) -> 'OpenpiServerProcess':
        self.child = ChildProcess('openpi_server', 'openpi_server', ['--port', str(self.port)],
                                  child_env(TEST_DIR), Path(self._dir.name) / 'server.log')
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.child.running(), self.log()
            try:
                if httpx.get(f'http://127.0.0.1:{self.port}/healthz', timeout=1).text == 'OK\n':
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        raise AssertionError(f'the openpi server did not come up:\n{self.log()}')

    def kill(self) -> None:
        """SIGKILL: the socket drops with no close frame, as when a GPU box dies."""
        if self.child is not None:
            self.child.stop(timeout_s=10.0, sig=signal.SIGKILL)

    def log(self) -> str:
        """Return what the last server started wrote."""
        return '' if self.child is None else self.child.log_path.read_text(errors='replace')

    def __enter__(self) -> 'OpenpiServerProcess':
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()
        self._dir.cleanup()
