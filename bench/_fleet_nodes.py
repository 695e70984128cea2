"""
The fleet bench's ROS side: K namespaced policy nodes, each with its own simulated arm.

Namespace i of a K-node row is `/fleet_k<K>_<i>`: a `sim_arm` (joint states at 100 Hz, two
raw 320x240 camera frames at 15 Hz, trajectory execution) and a `policy_node` with the model's
own parameter file (as the demo starts them), all on one private ROS domain against one
gateway. This process only drives the lifecycles and listens to each node's
`~/episode_outcome` and `~/chunks` (a few messages a second), so it adds little to what is
measured.
"""

from dataclasses import dataclass, field
import json
from pathlib import Path
import tempfile
import threading
import time
from typing import Any

from sequence_ai_ros.demo.configs import config_file
from sequence_ai_ros.demo.controllers import config_value, controller_setup, DEFAULT_DISTRO
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.child_processes import ChildProcess, ros_environment
from sequence_ai_ros.harness.proc_stats import busy_share, cpu_seconds, machine_jiffies

NODE, SIM = 'policy_node', 'sim_arm'
STEP_TIMEOUT_S = 90.0  # a process start or a transition, with up to 16 processes on 2 cores
TARGET_XY = (0.55, -0.2)


@dataclass
class Namespace:
    """One arm's processes and what its node reported."""

    name: str
    sim: ChildProcess
    node: ChildProcess
    outcome: dict[str, Any] | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU share over the window
    main_thread: dict[str, float] = field(default_factory=dict)  # its main (rclpy) thread's


class Watcher:
    """Lifecycle clients and outcome/chunk subscriptions for every namespace, on one node."""

    def __init__(self, domain_id: int) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sequence_ai_ros.harness.ros_side import RosSide
        self.ros = RosSide('fleet_watcher', domain_id)
        self.node = self.ros.node
        self.reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def watch(self, space: Namespace) -> None:
        """Subscribe to one namespace's node and make its lifecycle client."""
        from lifecycle_msgs.srv import ChangeState
        from std_msgs.msg import String
        ns = f'/{space.name}/{NODE}'

        def on_outcome(msg: Any) -> None:
            with self._lock:
                if space.outcome is None:
                    space.outcome = json.loads(msg.data)

        def on_chunk(msg: Any) -> None:
            with self._lock:
                space.chunks.append(json.loads(msg.data))

        self.node.create_subscription(String, f'{ns}/episode_outcome', on_outcome, self.reliable)
        self.node.create_subscription(String, f'{ns}/chunks', on_chunk, self.reliable)
        self.clients[space.name] = self.node.create_client(ChangeState, f'{ns}/change_state')

    def transition_all(self, names: list[str], transition_id: int, timeout_s: float) -> list[str]:
        """Ask every node for a transition at once; return the names that did not succeed."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState
        futures = {}
        for name in names:
            request = ChangeState.Request()
            request.transition = Transition(id=transition_id)
            futures[name] = self.clients[name].call_async(request)
        deadline = time.monotonic() + timeout_s
        while not all(f.done() for f in futures.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return [n for n, f in futures.items() if not (f.done() and f.result().success)]

    def wait_for_services(self, names: list[str], timeout_s: float) -> list[str]:
        """Wait for every node's change_state service; return the names still missing."""
        deadline = time.monotonic() + timeout_s
        missing = list(names)
        while missing and time.monotonic() < deadline:
            missing = [n for n in missing if not self.clients[n].service_is_ready()]
            time.sleep(0.1)
        time.sleep(0.5)  # the service's reply reader may match a moment after its request one
        return missing

    def close(self) -> None:
        """Stop spinning and remove the watcher's node."""
        self.ros.close()


def acts(stats: dict[str, Any]) -> int:
    """Count every /v1/act the gateway has answered, whatever the status."""
    return sum(sum(by_status.values()) for by_status in stats.get('acts', {}).values())


@dataclass
class NodeRun:
    """One row: K namespaces against one gateway, and what the windows measured."""

    count: int
    spaces: list[Namespace]
    label: str = ''
    idle_s: float = 0.0  # configured, not active: what subscriptions alone cost
    idle_cpu: dict[str, float] = field(default_factory=dict)  # role -> mean share per process
    window_s: float = 0.0  # every episode running
    gateway_cpu: float = 0.0
    bench_cpu: float = 0.0
    machine_busy: float = 0.0  # of all cores, 0..1
    requests_per_s: float = 0.0
    max_queued: int = 0
    failure: str = ''


