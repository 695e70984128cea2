"""
Bad ROS input against the policy node as a real process: rows of the reliability matrix.

One node serves every input case: each case starts an episode, waits for motion, injects its
fault, then measures the time from the fault to the hold on the command topic, the commands
after the hold (0 until the next explicit start), the hold service call, and the node's log
(no traceback) and thread count. The robot is reset between cases.

Bound on the time to hold: how long the node may need to see the fault (an input's timeout,
or one period of the input that carries it) + one control period + MARGIN_S (DDS both ways
and a scheduler on a loaded two-core machine).
"""

from array import array
from collections.abc import Callable
from dataclasses import dataclass
import functools
import io
import math
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from fixtures_gateway import node_gateway_fixture
from PIL import Image as PILImage
import pytest
from ros_harness import (
    commands_after,
    CONTROL_PERIOD_S,
    final_hold,
    is_finite,
    log_faults,
    MOTION,
    moving_after,
    NODE_ENV,
    node_parameters,
    outcome_after,
    PolicyNodeProcess,
    process_counts,
    Robot,
    running_node,
    RunningNode,
    settled_counts,
    wait_until,
)
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros.harness.fault_matrix import FaultMatrix, FaultRow
from std_msgs.msg import String

ERROR = DiagnosticStatus.ERROR
MARGIN_S = 0.5
SETTLE_S = 0.6  # after the hold: long enough for a stray command to show up
JOINT_TIMEOUT_S, CAMERA_TIMEOUT_S = 0.5, 1.0
JOINT_PERIOD_S, CAMERA_PERIOD_S = 1 / 50, 1 / 10  # the Robot's publishing rates
TOPICS = ['camera/exterior/image_raw', 'camera/wrist/image_raw/compressed']


gateway = node_gateway_fixture(0.4)


@pytest.fixture(scope='module')
def node(ros, gateway):
    """Run one node for every case: exterior camera raw, wrist compressed, explicit starts."""
    robot = Robot(ros.node, 'faults', compressed=(False, True), stamp_frames=True,
                  watch_diagnostics=True)
    with running_node(robot, 'faults', node_parameters(
            base_url=gateway.base_url, max_actions=10**6, start_on_activate=False,
            camera_topics=TOPICS, camera_transports=['raw', 'compressed'],
            joint_state_timeout_s=JOINT_TIMEOUT_S, camera_timeout_s=CAMERA_TIMEOUT_S)) as node:
        yield node


# -- faults that must end the episode holding ------------------------------------------------

@dataclass(frozen=True)
class Fault:
    case: str
    inject: Callable[[Robot], None]
    seen_within_s: float  # how long the node may need to notice it
    reason: str  # part of the episode's end reason


def nan_joint(robot: Robot) -> None:
    robot.follow = False  # or the next command would overwrite the NaN before it is sent
    robot.positions[2] = math.nan


def inf_joint(robot: Robot) -> None:
    robot.follow = False
    robot.positions[5] = math.inf


def extra_name(robot: Robot) -> None:
    robot.names = robot.names + ['extra_joint']


def renamed_joint(robot: Robot) -> None:
    robot.names = [name if i != 3 else 'elbow_typo' for i, name in enumerate(robot.names)]


def joints_stop(robot: Robot) -> None:
    robot.publish_joints = False


def cameras_stop(robot: Robot) -> None:
    robot.publish_cameras = False


def joints_back_in_time(robot: Robot) -> None:
    robot.joint_stamp_shift_s = -5.0


def frames_back_in_time(robot: Robot) -> None:
    robot.frame_stamp_shift_s = -5.0


def unsupported_encoding(robot: Robot) -> None:
    robot.frame_overrides = {0: Image(width=160, height=120, encoding='16UC1', step=320,
                                      data=array('B', bytes(320 * 120)))}


def huge_image(robot: Robot) -> None:
    robot.frame_overrides = {1: CompressedImage(format='png', data=array('B', huge_png()))}


