"""
FaultProxy in a process of its own: `sequence-ai-ros proxy` run as a child.

In-process, the proxy relays in Python under the same GIL as the client being measured, and
that client pays for it; in a process of its own it costs the client only the link it
emulates. The child's first line says where it listens (once it does), and its last line,
printed as it exits on SIGTERM, what it relayed (see `summary_line`).
"""

import re
import subprocess
import sys
import tempfile
from types import TracebackType
from typing import IO

from sequence_ai_ros.harness.child_processes import child_env

from .state import FAULTS, ProxyStats

_READY = re.compile(r'proxy http://(\S+) -> ')
_SUMMARY = re.compile(r'relayed (\d+) connections, (\d+) plain-HTTP requests, (\d+) B up, '
                      r'(\d+) B down; (\d+) deliveries, ([\d.]+) ms late on average')


def summary_line(stats: ProxyStats) -> str:
    """Format what a proxy relayed, as `sequence-ai-ros proxy` prints it when it stops."""
    late_ms = 1000 * stats.late_s / max(1, stats.deliveries)
    return (f'relayed {stats.accepted} connections, {stats.requests} plain-HTTP requests, '
            f'{stats.bytes_up} B up, {stats.bytes_down} B down; {stats.deliveries} '
            f'deliveries, {late_ms:.3f} ms late on average')


def parse_summary(text: str) -> ProxyStats | None:
    """Read `summary_line`'s counters back from a proxy's output; None if it printed none."""
    found = _SUMMARY.search(text)
    if found is None:
        return None
    accepted, requests, bytes_up, bytes_down, deliveries = (int(v) for v in found.groups()[:5])
    # The command line arms no faults; its internal errors, if any, go to its stderr.
    return ProxyStats(accepted=accepted, open_now=0, requests=requests, bytes_up=bytes_up,
                      bytes_down=bytes_down, faults=dict.fromkeys(FAULTS, 0),
                      deliveries=deliveries,
                      late_s=float(found[6]) * deliveries / 1000)


class ProxyProcess:
    """
    A `sequence-ai-ros proxy` child between two loopback ports, with a fixed link.

    `start()` returns once it listens (RuntimeError with its stderr if it cannot); `url()` is
    then where to point a client. `close()` stops it and returns its counters, which a child
    process can only give once it is done; `stderr` then holds what it wrote there.
    """

    def __init__(self, upstream_host: str, upstream_port: int, *, latency_s: float = 0.0,
                 jitter_s: float = 0.0, bandwidth_bytes_per_s: float | None = None,
                 listen_host: str = '127.0.0.1', listen_port: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.listen = (listen_host, listen_port)
        self.latency_s = latency_s
        self.jitter_s = jitter_s
        self.bandwidth_bytes_per_s = bandwidth_bytes_per_s
        self.stats: ProxyStats | None = None  # once closed
        self.stderr = ''  # once closed
        self._address: str | None = None  # host:port it listens on
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None

    def command(self) -> list[str]:
        """Return the command line that starts the proxy."""
        host, port = self.upstream
        cmd = [sys.executable, '-m', 'sequence_ai_ros.cli', 'proxy',
               '--upstream', f'[{host}]:{port}' if ':' in host else f'{host}:{port}',
               '--host', self.listen[0], '--port', str(self.listen[1]),
               '--latency-ms', repr(self.latency_s * 1000),
               '--jitter-ms', repr(self.jitter_s * 1000)]
        if self.bandwidth_bytes_per_s is not None:
            cmd += ['--bandwidth-kbps', repr(self.bandwidth_bytes_per_s * 8 / 1000)]
        return cmd

    def start(self) -> 'ProxyProcess':
        """Start the child and wait for its line saying it listens."""
        if self._proc is not None:
            return self
        env = child_env()
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe that could fill and stall
        self._proc = subprocess.Popen(self.command(), env=env, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True)
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline()  # '' if it exited instead
        ready = _READY.match(first)
        if ready is None:
            self.close()
            raise RuntimeError(f'the proxy process did not start: {first}{self.stderr}')
        self._address = ready[1]
        return self

    def url(self, scheme: str = 'http') -> str:
        """Return `scheme://host:port` of the listening side, for a client's base_url."""
        if self._address is None:
            raise RuntimeError('the proxy process is not listening: start() it first')
        return f'{scheme}://{self._address}'

    def close(self, timeout_s: float = 10.0) -> ProxyStats | None:
        """Stop the child (SIGTERM, then SIGKILL); return its counters, None if it gave none."""
        proc, self._proc, self._address = self._proc, None, None
        if proc is None:
            return self.stats
        if proc.poll() is None:
            proc.terminate()  # the proxy closes its connections and prints its counters
        try:
            rest, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
        if self._stderr is not None:
            self._stderr.seek(0)
            self.stderr = self._stderr.read().decode('utf-8', 'replace')
            self._stderr.close()
            self._stderr = None
        self.stats = parse_summary(rest or '')
        return self.stats

    def __enter__(self) -> 'ProxyProcess':
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
