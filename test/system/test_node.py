"""The policy node as a real process, over real DDS, against the local gateway process."""

import itertools
import json
import math
from pathlib import Path
import statistics
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from fixtures_gateway import gateway_fixture, TEST_DIR
import pytest
from ros_harness import (
    CONTROL_PERIOD_S,
    is_final_rest,
    is_hold,
    node_parameters,
    PolicyNodeProcess,
    REPO,
    Robot,
    status_values,
    statuses_after,
    wait_until,
)
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.fault_matrix import FaultRow
from sequence_ai_ros.world import arm_model
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

KEY = 'seq_node_tests_key_0000000000001'
ENV = {'SEQUENCES_API_KEY': KEY}
SCALE = 0.2  # pi05-droid: 15 steps at 75 Hz, a 0.2 s chunk, ~0.16 s latency
_names = (f'arm{i}' for i in itertools.count())


gateway = gateway_fixture(
    ['--time-scale', str(SCALE), '--start-warm', '--latency-median-s', '0.4'], keys={KEY: 10**6},
    doc="Latency 0.4 of a pi05-droid chunk: room for a loaded machine's jitter at this scale.")


slow_gateway = gateway_fixture(
    ['--time-scale', str(SCALE), '--start-warm', '--latency-median-s', '1.5'],
    name='slow_gateway', keys={KEY: 10**6},
    doc='Latency above a chunk: a refill-when-empty node underruns at every boundary.')


@pytest.fixture
def launch(ros):
    """Start a policy node in a fresh namespace with a test-side robot; stop it afterwards."""
    started, robots = [], []

    def start(gw, namespace=None, compressed=False, watch_diagnostics=False, **params):
        namespace = namespace or next(_names)
        robot = Robot(ros.node, namespace, compressed=compressed,
                      watch_diagnostics=watch_diagnostics)
        robots.append(robot)
        process = PolicyNodeProcess(namespace, node_parameters(base_url=gw.base_url, **params),
                                    ENV)
        started.append(process)
        wait_until(lambda: robot.change_client.service_is_ready(), 10)
        return robot, process
    yield start
    for robot in robots:
        robot.close()
    for process in started:
        process.stop()
        assert KEY not in process.log(), 'the API key reached the log'


def bring_up(robot, process):
    assert robot.configure(), process.log()
    assert robot.activate(), process.log()


def outcome(robot, timeout=20.0):
    assert wait_until(lambda: robot.outcomes, timeout), 'no episode outcome published'
    return json.loads(robot.outcomes[0])


def points(robot):
    return [msg.points[0] for _, msg in robot.command_list()]


def test_commands_arrive_at_control_rate_in_joint_order(gateway, launch):
    robot, process = launch(gateway, max_actions=60)
    bring_up(robot, process)
    result = outcome(robot)
    assert result['outcome'] == 'completed' and result['actions'] == 60
    assert result['underruns'] == 0 and result['holds'] == 0
    # 60 steps, then the episode ends at rest at its last target (no hold service call).
    assert wait_until(lambda: len(robot.command_list()) == 61, 5)
    commands = robot.command_list()
    final = commands.pop()[1].points[0]
    assert is_hold(final) and list(final.positions) == list(commands[-1][1].points[0].positions)
    assert not any(is_hold(msg.points[0]) for _, msg in commands)
    layout = list(arm_model.JOINT_NAMES) + [arm_model.GRIPPER_JOINT]
    assert all(list(msg.joint_names) == layout for _, msg in commands)
    periods = [b[0] - a[0] for a, b in zip(commands, commands[1:])]
    assert abs(statistics.median(periods) - SCALE / 15) < 0.3 * SCALE / 15
    first = commands[0][1].points[0]
    assert all(math.isfinite(v) for v in first.positions) and not is_hold(first)
    # Velocity actions become positions integrated from the measured state.
    home = list(arm_model.HOME)
    assert max(abs(p - h) for p, h in zip(first.positions, home)) < 0.1
    assert robot.holds == 0
    assert robot.state() == 'active'
    time.sleep(0.3)
    assert len(robot.command_list()) == 61, 'published after the episode ended'


