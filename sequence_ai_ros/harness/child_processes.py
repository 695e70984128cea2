"""Child processes on a private ROS domain (discovery on loopback), each with its own log file."""

from collections.abc import Mapping, Sequence
import os
from pathlib import Path
import random
import signal
import subprocess
import sys

import sequence_ai_ros

# Where `python -m sequence_ai_ros...` finds the package, checkout or install alike.
_PACKAGE_PARENT = str(Path(sequence_ai_ros.__file__).resolve().parents[1])
# DDS's default port mapping (RTPS): the participants of domain d bind UDP ports from
# 7400 + 250 d, up to 250 of them (Fast DDS on loopback: 7410 + 250 d + 2 p for participant p).
_PORT_BASE, _DOMAIN_GAIN = 7400, 250
_PRIVATE_DOMAINS = range(1, 101)  # clear of the ports' upper limit on every DDS


def localhost_discovery(distro: str | None = None) -> dict[str, str]:
    """Return the variables that keep DDS discovery on this machine (distro: ROS_DISTRO's)."""
    # Humble's switch is ROS_LOCALHOST_ONLY; later distributions read the range (and warn
    # about the old switch at every init, ahead of a child's first line of output, so it is
    # only set for Humble).
    if (os.environ.get('ROS_DISTRO') if distro is None else distro) == 'humble':
        return {'ROS_LOCALHOST_ONLY': '1', 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    return {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}


def join_private_domain(distro: str | None = None) -> None:
    """
    Put this process on a ROS domain of its own (unless ROS_DOMAIN_ID is set), on loopback.

    Call it before the first rclpy context exists: DDS reads these when that is created.
    """
    os.environ.setdefault('ROS_DOMAIN_ID', str(random_domain_id()))
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
    os.environ.update(localhost_discovery(distro))


def child_env(*extra_paths: str | os.PathLike[str], **env: str) -> dict[str, str]:
    """
    Return this process's environment for a child, with `env` set on top.

    The child imports from `extra_paths`, then this package, then whatever PYTHONPATH this
    process has: prepended, never replaced, as a sourced ROS install reaches rclpy through it.
    """
    if 'PYTHONPATH' in env:
        raise ValueError('child_env takes import paths as positional arguments, not PYTHONPATH')
    result = dict(os.environ)
    paths = [*(os.fspath(p) for p in extra_paths), _PACKAGE_PARENT, result.get('PYTHONPATH')]
    result['PYTHONPATH'] = os.pathsep.join(dict.fromkeys(p for p in paths if p))
    result.update(env)
    return result


def ros_environment(domain_id: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return this process's environment on a private ROS domain, discovery on loopback only."""
    env = child_env(ROS_DOMAIN_ID=str(domain_id), PYTHONUNBUFFERED='1', **localhost_discovery())
    env.update(extra or {})
    return env


def bound_udp_ports() -> set[int]:
    """Return the UDP ports bound on this machine (from /proc/net; empty where there is none)."""
    ports: set[int] = set()
    for table in ('/proc/net/udp', '/proc/net/udp6'):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        ports.update(int(line.split()[1].rsplit(':', 1)[1], 16) for line in lines)
    return ports


def domain_in_use(domain_id: int, bound: set[int] | None = None) -> bool:
    """Return whether a DDS participant on this machine has bound a port of `domain_id`."""
    first = _PORT_BASE + _DOMAIN_GAIN * domain_id
    ports = bound_udp_ports() if bound is None else bound
    return any(first <= port < first + _DOMAIN_GAIN for port in ports)


def random_domain_id() -> int:
    """
    Return a ROS domain id in 1..100 that no DDS participant on this machine uses.

    Nor this process's own ROS_DOMAIN_ID: a demo or a test's children must never join the
    domain of the user's robot, whose nodes might be off this machine or not started yet.
    """
    own = os.environ.get('ROS_DOMAIN_ID', '').strip()
    candidates = [d for d in _PRIVATE_DOMAINS if str(d) != own]
    random.SystemRandom().shuffle(candidates)
    bound = bound_udp_ports()
    return next((d for d in candidates if not domain_in_use(d, bound)), candidates[0])


class ChildProcess:
    """One child (`python -m module args`), output to `log_path`, stopped politely then hard."""

    def __init__(self, name: str, module: str, args: Sequence[str], env: Mapping[str, str],
                 log_path: Path, cwd: str | os.PathLike[str] | None = None) -> None:
        self.name = name
        self.command = [sys.executable, '-m', module, *args]
        self.log_path = log_path
        self._log = open(log_path, 'wb')
        # A session of its own: Ctrl-C in the terminal reaches only the demo, which then stops
        # its children in order (the node first, so that it leaves the arm holding).
        self.proc = subprocess.Popen(self.command, env=dict(env), stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd)

    def running(self) -> bool:
        """Return whether the process is alive."""
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 8.0, sig: int = signal.SIGTERM) -> int:
        """Send `sig` (SIGTERM: the nodes treat it as Ctrl-C), then SIGKILL; return the code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def log_tail(self, lines: int = 25) -> str:
        """Return the last `lines` lines the process wrote."""
        try:
            text = self.log_path.read_text(encoding='utf-8', errors='replace')
        except OSError:
            return ''
        return '\n'.join(text.splitlines()[-lines:])