@functools.lru_cache(maxsize=1)
def huge_png() -> bytes:
    # A raw 8000x6000 frame (144 MB) is not delivered by best-effort DDS at all (nothing over
    # ~0.5 MB arrives here), so the huge frame comes compressed: 150 kB of PNG.
    buffer = io.BytesIO()
    PILImage.new('RGB', (8000, 6000), (40, 40, 40)).save(buffer, 'PNG')
    return buffer.getvalue()


FAULTS = [
    Fault('joint_states position NaN', nan_joint, JOINT_PERIOD_S, 'non-finite panda_joint3'),
    Fault('joint_states position +inf', inf_joint, JOINT_PERIOD_S, 'non-finite panda_joint6'),
    Fault('joint_states with 9 names for 8 positions', extra_name, JOINT_PERIOD_S,
          '9 names but 8 positions'),
    Fault('joint_states lacking a joint (renamed)', renamed_joint, JOINT_PERIOD_S,
          'lacks panda_joint4'),
    Fault('joint_states stop', joints_stop, JOINT_TIMEOUT_S + JOINT_PERIOD_S,
          'joint_states is'),
    Fault('cameras stop', cameras_stop, CAMERA_TIMEOUT_S + CAMERA_PERIOD_S, 'camera/'),
    Fault('joint_states stamped older than the last (clock 5 s back)', joints_back_in_time,
          JOINT_TIMEOUT_S + JOINT_PERIOD_S, 'stamped older than the last accepted'),
    Fault('camera frames stamped older than the last (clock 5 s back)', frames_back_in_time,
          CAMERA_TIMEOUT_S + CAMERA_PERIOD_S, 'stamped older than the last accepted'),
    Fault('unsupported image encoding (16UC1)', unsupported_encoding, CAMERA_PERIOD_S,
          "unsupported image encoding '16UC1'"),
    Fault('huge image (8000x6000 PNG)', huge_image, CAMERA_PERIOD_S,
          'exceeds the 4096-pixel side limit'),
]


@pytest.mark.parametrize('fault', FAULTS, ids=lambda f: f.case)
def test_bad_input_holds_within_a_control_period(node, fault_matrix, fault):
    robot = node.robot
    if fault.inject is huge_image:
        huge_png()  # build it (0.5 s) before the clock starts
    index, before = node.run_episode()
    faulted = time.monotonic()
    fault.inject(robot)
    result = outcome_after(robot, index, fault.seen_within_s + 10)
    assert result is not None, node.process.log()[-3000:]
    held = final_hold(robot, faulted)
    hold_calls = wait_until(lambda: [t for t in robot.hold_times if t > faulted], 3)
    reported = wait_until(lambda: [t for t, status in robot.diagnostics if t > faulted and
                                   status.name.endswith('inputs') and status.level == ERROR], 5)
    time.sleep(SETTLE_S)
    sent = commands_after(robot, faulted)
    after_hold = commands_after(robot, held) if held else sent
    unsafe = sum(not is_finite(msg) for _, msg in sent) + moving_after(robot, held or faulted)
    after = settled_counts(node.pid, before)
    bound = fault.seen_within_s + CONTROL_PERIOD_S + MARGIN_S
    fault_matrix.record(FaultRow(
        area='ROS input', case=fault.case,
        outcome=f'episode ends holding ({result["outcome"]}): {result["reason"]}',
        time_to_hold_s=None if held is None else round(held - faulted, 3),
        commands_after_fault=len(after_hold), unsafe_commands=unsafe,
        threads=(before[0], after[0]), sockets=(before[1], after[1]),
        extra={'bound_s': round(bound, 3),
               'hold_service_s': round(hold_calls[0] - faulted, 3) if hold_calls else None,
               'diagnostics_error_s': round(reported[0] - faulted, 3) if reported else None}))
    assert result['outcome'] == 'safety' and fault.reason in result['reason'], \
        (result, ('gap, from fault-5', robot.joint_gap_at(faulted - 5)))
    assert held is not None, 'the last command is not a hold'
    assert held - faulted <= bound, (held - faulted, bound)
    assert hold_calls, 'the hold service was not called'
    assert reported, '/diagnostics did not report the inputs as an error'
    assert after_hold == [], 'published after the hold'
    assert unsafe == 0
    assert after[0] <= before[0], 'request threads outlived the episode'
    node.healthy()


