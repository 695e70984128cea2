"""
One run of the output-modes bench: a simulated arm and a policy node, driven and stalled.

The arm starts with its tool above the middle of the table and reaches for a red disc that
jumps from side to side every TARGET_EVERY_S, so it keeps moving. The run
has two phases in one episode: `clean_s` untouched, then the node's process is stopped
(SIGSTOP) for each delay in turn and continued (SIGCONT), each stop when the arm is moving
and at least PULSE_GAP_S (plus a random fraction of a period, so stops fall anywhere in the
tick) after the last one ended. A stopped process is late on every thread at once, its timer,
its DDS callbacks and its HTTP requests, as under a GC pause or a CPU taken away.
"""

from dataclasses import dataclass, field
import os
from pathlib import Path
import random
import signal
import time
from typing import Any

import numpy as np
from sequence_ai_ros.demo.configs import config_file, find_config
from sequence_ai_ros.demo.controllers import controller_setup
from sequence_ai_ros.gateway.reference_policy import plan_reach
from sequence_ai_ros.harness.child_processes import ChildProcess, ros_environment
from sequence_ai_ros.harness.ros_side import RosSide
from sequence_ai_ros.world import arm_model

from ._output_modes_metrics import Pulse
from ._output_modes_record import ModeRecorder, Series

# Two mirror-image targets: every move is the same reach, so any whole number of moves is
# the same task, and the phases compare.
TARGETS = ((0.5, -0.26), (0.5, 0.26))
TARGET_EVERY_S = 3.0
WARMUP_MOVES = 1  # after the first, half-length one
PULSE_GAP_S = 1.2
MOVING_RAD_S = 0.05  # joint-space speed the arm must have before a stop
JOINT_STATE_HZ = 1000.0
CONTROLLERS_FILE = 'ros2_control/panda_controllers.yaml'
DISTRO = 'kilted'  # its controller_manager clamps commands to the joints' limits, as the real one
# forward_position's variants: the node's lines (the default) and each step at once.
VARIANTS = {'forward_position_steps': ('forward_position', {'forward_output_rate_hz': 0.0}),
            **{f'forward_position_{hz}hz': ('forward_position',
                                            {'forward_output_rate_hz': float(hz)})
               for hz in (250, 1000)}}
STEP_TIMEOUT_S = 30.0
LOOP_S = 0.01


@dataclass
class RunResult:
    """What one run recorded, and where its phases begin and end (system clock)."""

    mode: str
    hz: float
    repeat: int
    series: Series = field(default_factory=Series)
    pulses: list[Pulse] = field(default_factory=list)
    first_command: float = 0.0
    clean_start: float = 0.0
    clean_end: float = 0.0
    end: float = 0.0
    outcome: dict[str, Any] = field(default_factory=dict)
    controller_errors: int = 0
    limit_clamps: int = 0
    failure: str = ''


@dataclass(frozen=True)
class Setup:
    """What every run shares: the gateway, the ROS side, the key, where logs go."""

    ros: RosSide
    domain_id: int
    base_url: str
    key: str
    log_dir: Path
    clean_s: float
    delays_s: tuple[float, ...]
    seed: int


def start_posture() -> list[float]:
    """Return the joints with the tool hovering midway between the targets (no first reach)."""
    goal = np.array([*np.mean(TARGETS, axis=0), arm_model.HOVER_Z])
    q = arm_model.HOME.copy()
    for _ in range(20):  # the reference policy's own reach, played until it has arrived
        q = plan_reach(q, 0.0, goal, 30, 1.0 / 15.0)[0][-1]
    return [round(float(v), 6) for v in q]


def run_once(setup: Setup, mode: str, hz: float, model: str, repeat: int) -> RunResult:
    """Start an arm and a node in a namespace of their own, run the two phases, stop both."""
    result = RunResult(mode, hz, repeat)
    ns = f'/om/{mode}_{hz:g}hz_{repeat}'
    output_mode, extra = VARIANTS.get(mode, (mode, {}))
    sim_args, node_params = controller_setup(output_mode, 'trajectory', DISTRO)
    node_params.update(extra)
    first = TARGETS[0]
    sim = _child(setup, 'sim_arm', ns, 'sequence_ai_ros.sim.node', [
        '-p', 'time_scale:=1.0', '-p', f'joint_state_rate_hz:={JOINT_STATE_HZ!r}',
        '-p', f'target_xy:=[{first[0]!r}, {first[1]!r}]',
        '-p', f'initial_positions:={start_posture()!r}', *sim_args,
        '--params-file', str(find_config(CONTROLLERS_FILE))])
    expected_s = (WARMUP_MOVES + 1) * TARGET_EVERY_S + setup.clean_s + \
        len(setup.delays_s) * 6.0 + 20.0
    params = {'model': model, 'base_url': setup.base_url, 'hold_service': f'{ns}/sim_arm/hold',
              'max_actions': str(round(expected_s * hz)), 'startup_timeout_s': '30.0',
              **node_params}
    node = _child(setup, 'policy_node', ns, 'sequence_ai_ros.node.main', [
        '--params-file', str(config_file('pi05-droid')),
        *[arg for name, value in params.items() for arg in ('-p', f'{name}:={value}')]],
        SEQUENCES_API_KEY=setup.key)
    recorder = ModeRecorder(setup.ros, ns, output_mode)
    result.series = recorder.series
    try:
        result.failure = _drive(setup, result, recorder, sim, node, hz)
    finally:
        _resume(node)  # never leave a stopped process behind
        for child in (node, sim):
            child.stop()
        recorder.close()
    result.outcome = recorder.data.outcome or {}
    result.controller_errors = len(recorder.data.controller_errors)
    result.limit_clamps = len(recorder.limit_clamps)
    if result.failure:
        result.failure += '\n' + '\n'.join(
            f'--- {c.name} ({c.log_path}) ---\n{c.log_tail(15)}' for c in (node, sim))
    return result


