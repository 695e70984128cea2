"""
Starting the gateway on a local Ray as a real process, and reading its Ray processes in /proc.

Each test_ray_*.py module starts one such gateway (Ray takes ~10 s to start and stop) and
overrides the session's gateway fixtures with it, so the in-process gateway's contract tests
run unchanged against Ray Serve.
"""

from collections.abc import Iterable
import ipaddress
from pathlib import Path
import socket

from fixtures_gateway import TEST_DIR, TIME_SCALE
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.proc_stats import descendants, socket_inodes

POLICY_REPLICA = 'ray::ServeReplica:sequence-ai-gateway:policy'
_LISTEN = '0A'  # TCP_LISTEN in /proc/net/tcp's st column


def ray_gateway(args: list[str], *, time_scale: float = TIME_SCALE, env: dict | None = None,
                **kwargs: object) -> GatewayProcess:
    """Return a started `gateway --ray` with `args`, the test and repository dirs importable."""
    return GatewayProcess(['--ray', '--time-scale', str(time_scale), '--log-level', 'warning',
                           *args], env=env, import_paths=[TEST_DIR], startup_timeout_s=150.0,
                          stop_timeout_s=40.0, **kwargs).start()


def command_line(pid: int) -> bytes:
    """Return the process's command line as /proc holds it, or b'' once it is gone."""
    try:
        return Path(f'/proc/{pid}/cmdline').read_bytes()
    except OSError:
        return b''


def policy_replicas(root: int) -> list[int]:
    """Return the pids of the policy deployment's replicas below `root`."""
    return [pid for pid in descendants(root)
            if command_line(pid).startswith(POLICY_REPLICA.encode())]


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    # /proc/net/tcp{,6} print the address as 32-bit words in host byte order.
    raw = bytes.fromhex(hex_address)
    words = b''.join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(socket.inet_ntop(
        socket.AF_INET if len(words) == 4 else socket.AF_INET6, words))


def listening(pids: Iterable[int]) -> list[tuple[str, int, str]]:
    """Return (address, port, process name) for each TCP socket the processes listen on."""
    owner = {}
    for pid in pids:
        name = command_line(pid).split(b'\0')[0].decode(errors='replace')
        try:
            owner.update({inode: name for inode in socket_inodes(pid)})
        except OSError:
            continue
    found = []
    for table in ('tcp', 'tcp6'):
        for line in Path(f'/proc/net/{table}').read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == _LISTEN and fields[9] in owner:
                host, port = fields[1].split(':')
                found.append((str(_address(host)), int(port, 16), owner[fields[9]]))
    return found


def is_loopback(address: str) -> bool:
    """Whether `address` is loopback (127/8, ::1, or 127/8 mapped into IPv6)."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, 'ipv4_mapped', None)
    return (mapped or ip).is_loopback
