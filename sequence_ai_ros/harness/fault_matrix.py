"""
Rows of the reliability matrix (docs/RELIABILITY.md), recorded by the fault tests themselves.

A test asks for the `fault_matrix` fixture and calls `fault_matrix.record(FaultRow(...))` with
what it measured. Rows are written (JSON lines, to the file named by OUT_ENV) only when that
variable is set, which `scripts/reliability_matrix.py` does; the test's own pass/fail decides
the row's `survived` column, so a row can never claim more than its assertions proved.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
import json
import os
from pathlib import Path
import threading
import time

OUT_ENV = 'SEQUENCE_AI_ROS_RELIABILITY_OUT'
AREAS = ('network', 'gateway', 'malformed answer', 'ROS input', 'hold service', 'lifecycle',
         'load', 'fuzz', 'secrets')


@dataclass
class FaultRow:
    """One case of the matrix: what was done, what happened, and the safety counts."""

    area: str
    case: str
    outcome: str
    # Commands that reached the command topic (or the arm) derived from the fault: must be 0.
    unsafe_commands: int = 0
    time_to_hold_s: float | None = None
    commands_after_fault: int | None = None
    sockets: tuple[int, int] | None = None  # (before, after)
    threads: tuple[int, int] | None = None  # (before, after)
    extra: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.area not in AREAS:
            raise ValueError(f'area {self.area!r} is not one of {AREAS}')


class FaultMatrix:
    """Collects the rows of one test; the fixture writes them once the test's outcome is known."""

    def __init__(self, test_id: str) -> None:
        self.test_id = test_id
        self.rows: list[FaultRow] = []

    def record(self, row: FaultRow) -> FaultRow:
        """Keep `row` for the matrix; returns it so a test can go on asserting on it."""
        self.rows.append(row)
        return row

    def flush(self, passed: bool) -> None:
        """Append the rows to the OUT_ENV file, marked survived only if the test passed."""
        target = os.environ.get(OUT_ENV)
        if not target or not self.rows:
            return
        with _WRITE_LOCK, Path(target).open('a', encoding='utf-8') as out:
            for row in self.rows:
                line = dict(asdict(row), test=self.test_id, survived=passed)
                out.write(json.dumps(line) + '\n')


_WRITE_LOCK = threading.Lock()


def settled(count: Callable[[], int], limit: int, timeout_s: float = 10.0) -> int:
    """
    Poll `count()` until it is at most `limit` or the timeout passes; return the last count.

    A request abandoned at a stop finishes on its worker thread within the request timeout,
    so "back to the baseline" is checked with a bounded wait, not at one instant.
    """
    deadline = time.monotonic() + timeout_s
    value = count()
    while value > limit and time.monotonic() < deadline:
        time.sleep(0.05)
        value = count()
    return value