def test_underrun_holds_calls_hold_service_then_resumes(slow_gateway, launch):
    robot, process = launch(slow_gateway, max_actions=45, prefetch=False)
    bring_up(robot, process)
    result = outcome(robot, timeout=30)
    assert result['outcome'] == 'completed' and result['actions'] == 45
    assert result['underruns'] >= 2
    # Every underrun holds; the completed episode then comes to rest at its last target.
    assert wait_until(lambda: len(points(robot)) >= 45 + result['underruns'] + 1, 5)
    sent = points(robot)
    assert is_hold(sent[-1]) and list(sent[-1].positions) == list(sent[-2].positions)
    sent = sent[:-1]
    holds = [i for i, p in enumerate(sent) if is_hold(p)]
    assert len(holds) == result['underruns']
    assert robot.holds == len(holds), 'the hold service was not called on every hold'
    assert holds[-1] < len(sent) - 1, 'motion did not resume after the hold'
    assert len(sent) - len(holds) == 45


@pytest.mark.parametrize('fault', ['joint_states', 'camera', 'nan', 'gate'])
def test_input_faults_end_the_episode_holding(gateway, launch, fault):
    extra = {'max_actions': 100000}
    if fault == 'gate':
        extra['safety_gate_topic'] = 'safety_gate'
    robot, process = launch(gateway, **extra)
    gate_open = [True]
    if fault == 'gate':
        robot.every(0.02, lambda: robot.gate_pub.publish(Bool(data=gate_open[0])))
    bring_up(robot, process)
    assert wait_until(lambda: len(robot.command_list()) > 20, 10), process.log()
    if fault == 'joint_states':
        robot.publish_joints = False
    elif fault == 'camera':
        robot.publish_cameras = False
    elif fault == 'nan':
        robot.follow = False
        robot.positions[2] = float('nan')
    else:
        gate_open[0] = False
    faulted = time.monotonic()
    holds_before = robot.holds  # a jittery boundary may already have held once
    result = outcome(robot, timeout=10)
    assert result['outcome'] == 'safety' and result['stopped_early']
    expected = {'joint_states': 'joint_states', 'camera': 'camera/', 'nan': 'non-finite',
                'gate': 'safety gate'}[fault]
    assert expected in result['reason']
    # The hold and the outcome travel on different topics: wait for the hold itself.
    assert wait_until(lambda: is_hold(robot.command_list()[-1][1].points[0]), 3), \
        (result, points(robot)[-3:])
    commands = robot.command_list()
    last_time, last = commands[-1]
    hold = last.points[0]
    assert all(math.isfinite(v) for v in hold.positions)
    assert wait_until(lambda: robot.holds == holds_before + 1, 2)
    time.sleep(0.5)
    assert len(robot.command_list()) == len(commands), 'published after the stop'
    limit = {'joint_states': 0.5, 'camera': 1.0}.get(fault, 0.0) + 0.5
    assert last_time - faulted < limit, (result, last_time - faulted)


def test_action_outside_limits_ends_holding_and_is_never_sent(gateway, launch):
    lower = [float(v) for v in arm_model.LOWER_LIMITS] + [0.0]
    upper = [float(v) for v in arm_model.UPPER_LIMITS] + [1.0]
    lower[1], upper[1] = float(arm_model.HOME[1]) - 1e-3, float(arm_model.HOME[1]) + 1e-3
    robot, process = launch(gateway, **{'position_limits.lower': lower,
                                        'position_limits.upper': upper})
    bring_up(robot, process)
    result = outcome(robot)
    assert result['outcome'] == 'safety' and 'above its upper limit' in result['reason'] or \
        'below its lower limit' in result['reason']
    assert 'panda_joint2' in result['reason']
    sent = points(robot)
    assert sent and all(is_hold(p) for p in sent), 'an unsafe action reached the topic'
    assert all(lower[1] <= p.positions[1] <= upper[1] for p in sent)


