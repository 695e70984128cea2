"""
Running the gateway as a real subprocess on a free loopback port (tests, benchmarks, demo).

Example: `with GatewayProcess(['--time-scale', '0.02', '--start-warm'], keys={'seq_k1': 100})
as gateway:` then talk to `gateway.base_url` and read `gateway.stats()['connections']`.
"""

from collections.abc import Mapping, Sequence
import os
import socket
import subprocess
import sys
import tempfile
import time
from types import TracebackType
from typing import Any
import weakref

import httpx
from sequence_ai_ros.harness.child_processes import child_env

from .config import KEYS_ENV

# The interpreter that runs the gateway, when not this one: a client test on an interpreter
# the gateway's own requirements do not install on (Ubuntu 22.04's Python 3.10).
PYTHON_ENV = 'SEQUENCE_AI_ROS_GATEWAY_PYTHON'


def free_port(host: str = '127.0.0.1') -> int:
    """Find a port that was free a moment ago (the usual bind-to-0 trick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class GatewayProcess:
    """
    A gateway subprocess: started on enter (or `start()`), stopped on exit (or `stop()`).

    `args` are extra `gateway` flags; `keys` (key -> credit) are passed in the environment,
    and without them the variable is removed, so auth is disabled unless `args` or `env` say
    otherwise. `import_paths` go first on the child's import path (a test's `--policy`
    plug-in). `certfile`/`keyfile` serve HTTPS. Output goes to a temporary file (`.log()`),
    never to a pipe that could fill up and stall the server.
    """

    def __init__(self, args: Sequence[str] = (), *, keys: Mapping[str, int] | None = None,
                 env: Mapping[str, str] | None = None,
                 import_paths: Sequence[str | os.PathLike[str]] = (), host: str = '127.0.0.1',
                 port: int | None = None, certfile: str | None = None,
                 keyfile: str | None = None, startup_timeout_s: float = 20.0,
                 stop_timeout_s: float = 5.0) -> None:
        self.args = list(args)
        self.keys = dict(keys) if keys else None
        self.extra_env = dict(env or {})
        self.import_paths = list(import_paths)
        self.host = host
        self.port = port or free_port(host)
        self._pick_port = port is None  # until the first successful start
        self.certfile, self.keyfile = certfile, keyfile
        self.startup_timeout_s = startup_timeout_s
        # `--ray` takes longer both ways: Ray starts, and stops its replicas, within it.
        self.stop_timeout_s = stop_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()
        # The log is read after stop(), so it lives as long as this object, and closes with it.
        weakref.finalize(self, self._log.close)

    @property
    def base_url(self) -> str:
        """`http(s)://host:port`, what a client takes as base_url."""
        scheme = 'https' if self.certfile else 'http'
        return f'{scheme}://{self.host}:{self.port}'

    @property
    def pid(self) -> int | None:
        """Return the server's process id while it runs."""
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        """Return the command line that starts the server."""
        cmd = [os.environ.get(PYTHON_ENV) or sys.executable, '-m', 'sequence_ai_ros.gateway',
               '--host', self.host, '--port', str(self.port), *self.args]
        if self.certfile:
            cmd += ['--certfile', self.certfile, '--keyfile', str(self.keyfile)]
        return cmd

    def _environment(self) -> dict[str, str]:
        env = child_env(*self.import_paths)
        env.pop(KEYS_ENV, None)
        if self.keys:
            env[KEYS_ENV] = ','.join(f'{k}={v}' for k, v in self.keys.items())
        env.update(self.extra_env)
        return env

    def start(self) -> 'GatewayProcess':
        """Start the server and wait until it answers; RuntimeError (with its log) if not."""
        if self._proc is not None and self._proc.poll() is None:
            return self
        for _ in range(3):
            try:
                self._start_once()
                self._pick_port = False
                return self
            except RuntimeError:
                # Another process may have taken the free port between the probe and the bind.
                if not (self._pick_port and 'address already in use' in self.log().lower()):
                    raise
                self.port = free_port(self.host)
        raise RuntimeError(f'gateway could not bind a free port:\n{self.log()}')

    def _start_once(self) -> None:
        self._log.seek(0)
        self._log.truncate()
        self._proc = subprocess.Popen(self.command(), env=self._environment(),
                                      stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f'gateway exited with {self._proc.returncode} while starting:'
                                   f'\n{self.log()}')
            try:
                # Stats carry the server's pid (on Ray, the launcher's): proof that the answer
                # is ours, not a squatter's.
                with httpx.Client(verify=False, timeout=1.0) as client:
                    answer = client.get(self.base_url + '/v1/_local/stats')
                    body = answer.json() if answer.status_code == 200 else {}
                    if body.get('launcher_pid', body.get('pid')) == self._proc.pid:
                        return
            except (httpx.HTTPError, ValueError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f'gateway did not answer within '
                                   f'{self.startup_timeout_s} s:\n{self.log()}')
            time.sleep(0.05)

    def stop(self, timeout_s: float | None = None) -> int | None:
        """Terminate the server (then kill it if it lingers); returns its exit code."""
        timeout_s = self.stop_timeout_s if timeout_s is None else timeout_s
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def restart(self) -> 'GatewayProcess':
        """Stop and start again on the same port (state such as credit and warmth resets)."""
        self.stop()
        return self.start()

    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def log(self) -> str:
        """Everything the server has written to stdout and stderr so far."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode('utf-8', 'replace')

    def stats(self) -> dict[str, Any]:
        """
        Fetch the local-only counters from GET /v1/_local/stats.

        Not part of the hosted contract.
        """
        with httpx.Client(verify=False, timeout=5.0) as client:
            response = client.get(self.base_url + '/v1/_local/stats')
            response.raise_for_status()
            stats: dict[str, Any] = response.json()
            return stats

    def close(self) -> None:
        """Stop the server and drop its log."""
        self.stop()
        self._log.close()

    def __enter__(self) -> 'GatewayProcess':
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