# -- faults with a documented outcome other than a hold -----------------------------------------

def stop_and_measure(node: RunningNode, index: int) -> tuple[float, int]:
    """Stop the episode explicitly; return (seconds to the hold, commands after the hold)."""
    robot = node.robot
    stopped = time.monotonic()
    answer = robot.stop_episode()
    assert answer.success, (answer.message, robot.outcomes[index:],
                            ('gap, from stop-30', robot.joint_gap_at(stopped - 30)))
    result = outcome_after(robot, index, 10)
    assert result is not None and result['reason'] == 'stop requested', result
    held = final_hold(robot, stopped)
    assert held is not None, 'no hold after the stop'
    time.sleep(SETTLE_S)
    return held - stopped, len(commands_after(robot, held))


def went_on_then_stopped(node: RunningNode, index: int, before: Any, faulted: float,
                         fault_matrix: FaultMatrix, case: str,
                         outcome: str) -> tuple[bool, bool, bool, float, int]:
    """
    Watch an episode go on after a fault, stop it, and record the row.

    Returns whether it moved, whether it ended early, whether every command was finite, and
    stop_and_measure's two numbers.
    """
    robot = node.robot
    moved = bool(wait_until(lambda: moving_after(robot, faulted) >= 3 * MOTION, 10))
    ended_early = len(robot.outcomes) > index
    moving = moving_after(robot, faulted)
    finite = all(is_finite(msg) for _, msg in commands_after(robot, faulted))
    to_hold, after_hold = stop_and_measure(node, index)
    after = settled_counts(node.pid, before)
    fault_matrix.record(FaultRow(
        area='ROS input', case=case, outcome=outcome, time_to_hold_s=None,
        commands_after_fault=after_hold, unsafe_commands=0 if finite else 1,
        threads=(before[0], after[0]), sockets=(before[1], after[1]),
        extra={'moving_commands_after_fault': moving, 'stop_to_hold_s': round(to_hold, 3)}))
    return moved, ended_early, finite, to_hold, after_hold


def test_a_joint_state_older_than_the_last_is_dropped(node, fault_matrix):
    """Stamped 1 s in the past and carrying NaN: if it were used, the episode would end."""
    robot = node.robot
    index, before = node.run_episode()
    old = JointState(name=list(robot.names), position=[math.nan] * len(robot.names))
    old.header.stamp = robot.stamp(-1.0)
    faulted = time.monotonic()
    robot.inject(robot.joint_pub, old)
    moved, ended_early, finite, to_hold, after_hold = went_on_then_stopped(
        node, index, before, faulted, fault_matrix,
        case='one joint state older than the last (carrying NaN)',
        outcome='dropped (stamp older than the last accepted); the episode goes on; an '
                'explicit stop then holds')
    assert moved and not ended_early, 'the old message was used'
    assert finite
    assert to_hold <= CONTROL_PERIOD_S + MARGIN_S
    assert after_hold == 0
    node.healthy()


def test_an_empty_instruction_is_refused_and_the_task_stays(node, fault_matrix):
    robot = node.robot
    index, before = node.run_episode()
    faulted = time.monotonic()
    results = robot.set_parameters(instruction='   ')
    robot.instruction_pub.publish(String(data=''))
    moved, ended_early, finite, to_hold, after_hold = went_on_then_stopped(
        node, index, before, faulted, fault_matrix,
        case='empty instruction (parameter and topic) mid-episode',
        outcome='parameter set refused with a reason; topic message ignored with a warning; '
                'the episode goes on with the previous task')
    kept = robot.get_parameter('instruction').string_value
    assert not results[0].successful and 'instruction must not be empty' in results[0].reason
    assert kept == 'reach the red disc'
    assert moved and not ended_early
    assert wait_until(lambda: 'ignored an empty instruction' in node.process.log(), 5)
    assert finite and to_hold <= CONTROL_PERIOD_S + MARGIN_S and after_hold == 0
    node.healthy()