def test_wrong_joint_name_fails_configure_naming_it(gateway, launch):
    names = list(arm_model.JOINT_NAMES)
    names[3] = 'elbow_typo'
    robot, process = launch(gateway, joint_names=names)
    assert not robot.configure()
    assert robot.state() == 'unconfigured'
    assert 'elbow_typo' in process.log()
    assert robot.command_list() == []


def test_unusable_parameters_fail_configure_naming_them(gateway, launch):
    robot, process = launch(gateway, camera_topics=['only/one'])
    assert not robot.configure()
    assert 'camera_topics' in process.log()


def test_diagnostics_levels_and_values(gateway, launch, ros):
    arrays = []
    robot, process = launch(gateway, max_actions=100000)
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', arrays.append, 50)
    bring_up(robot, process)
    prefix = f'{robot.ns[1:]}.policy_node' if False else 'policy_node'

    def mine():
        return [s for array in arrays for s in array.status
                if s.hardware_id.startswith(robot.ns)]
    assert wait_until(lambda: any('episode' in s.name and s.level == DiagnosticStatus.OK
                                  for s in mine()), 10), process.log()
    ok = {s.name.split(': ')[-1]: s for s in mine()[-4:]}
    assert set(ok) == {'gateway', 'buffer', 'inputs', 'episode'}
    assert all(s.name.startswith(prefix) for s in ok.values())
    values = {kv.key: kv.value for kv in ok['buffer'].values}
    assert values, 'buffer status carries no values'
    robot.publish_joints = False
    outcome(robot, timeout=10)
    assert wait_until(lambda: any('episode' in s.name and s.level == DiagnosticStatus.ERROR
                                  for s in mine()), 5)
    assert wait_until(lambda: any('inputs' in s.name and s.level == DiagnosticStatus.ERROR
                                  for s in mine()), 5)
    for status in mine():
        assert KEY not in status.message
        assert all(KEY not in kv.value for kv in status.values)


def test_two_namespaced_nodes_drive_two_arms_independently(gateway, launch):
    left, left_process = launch(gateway, namespace='left_arm', max_actions=45)
    right, right_process = launch(gateway, namespace='right_arm', max_actions=45)
    left.positions[0], right.positions[0] = -0.5, 0.5
    time.sleep(0.3)
    before = gateway.stats()['connections']
    bring_up(left, left_process)
    bring_up(right, right_process)
    for robot in (left, right):
        result = outcome(robot)
        assert result['outcome'] == 'completed', result
    for robot in (left, right):  # commands and outcome travel on different topics
        assert wait_until(lambda r=robot: len([p for p in points(r) if not is_hold(p)]) == 45,
                          5)
    assert abs(points(left)[0].positions[0] + 0.5) < 0.1
    assert abs(points(right)[0].positions[0] - 0.5) < 0.1
    assert gateway.stats()['connections'] - before <= 2 * 2


def test_deactivate_mid_request_holds_and_then_is_silent(slow_gateway, launch):
    robot, process = launch(slow_gateway, max_actions=100000)
    bring_up(robot, process)
    time.sleep(0.1)  # the first request is in flight (latency ~0.3 s)
    assert robot.deactivate()
    result = outcome(robot)
    assert result['reason'] == 'deactivated'
    sent = points(robot)
    assert sent and is_hold(sent[-1])
    count = len(sent)
    time.sleep(1.0)  # the request in flight lands now: it must not be played
    assert len(points(robot)) == count
    assert robot.state() == 'inactive'