class NodeFleet:
    """Start K sims and K nodes, configure and activate them together, and measure windows."""

    def __init__(self, count: int, *, model: str, gateway: GatewayProcess, api_key: str,
                 domain_id: int, time_scale: float, actions: int, watcher: Watcher,
                 sim_args: tuple[str, ...] = (), node_args: tuple[str, ...] = ()) -> None:
        self.count = count
        self.sim_args, self.node_args = list(sim_args), list(node_args)
        self.model = model
        self.gateway = gateway
        self.api_key = api_key
        self.domain_id = domain_id
        self.time_scale = time_scale
        self.actions = actions
        self.watcher = watcher
        self.tmp = tempfile.TemporaryDirectory(prefix='bench_fleet_nodes_')
        self.spaces: list[Namespace] = []

    def _child(self, name: str, ns: str, module: str, ros_args: list[str],
               **env: str) -> ChildProcess:
        log = Path(self.tmp.name) / f'{ns}_{name}.log'
        return ChildProcess(name, module, ['--ros-args', '-r', f'__ns:=/{ns}', *ros_args],
                            ros_environment(self.domain_id, env), log)

    def start(self) -> None:
        """Start every sim and node (sims first, so the nodes find joint states)."""
        for i in range(self.count):
            ns = f'fleet_k{self.count}_{i}'  # unique per row: no stale subscription matches
            # The config file's output mode, the gripper on a one-joint trajectory controller.
            controllers, wiring = controller_setup(
                config_value(config_file(self.model), 'output_mode'),
                'trajectory', DEFAULT_DISTRO)
            sim = self._child(SIM, ns, 'sequence_ai_ros.sim.node', [
                '-p', f'time_scale:={self.time_scale!r}',
                '-p', f'target_xy:=[{TARGET_XY[0]!r}, {TARGET_XY[1]!r}]', *controllers,
                *self.sim_args])
            params = {
                'base_url': self.gateway.base_url, 'hold_service': f'/{ns}/{SIM}/hold',
                'max_actions': str(self.actions), 'startup_timeout_s': '30.0',
                'configure_timeout_s': '60.0', **wiring,
            }
            node = self._child(NODE, ns, 'sequence_ai_ros.node.main', [
                '--params-file', str(config_file(self.model)),
                *[a for k, v in params.items() for a in ('-p', f'{k}:={v}')], *self.node_args],
                SEQUENCES_API_KEY=self.api_key)
            space = Namespace(ns, sim, node)
            self.spaces.append(space)
            self.watcher.watch(space)

    def run(self, episode_wall_s: float, idle_s: float) -> NodeRun:
        """Bring every node up, measure it idle, run one episode on each at once, measure."""
        from lifecycle_msgs.msg import Transition
        result = NodeRun(self.count, self.spaces)
        names = [s.name for s in self.spaces]
        missing = self.watcher.wait_for_services(names, STEP_TIMEOUT_S)
        if missing:
            result.failure = f'no lifecycle service from {", ".join(missing)}'
            return result
        failed = self.watcher.transition_all(names, Transition.TRANSITION_CONFIGURE,
                                             STEP_TIMEOUT_S)
        if failed:
            result.failure = f'configure failed: {", ".join(failed)}'
            return result
        # Configured, not active: subscriptions and diagnostics only, the sims all running.
        before, began = self._cpu(), time.monotonic()
        time.sleep(idle_s)
        after = self._cpu()
        result.idle_s = time.monotonic() - began
        for role in (NODE, SIM):
            shares = [(after[k] - before[k]) / result.idle_s for k in after
                      if k.endswith('/' + role) and k in before]
            result.idle_cpu[role] = sum(shares) / len(shares) if shares else 0.0
        failed = self.watcher.transition_all(names, Transition.TRANSITION_ACTIVATE,
                                             STEP_TIMEOUT_S)
        if failed:
            result.failure = f'activate failed: {", ".join(failed)}'
            return result
        self._measure(result, episode_wall_s)
        return result

    def _measure(self, result: NodeRun, episode_wall_s: float) -> None:
        # The window: from a moment after every episode started (first chunks in) to the first
        # episode's end, so it covers only time when every arm was running.
        time.sleep(min(2.0, 0.1 * episode_wall_s))
        stats0, before = self.gateway.stats(), self._cpu()
        busy0 = machine_jiffies()
        began = time.monotonic()
        deadline = began + 3 * episode_wall_s + STEP_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(s.outcome is not None for s in self.spaces) or self._dead():
                break
            time.sleep(0.05)
        after, stats1 = self._cpu(), self.gateway.stats()
        result.window_s = wall = time.monotonic() - began
        for space in self.spaces:
            for role in (NODE, SIM):
                for name, shares in ((role, space.cpu), (f'{role}:main', space.main_thread)):
                    key = f'{space.name}/{name}'
                    if key in before and key in after:
                        shares[role] = (after[key] - before[key]) / wall
        result.gateway_cpu = (after['gateway'] - before['gateway']) / wall
        result.bench_cpu = (after['bench'] - before['bench']) / wall
        result.machine_busy = busy_share(busy0, machine_jiffies())
        result.requests_per_s = (acts(stats1) - acts(stats0)) / wall
        result.max_queued = max((m.get('max_queued', 0) for m in stats1['models'].values()),
                                default=0)
        # Let every episode finish (they started within a tick of each other).
        while time.monotonic() < deadline and not all(s.outcome for s in self.spaces):
            if self._dead():
                break
            time.sleep(0.05)
        dead = self._dead()
        if dead:
            result.failure = dead
        elif not all(s.outcome for s in self.spaces):
            result.failure = 'not every episode ended in time'

    def _cpu(self) -> dict[str, float]:
        out = {'bench': cpu_seconds(), 'gateway': cpu_seconds(self.gateway.pid or 0)}
        for space in self.spaces:
            for role, child in ((NODE, space.node), (SIM, space.sim)):
                pid = child.proc.pid
                try:
                    out[f'{space.name}/{role}'] = cpu_seconds(pid)
                    # The main thread runs the rclpy executor and every callback; the rest are
                    # DDS's own threads and the request workers.
                    out[f'{space.name}/{role}:main'] = cpu_seconds(pid, main_thread=True)
                except OSError:
                    pass
        return out

    def _dead(self) -> str:
        for space in self.spaces:
            for child in (space.node, space.sim):
                if not child.running():
                    return (f'{space.name}/{child.name} exited with {child.proc.returncode}:\n'
                            f'{child.log_tail(15)}')
        return ''

    def log_tails(self, lines: int = 10) -> str:
        """Return the last lines of every child's log (for a failed row)."""
        return '\n'.join(f'--- {s.name}/{c.name} ---\n{c.log_tail(lines)}'
                         for s in self.spaces for c in (s.node, s.sim))

    def close(self) -> None:
        """Stop the nodes first (they leave their arm holding), then the sims."""
        for space in self.spaces:
            space.node.stop()
        for space in self.spaces:
            space.sim.stop()
        self.tmp.cleanup()