# -- parameters ----------------------------------------------------------------------------

def configure_failure(process: PolicyNodeProcess, seen: int) -> str:
    """Return the newest 'configure failed' line after the first `seen` ones, waiting for it."""
    def lines():
        return [ln for ln in process.log().splitlines() if 'configure failed' in ln]
    assert wait_until(lambda: len(lines()) > seen, 5), process.log()
    return lines()[-1]


def test_bad_parameters_fail_configure_naming_them_until_set(ros, gateway, fault_matrix):
    """A wrong type and an out-of-range value in the parameter file, and no instruction."""
    robot = Robot(ros.node, 'params')
    process = PolicyNodeProcess('params', node_parameters(
        base_url=gateway.base_url, max_actions='many', jpeg_quality=50, instruction='',
        start_on_activate=False), NODE_ENV)
    try:
        assert wait_until(robot.change_client.service_is_ready, 20), process.log()
        before = process_counts(process.proc.pid)
        assert not robot.configure()
        first = configure_failure(process, 0)
        assert robot.state() == 'unconfigured'
        # Setting a wrong type or range is refused by rclpy's descriptors: typed, at once.
        refused = robot.set_parameters(max_actions='many', jpeg_quality=50)
        assert [r.successful for r in refused] == [False, False]
        assert robot.set_parameters(max_actions=10**6)[0].successful
        assert not robot.configure()
        second = configure_failure(process, 1)
        assert robot.set_parameters(jpeg_quality=92)[0].successful
        assert robot.configure(), process.log()
        assert robot.activate(), process.log()
        # Read at configure: refused while active, with a reason; rclpy's own are not ours.
        late = robot.set_parameters(max_actions=5)[0]
        sim_time = robot.set_parameters(use_sim_time=False)[0]
        unstarted = robot.start_episode()
        time.sleep(SETTLE_S)
        silent = robot.command_list() == []
        assert robot.set_parameters(instruction='reach the red disc')[0].successful
        started = time.monotonic()
        assert robot.start_episode().success
        assert wait_until(lambda: moving_after(robot, started) >= MOTION, 20), process.log()
        assert robot.stop_episode().success
        held = final_hold(robot, started)
        after = settled_counts(process.proc.pid, before)
        counts = {'threads': (before[0], after[0]), 'sockets': (before[1], after[1])}
        common = 'process keeps running; configure fails naming it and the node stays ' \
                 'unconfigured; setting it to a good value lets configure succeed'
        fault_matrix.record(FaultRow(
            area='ROS input', case='parameter of the wrong type (max_actions: many)',
            outcome=f'{common}; set_parameters with the wrong type is refused', **counts,
            commands_after_fault=0 if silent else len(robot.command_list())))
        fault_matrix.record(FaultRow(
            area='ROS input', case='parameter out of range (jpeg_quality: 50)',
            outcome=f'{common}; set_parameters out of range is refused', **counts,
            commands_after_fault=0 if silent else len(robot.command_list())))
        fault_matrix.record(FaultRow(
            area='ROS input', case='no instruction at episode start',
            outcome='start_episode refused naming the instruction parameter; nothing published',
            commands_after_fault=0 if silent else len(robot.command_list()), **counts))
        assert 'max_actions' in first and 'jpeg_quality' in first, first
        assert 'max_actions' not in second and 'jpeg_quality' in second, second
        assert not late.successful and 'read at configure' in late.reason
        assert sim_time.successful, sim_time.reason
        assert not unstarted.success and 'instruction' in unstarted.message
        assert silent, 'moved without an instruction'
        assert held is not None
        assert process.proc.poll() is None
        assert log_faults(process.log()) == [], process.log()
    finally:
        robot.close()
        process.stop()