def test_stop_and_start_services(gateway, launch):
    robot, process = launch(gateway, max_actions=100000, start_on_activate=False)
    bring_up(robot, process)
    time.sleep(0.3)
    assert robot.command_list() == [], 'moved without an explicit start'
    from std_srvs.srv import Trigger
    assert robot.call(robot.start_client, Trigger.Request()).success
    assert wait_until(lambda: len(robot.command_list()) > 10, 10)
    assert robot.call(robot.stop_client, Trigger.Request()).success
    result = outcome(robot)
    assert result['reason'] == 'stop requested'
    count = len(robot.command_list())
    assert is_hold(points(robot)[-1])
    time.sleep(0.3)
    assert len(robot.command_list()) == count
    assert robot.call(robot.start_client, Trigger.Request()).success
    assert wait_until(lambda: len(robot.command_list()) > count + 5, 10)


def test_compressed_cameras_drive_an_episode(gateway, launch):
    topics = ['camera/exterior/image_raw/compressed', 'camera/wrist/image_raw/compressed']
    robot, process = launch(gateway, compressed=True, max_actions=45, camera_topics=topics,
                            camera_transports=['compressed', 'compressed'])
    bring_up(robot, process)
    result = outcome(robot)
    assert result['outcome'] == 'completed' and result['actions'] == 45, result


def test_instruction_changes_at_run_time(gateway, launch, ros):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import GetParameters, SetParameters
    from std_msgs.msg import String
    robot, process = launch(gateway, max_actions=100000)
    bring_up(robot, process)
    setter = ros.node.create_client(SetParameters, f'{robot.ns}/policy_node/set_parameters')
    getter = ros.node.create_client(GetParameters, f'{robot.ns}/policy_node/get_parameters')
    request = SetParameters.Request(parameters=[Parameter(
        name='instruction', value=ParameterValue(type=ParameterType.PARAMETER_STRING,
                                                 string_value='stack the blocks'))])
    assert robot.call(setter, request).results[0].successful
    answer = robot.call(getter, GetParameters.Request(names=['instruction']))
    assert answer.values[0].string_value == 'stack the blocks'
    publisher = ros.node.create_publisher(String, f'{robot.ns}/instruction', 10)
    publisher.publish(String(data='open the drawer'))
    # A new instruction changes the requests, not the motion's continuity.
    count = len(robot.command_list())
    assert wait_until(lambda: len(robot.command_list()) > count + 20, 10)
    assert robot.outcomes == []
    ros.node.destroy_publisher(publisher)
    ros.node.destroy_client(setter)
    ros.node.destroy_client(getter)


def test_a_model_the_node_cannot_command_fails_configure(tmp_path, launch):
    catalogue = json.loads((Path(REPO) / 'sequence_ai_ros/gateway/catalogue.json').read_text())
    entry = dict(catalogue['models'][0], name='ee-pose-policy', action_space='ee_absolute')
    catalogue['models'] = [entry]
    path = tmp_path / 'catalogue.json'
    path.write_text(json.dumps(catalogue))
    with GatewayProcess(['--time-scale', '0.2', '--start-warm', '--catalogue', str(path),
                         '--policy', 'fixtures_gateway:make_plugin_policy'], keys={KEY: 100},
                        import_paths=[TEST_DIR]) as gw:
        robot, process = launch(gw, model='ee-pose-policy')
        assert not robot.configure()
        assert "'ee_absolute' cannot be commanded" in process.log()
        assert robot.command_list() == []
        assert gw.stats()['requests'].get('/v1/act') is None, 'configure must not act'


def _stop_holding(robot, process):
    """Run an episode until it moves, stop it; return the monotonic time of the stop."""
    bring_up(robot, process)
    assert wait_until(lambda: len(robot.command_list()) > 10, 10), process.log()
    stopped = time.monotonic()
    assert robot.stop_episode().success
    return stopped


