"""The fleet bench's rows: what each measured, and the small sums its tables and findings share."""

from dataclasses import dataclass, field
import os
from typing import Any

from sequence_ai_ros.client import quantile
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.config import GatewayConfig

from ._fleet_clients import LoopResult
from ._fleet_nodes import acts, NodeRun

MODEL = 'pi05-droid'
LONG_MODEL = 'lingbot-vla-v2-6b'
DEFAULT_WORKERS = GatewayConfig().concurrency
MORE_WORKERS = 64
NODE_SCALE = 1.0
IDLE_S = 3.0


@dataclass(frozen=True)
class ClientSpec:
    """One client-loop row: which model, how many loops, how run, against what gateway."""

    model: str
    loops: int
    time_scale: float
    workers: int  # the gateway's --concurrency: inferences at once per model
    processes: int = 0  # 0: every loop a thread of this process

    @property
    def how(self) -> str:
        """Say how the loops were run."""
        return 'threads' if not self.processes else f'{self.processes} processes'


@dataclass
class ClientRow:
    """What one row measured."""

    spec: ClientSpec
    profile: ModelProfile
    window_s: float
    results: list[LoopResult]
    client_cpu: float  # CPU seconds of the loops' process(es) / wall; 1.0 = one core
    gateway_cpu: float
    machine_busy: float  # of all cores, 0..1
    stats: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def total(self, name: str) -> float:
        """Sum a RunOutcome field over the loops."""
        return sum(float(r.outcome.get(name) or 0) for r in self.results)

    @property
    def requests(self) -> int:
        """Count the /v1/act calls the gateway answered."""
        return acts(self.stats)

    @property
    def demanded_per_s(self) -> float:
        """Return the requests per wall second the loops need (append: one per chunk)."""
        return self.spec.loops / self.profile.covers_seconds

    @property
    def moving(self) -> list[float]:
        """Each loop's moving fraction."""
        return [float(r.outcome.get('moving_fraction') or 0.0) for r in self.results]

    def model_s(self, seconds: list[float], q: float) -> float:
        """Return a quantile of wall seconds, in model seconds."""
        value = quantile(seconds, q)
        return float('nan') if value is None else value / self.spec.time_scale

    @property
    def round_trips(self) -> list[float]:
        """Every answer's HTTP round trip (wall s), pooled over the loops."""
        return [t for r in self.results for t, _ in r.timings]

    @property
    def inference(self) -> list[float]:
        """Every answer's server-reported inference time (wall s), pooled."""
        return [ms / 1000.0 for r in self.results for _, ms in r.timings if ms is not None]

    @property
    def outside_inference(self) -> list[float]:
        """Every answer's round trip less its server-reported inference (wall s)."""
        return [t - ms / 1000.0 for r in self.results for t, ms in r.timings if ms is not None]

    @property
    def max_queued(self) -> int:
        """Return the most requests the gateway ever held waiting for a worker."""
        return int(self.stats['models'].get(self.profile.id, {}).get('max_queued', 0))


def pct(value: float) -> str:
    """Format a 0..1 share as a percentage."""
    return f'{100 * value:.1f}%'


def pair(a: float | None, b: float | None, digits: int = 2) -> str:
    """Format two numbers as `a / b`."""
    def one(v: float | None) -> str:
        return '-' if v is None or v != v else f'{v:.{digits}f}'
    return f'{one(a)} / {one(b)}'


def lost(row: ClientRow) -> int:
    """Count requests with no fate, and answered chunks skipped without being reported."""
    unplayed = sum(r.unplayed for r in row.results)
    return sum(r.lost for r in row.results) + max(0, unplayed - int(row.total('stale_chunks')))


def break_kinds(row: ClientRow) -> str:
    """Name the kinds of break seen, if any."""
    kinds: dict[str, int] = {}
    for result in row.results:
        for name, value in result.check.items():
            if value:
                kinds[name] = kinds.get(name, 0) + int(value)
    return ', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))


def node_values(row: NodeRun, role: str) -> list[float]:
    """CPU shares of every process of one role over the running window."""
    return [s.cpu[role] for s in row.spaces if role in s.cpu]


def main_thread(row: NodeRun, role: str) -> list[float]:
    """CPU shares of the main (rclpy executor) thread of every process of one role."""
    return [s.main_thread[role] for s in row.spaces if role in s.main_thread]


def own_cpu(row: NodeRun) -> float:
    """Return the CPU (1.0 = one core) of every process of a node row, this one included."""
    return (sum(node_values(row, 'policy_node')) + sum(node_values(row, 'sim_arm'))
            + row.gateway_cpu + row.bench_cpu)


def others(busy: float, ours: float) -> float:
    """Return the share of all cores that processes other than the bench's kept busy."""
    return max(0.0, busy - ours / (os.cpu_count() or 1))


def mean(values: list[float]) -> float:
    """Return the arithmetic average, or nan when empty."""
    return sum(values) / len(values) if values else float('nan')


def node_moving(row: NodeRun) -> list[float]:
    """Each node's moving fraction from its episode outcome."""
    return [float((s.outcome or {}).get('moving_fraction') or 0.0) for s in row.spaces]
