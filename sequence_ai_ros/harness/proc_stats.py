"""
What Linux's /proc says about a process and the machine, for tests and benchmarks.

CPU time (of a process, or of its main thread: the rclpy executor and every callback), how
busy all cores were, resident memory, threads and sockets (all, their inodes, TCP ones), the
CPU model, the processes below one and whether one still runs; and lowering the priority of a
process one started. Every reader of one process takes a pid or 'self'.
"""

import os
from pathlib import Path
import platform
import time

Pid = int | str


def cpu_seconds(pid: Pid = 'self', main_thread: bool = False) -> float:
    """Return a process's user + system CPU time (or its main thread's), in seconds."""
    path = f'/proc/{pid}/task/{pid}/stat' if main_thread else f'/proc/{pid}/stat'
    if main_thread and pid == 'self':
        path = f'/proc/self/task/{os.getpid()}/stat'
    # The command name (field 2) may hold spaces: count the fields after its ')'.
    fields = Path(path).read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def machine_jiffies() -> tuple[float, float]:
    """Return (busy, total) jiffies of all cores since boot, from /proc/stat."""
    fields = [int(v) for v in Path('/proc/stat').read_text().split('\n', 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user
    return float(total - idle), float(total)


def busy_share(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Return how busy all cores were between two machine_jiffies() readings, 0..1."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return busy / total if total > 0 else float('nan')


class CpuWindow:
    """CPU time of a process and of its main thread, and how busy the machine was, in a window."""

    def __init__(self, pid: Pid) -> None:
        self.pid = pid
        self.t0 = time.monotonic()
        self.cpu0 = cpu_seconds(pid)
        self.main0 = cpu_seconds(pid, main_thread=True)
        self.machine0 = machine_jiffies()

    def close(self) -> tuple[float, float, float, float]:
        """Return (wall s, CPU share, main thread's share, machine busy) since it opened."""
        wall = time.monotonic() - self.t0
        cpu, main = cpu_seconds(self.pid), cpu_seconds(self.pid, main_thread=True)
        return (wall, (cpu - self.cpu0) / wall, (main - self.main0) / wall,
                busy_share(self.machine0, machine_jiffies()))


def resident_kib(pid: Pid = 'self') -> int:
    """Return the resident set size of a process in KiB."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    raise RuntimeError(f'no VmRSS for pid {pid}')


def thread_count(pid: Pid = 'self') -> int:
    """Count the OS threads of a process, rclpy's and httpx's included."""
    return len(list(Path(f'/proc/{pid}/task').iterdir()))


def open_sockets(pid: Pid = 'self') -> int:
    """Count the sockets a process has open."""
    count = 0
    for entry in Path(f'/proc/{pid}/fd').iterdir():
        try:
            count += os.readlink(entry).startswith('socket:')
        except OSError:  # closed between listing and reading
            pass
    return count


def cpu_model() -> str:
    """Return the CPU's model name, or what platform knows where /proc/cpuinfo says nothing."""
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def lower_priority(pid: int | None, nice: int) -> bool:
    """Renice every thread of a process one started; False where that is not possible."""
    if pid is None:
        return False
    try:
        threads = [int(t) for t in os.listdir(f'/proc/{pid}/task')]
    except OSError:
        threads = [pid]
    try:
        for tid in threads:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
    except (OSError, AttributeError):
        return False
    return True


def process_stat(pid: Pid) -> tuple[str, int, int] | None:
    """Return (state, parent pid, start time in clock ticks) of a process; None once it is gone."""
    try:
        # The command name (field 2) may hold spaces or parentheses: split after its last ')'.
        fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def process_tree(pid: int) -> set[tuple[int, int]]:
    """Return (pid, start time) of every live process below `pid`; a zombie has ended."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            stat = process_stat(entry)
            if stat is not None and stat[0] != 'Z':
                children.setdefault(stat[1], []).append((int(entry), stat[2]))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.add(child)
            todo.append(child[0])
    return found


def descendants(pid: int) -> set[int]:
    """Return the pids of every live process below `pid`."""
    return {child for child, _ in process_tree(pid)}


def running(identity: tuple[int, int]) -> bool:
    """Whether the process (pid, start time) still runs: a reused pid or a zombie does not."""
    stat = process_stat(identity[0])
    return stat is not None and stat[2] == identity[1] and stat[0] != 'Z'


def alive(pids: set[int]) -> set[int]:
    """Return those of `pids` that still run (zombies count as gone)."""
    return {pid for pid in pids if (process_stat(pid) or ('Z',))[0] != 'Z'}


def _socket_fds(pid: Pid) -> list[str]:
    """Return the socket inode of each socket descriptor a process has open (one per fd)."""
    inodes = []
    for entry in Path(f'/proc/{pid}/fd').iterdir():
        try:
            target = os.readlink(entry)
        except OSError:  # closed between listing and reading
            continue
        if target.startswith('socket:['):
            inodes.append(target[len('socket:['):-1])
    return inodes


def socket_inodes(pid: Pid = 'self') -> set[str]:
    """Return the inodes of the sockets a process has open (how /proc/net names them)."""
    return set(_socket_fds(pid))


def tcp_sockets(pid: Pid = 'self') -> int:
    """
    Count the TCP sockets a process has open: its HTTP connections (and listeners).

    DDS holds UDP sockets (and shared memory), so a node's TCP ones are its connection pool.
    """
    inodes = set()
    for table in ('tcp', 'tcp6'):
        try:
            lines = Path(f'/proc/{pid}/net/{table}').read_text().splitlines()[1:]
        except OSError:
            continue
        inodes.update(line.split()[9] for line in lines if len(line.split()) > 9)
    return sum(inode in inodes for inode in _socket_fds(pid))