def test_a_hold_service_that_appears_late_is_still_called(gateway, launch, ros, fault_matrix):
    robot, process = launch(gateway, max_actions=100000, hold_service='robot/late_hold',
                            hold_service_timeout_s=5.0)
    calls = []

    def on_hold(request, response):
        calls.append(time.monotonic())
        response.success = True
        return response
    stopped = _stop_holding(robot, process)
    time.sleep(0.5)  # the hold has been published; the service is not there yet
    assert calls == []
    assert is_hold(robot.command_list()[-1][1].points[0])
    commands = len(robot.command_list())
    service = ros.node.create_service(Trigger, f'{robot.ns}/robot/late_hold', on_hold)
    try:
        called = wait_until(lambda: calls, 5)
        fault_matrix.record(FaultRow(
            area='hold service', case='the hold service appears 0.5 s after a hold',
            outcome='the hold command is published at once; the service is called when it '
                    'appears (waited for up to hold_service_timeout_s, 5 s here)',
            commands_after_fault=len(robot.command_list()) - commands,
            extra={'service_called_after_stop_s': round(calls[0] - stopped, 3)
                   if calls else None}))
        assert called, process.log()
        assert len(calls) == 1 and calls[0] - stopped > 0.5
        assert 'hold service' not in process.log()
    finally:
        ros.node.destroy_service(service)


@pytest.mark.parametrize('case', ['absent', 'refusing'])
def test_a_hold_service_that_fails_is_an_error_on_diagnostics(gateway, launch, ros, case,
                                                              fault_matrix):
    robot, process = launch(gateway, max_actions=100000, hold_service='robot/brake',
                            hold_service_timeout_s=0.3, watch_diagnostics=True)
    service = None
    if case == 'refusing':
        def refuse(request, response):
            response.success, response.message = False, 'brake not engaged'
            return response
        service = ros.node.create_service(Trigger, f'{robot.ns}/robot/brake', refuse)
    try:
        stopped = _stop_holding(robot, process)
        expected = 'is not available' if case == 'absent' else 'refused: brake not engaged'

        def reported():
            return [(t, s) for t, s in statuses_after(robot, stopped, 'episode')
                    if expected in s.message]
        seen = wait_until(reported, 5)
        shown = [s for _, s in seen or []]
        fault_matrix.record(FaultRow(
            area='hold service',
            case={'absent': 'the hold service never appears (hold_service_timeout_s 0.3)',
                  'refusing': 'the hold service answers success: false'}[case],
            outcome='the hold command is published; ERROR on the episode status of '
                    '/diagnostics and in the log, naming the service',
            commands_after_fault=0 if is_hold(robot.command_list()[-1][1].points[0]) else 1,
            extra={'diagnostics_error_after_stop_s':
                   round(seen[0][0] - stopped, 3) if seen else None}))
        assert shown, process.log()
        assert shown[0].level == DiagnosticStatus.ERROR
        values = status_values(shown[0])
        assert values['hold service failures'] == '1'
        assert values['hold service'] == f'{robot.ns}/robot/brake'
        assert expected in process.log()
    finally:
        if service is not None:
            ros.node.destroy_service(service)


def test_every_ending_after_a_completed_episode_keeps_the_node_up(gateway, launch):
    """A completed episode, then a stopped one, then stop with none running: still up."""
    robot, process = launch(gateway, max_actions=20)
    bring_up(robot, process)
    first = outcome(robot)
    assert first['outcome'] == 'completed', first
    # The next episode runs long and is stopped: the other severity of the same log line.
    assert robot.set_parameters(instruction='reach the red disc again')[0].successful
    assert robot.call(robot.start_client, Trigger.Request()).success
    started = time.monotonic()
    assert wait_until(lambda: any(t > started for t, _ in robot.command_list()), 10)
    assert robot.call(robot.stop_client, Trigger.Request()).success
    assert wait_until(lambda: len(robot.outcomes) == 2, 10), process.log()[-3000:]
    assert json.loads(robot.outcomes[1])['outcome'] in ('stopped', 'completed')
    answer = robot.call(robot.stop_client, Trigger.Request())
    assert not answer.success and 'no episode' in answer.message
    assert robot.call(robot.start_client, Trigger.Request()).success
    assert wait_until(lambda: len(robot.outcomes) == 3, 20), process.log()[-3000:]
    assert process.proc.poll() is None, process.log()[-3000:]
    assert robot.state() == 'active'
    assert 'Traceback' not in process.log(), process.log()[-3000:]


