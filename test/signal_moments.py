"""
An executable as a real process, to signal at a chosen moment and watch every process it starts.

The moments are events, never fixed times: its SIGINT/SIGTERM handlers in place (/proc's SigCgt),
a line in its output, a port answering. `freeze()` holds it still (SIGSTOP) while the test checks
that it is still starting; a signal sent then is handled as it resumes. From start to exit a
thread records its descendants (pid and start time, so a reused pid is not mistaken for one),
so that `leftovers()` names any it left running.
"""

import os
from pathlib import Path
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from sequence_ai_ros.harness.child_processes import child_env
from sequence_ai_ros.harness.proc_stats import process_stat, process_tree, running

REPO = str(Path(__file__).resolve().parents[1])
# Generous bounds for a loaded two-core machine; every wait ends at its event, far sooner.
START_S = 60.0
EXIT_S = 30.0
STACKS_S = 5.0


def environment(**extra):
    """Return this process's environment with the checkout first on PYTHONPATH."""
    # faulthandler: a process that hangs is sent SIGABRT, and prints every thread's stack.
    return child_env(REPO, PYTHONUNBUFFERED='1', PYTHONFAULTHANDLER='1', **extra)


def _signal_mask(pid, field):
    try:
        for line in Path(f'/proc/{pid}/status').read_text().splitlines():
            if line.startswith(field + ':'):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def _bit(signum):
    return 1 << (signum - 1)


def port_open(port, host='127.0.0.1'):
    """Whether something accepts TCP connections on the port."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_for(predicate, timeout, what, process=None):
    """Poll `predicate` until true; fail naming `what` (and the process's output) if not."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if process is not None and process.proc.poll() is not None:
            raise AssertionError(f'exited with {process.proc.returncode} before {what}:\n'
                                 f'{process.output()[-3000:]}')
        if time.monotonic() > deadline:
            tail = f':\n{process.output()[-3000:]}' if process is not None else ''
            raise AssertionError(f'timed out waiting for {what}{tail}')
        time.sleep(0.005)


class Watched:
    """One process: started now (`args` after the interpreter), or an existing Popen adopted."""

    def __init__(self, args=None, env=None, proc=None, log_path=None):
        if proc is None:
            self._log = tempfile.NamedTemporaryFile(prefix='signal_exits_', suffix='.log')
            self.log_path = self._log.name
            proc = subprocess.Popen([sys.executable, *args], env=env or environment(),
                                    stdout=self._log, stderr=subprocess.STDOUT, cwd=REPO)
        else:
            self._log, self.log_path = None, log_path
        self.proc = proc
        self.seen = set()
        self._watching = True
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _watch(self):
        while self._watching and self.proc.poll() is None:
            self.seen |= process_tree(self.proc.pid)
            time.sleep(0.05)

    def output(self):
        """Return everything it has written so far."""
        try:
            return Path(self.log_path).read_text(errors='replace')
        except (OSError, TypeError):
            return ''

    def wait_for_handlers(self, timeout=START_S):
        """Wait until it handles SIGTERM itself: its entry point has installed its handlers."""
        wait_for(lambda: _signal_mask(self.proc.pid, 'SigCgt') & _bit(signal.SIGTERM), timeout,
                 'its signal handlers', self)

    def wait_for_line(self, pattern, timeout=START_S):
        """Wait until its output matches the regular expression `pattern`; return the match."""
        found = []
        wait_for(lambda: found.append(re.search(pattern, self.output())) or found[-1],
                 timeout, repr(pattern), self)
        return found[-1]

    def ignoring(self, signum):
        """Whether it ignores `signum` now (a process on its way out)."""
        return bool(_signal_mask(self.proc.pid, 'SigIgn') & _bit(signum))

    def freeze(self):
        """Stop it (SIGSTOP) and wait until it is stopped."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        wait_for(lambda: (process_stat(self.proc.pid) or ('T',))[0] in 'tT', 10.0, 'SIGSTOP', self)

    def thaw(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def send(self, signum):
        self.proc.send_signal(signum)

    def signal_while_frozen(self, signum, still_starting, what):
        """Freeze it, check `still_starting()` (else fail naming `what`), signal, resume."""
        self.freeze()
        try:
            assert still_starting(), f'{what} before the signal: the moment was missed'
            self.send(signum)
        finally:
            self.thaw()

    def finish(self, timeout=EXIT_S):
        """Wait for its exit; return (status, seconds waited). Killed and failed if it hangs."""
        started = time.monotonic()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._dump_stacks_and_kill()
            raise AssertionError(f'still running {timeout} s after the signal:\n'
                                 f'{_worst(self.output(), 12000)}') from None
        self._watching = False
        self._watcher.join(5)
        return code, time.monotonic() - started

    def _dump_stacks_and_kill(self):
        self.proc.send_signal(signal.SIGABRT)
        try:
            self.proc.wait(STACKS_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def leftovers(self, grace_s=10.0):
        """Return the descendants still running once it has exited (after up to `grace_s`)."""
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(running(p) for p in self.seen):
            time.sleep(0.05)
        return sorted(p for p in self.seen if running(p))

    def close(self):
        """Kill it and whatever it left, if a failed test did not see it exit."""
        self._watching = False
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid, _ in [p for p in self.seen if running(p)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self._log is not None:
            self._log.close()


def _worst(output, limit=4000):
    """Return the output from its first fatal error or traceback, else its end."""
    starts = [i for i in (output.find('Fatal Python error'), output.find('Traceback')) if i >= 0]
    return output[min(starts):][:limit] if starts else output[-3000:]


CANCELLED = 'CancelledError: Task cancelled, timeout graceful shutdown exceeded'


def assert_clean_exit(process, timeout=EXIT_S, cancelled_ok=False):
    """
    Wait for exit; assert status 0, no traceback, no process left; return seconds waited.

    `cancelled_ok`: uvicorn logs, with its traceback, a request still running when its graceful
    shutdown ends; such tracebacks, and only those, are allowed.
    """
    code, took = process.finish(timeout)
    output = process.output()
    assert code == 0, f'exit status {code}:\n{_worst(output)}'
    allowed = output.count(CANCELLED) if cancelled_ok else 0
    assert output.count('Traceback') == allowed, _worst(output)
    left = process.leftovers()
    assert not left, f'left running: {left}'
    return took