def _drive(setup: Setup, result: RunResult, recorder: ModeRecorder, sim: ChildProcess,
           node: ChildProcess, hz: float) -> str:
    from lifecycle_msgs.msg import Transition

    series = recorder.series
    if not _wait(lambda: bool(series.states), sim, node):
        return 'the simulated arm published no joint_states'
    for step, transition in (('come up', None), ('configure', Transition.TRANSITION_CONFIGURE),
                             ('activate', Transition.TRANSITION_ACTIVATE)):
        done = recorder.wait_for_node(STEP_TIMEOUT_S) if transition is None else \
            recorder.transition(transition, STEP_TIMEOUT_S)
        if not done:
            return _dead(sim, node) or f'the policy node did not {step}'
    if not _wait(lambda: bool(series.sent), sim, node):
        return _dead(sim, node) or 'the policy node sent no command'
    result.first_command = series.sent[0].time
    # The arm starts midway and the first move is half as long: the back-and-forth is then
    # symmetric from the start, and settled after one more move.
    first_move_end = result.first_command + TARGET_EVERY_S / 2
    result.clean_start = first_move_end + WARMUP_MOVES * TARGET_EVERY_S
    result.clean_end = result.clean_start + setup.clean_s
    rng = random.Random(f'{setup.seed}-{result.mode}-{hz}-{result.repeat}')
    delays = list(setup.delays_s)
    rng.shuffle(delays)
    next_target, target_index = first_move_end, 0
    earliest = result.clean_end
    deadline = result.clean_end + len(delays) * 6.0 + 10.0
    end_at: float | None = None
    while time.time() < deadline:
        if _dead(sim, node) or recorder.data.outcome is not None:
            return _dead(sim, node) or f'the episode ended early: {recorder.data.outcome}'
        now = time.time()
        if end_at is not None and now >= end_at:
            break
        if now >= next_target:
            target_index += 1
            recorder.set_target(TARGETS[target_index % len(TARGETS)])
            next_target += TARGET_EVERY_S
        if not delays and end_at is None and now >= earliest:
            end_at = next_target  # the phase ends with a whole move, as the clean one does
        speed = series.latest_speed(0.1) or 0.0
        if delays and now >= earliest and speed >= MOVING_RAD_S:
            result.pulses.append(_pulse(node, delays.pop(0)))
            earliest = result.pulses[-1].cont + PULSE_GAP_S + rng.uniform(0.0, 1.0 / hz)
            continue
        time.sleep(LOOP_S)
    else:
        return f'the arm did not move enough for every stop ({len(delays)} left)'
    result.end = time.time()
    recorder.stop_episode()
    _wait(lambda: recorder.data.outcome is not None, sim, node, timeout_s=5.0)
    return ''


def _pulse(node: ChildProcess, delay_s: float) -> Pulse:
    """Stop the node's process for `delay_s`, then let it go on."""
    pid = node.proc.pid
    try:
        os.kill(pid, signal.SIGSTOP)
        stop = time.time()
        time.sleep(delay_s)
    finally:
        cont = time.time()
        os.kill(pid, signal.SIGCONT)
    return Pulse(delay_s, stop, cont)


def _resume(child: ChildProcess) -> None:
    if child.running():
        os.kill(child.proc.pid, signal.SIGCONT)


def _wait(done: Any, *children: ChildProcess, timeout_s: float = STEP_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline or _dead(*children):
            return False
        time.sleep(0.05)
    return True


def _dead(*children: ChildProcess) -> str:
    for child in children:
        if not child.running():
            return f'{child.name} exited with code {child.proc.returncode}'
    return ''


def _child(setup: Setup, name: str, ns: str, module: str, ros_args: list[str],
           **env: str) -> ChildProcess:
    log = setup.log_dir / f'{ns.strip("/").replace("/", "_")}_{name}.log'
    return ChildProcess(name, module, ['--ros-args', '-r', f'__ns:={ns}', *ros_args],
                        ros_environment(setup.domain_id, env), log)