def _accepted_by_stock_jtc(messages, distro='jazzy'):
    """Return the reasons a stock JTC (the arm's 7 joints, defaults) gives to refuse any."""
    from dataclasses import replace

    from sequence_ai_ros.sim import jtc_rules
    from sequence_ai_ros.sim.messages import trajectory_from_msg
    params = replace(jtc_rules.defaults(distro), joints=tuple(arm_model.JOINT_NAMES),
                     command_interfaces=('position',))
    reasons = [jtc_rules.validate_trajectory(trajectory_from_msg(msg), params, 0.0)
               for msg in messages]
    return [r for r in reasons if r is not None]


@pytest.mark.parametrize('mode', ['trajectory_stream', 'trajectory_plan'])
def test_every_command_is_one_a_stock_controller_accepts(gateway, launch, mode):
    """The gripper on its own controller: the arm's messages name the arm's joints only."""
    robot, process = launch(gateway, max_actions=100000, start_on_activate=False,
                            output_mode=mode, gripper_interface='trajectory',
                            gripper_controller='gripper_trajectory_controller',
                            check_controller=False, plan_ahead_s=0.1)
    bring_up(robot, process)
    assert robot.call(robot.start_client, Trigger.Request()).success
    assert wait_until(lambda: len(robot.command_list()) > 30, 10), process.log()[-3000:]
    stop_asked = time.monotonic()
    assert robot.call(robot.stop_client, Trigger.Request()).success
    outcome(robot)
    time.sleep(0.3)
    commands = robot.command_list()
    assert _accepted_by_stock_jtc([msg for _, msg in commands]) == []
    assert all(list(msg.joint_names) == list(arm_model.JOINT_NAMES) for _, msg in commands)
    sizes = {len(msg.points) for _, msg in commands}
    if mode == 'trajectory_plan':
        # 0.1 s ahead at a 0.0133 s period: 7 points (fewer only near the plan's end).
        assert max(sizes) == 7, sizes
    else:
        assert {len(msg.points) for _, msg in commands[:-1]} == {1}
    # The hold comes within one control period of the stop, and it is the last message: the
    # episode's final one, resting at its point (arm_output.FINAL_REST_S).
    after = [(t, msg) for t, msg in commands if t > stop_asked]
    assert after and is_hold(after[-1][1].points[0]) and is_final_rest(after[-1][1])
    assert after[0][0] - stop_asked < CONTROL_PERIOD_S + 0.1


rtc_gateway = gateway_fixture(
    ['--time-scale', '0.5', '--start-warm', '--latency-median-s', '0.15'], name='rtc_gateway',
    keys={KEY: 10**6},
    doc="Latency well below every chunk at a time scale where the node's overheads stay small.")


@pytest.mark.parametrize('model', ['pi05-droid', 'cosmos3-edge-policy-droid', 'lingbot-va-5b',
                                   'lingbot-vla-v2-6b'])
def test_rtc_join_drives_an_episode_with_prefixed_requests(rtc_gateway, launch, model):
    """join_mode rtc through the node: requests carry the prefix, the gateway honours it."""
    from sequence_ai_ros.gateway.catalogue import load_catalogue
    actions = 6 * load_catalogue().get(model).action_horizon
    # v1: the direct act carries no prefix (the client joins 'aligned' there instead).
    robot, process = launch(rtc_gateway, model=model, max_actions=actions, join_mode='rtc',
                            smooth_seam=4, max_step_change=1.0, protocol='v1')
    bring_up(robot, process)
    result = outcome(robot, timeout=60)
    assert result['outcome'] == 'completed' and result['actions'] == actions, result
    assert result['prefixes_sent'] >= 1, result
    assert result['rtc_fallback'] is False, result
    assert result['prefix_violations'] == 0, result
