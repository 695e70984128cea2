"""
PolicyNode: a lifecycle node between sensors and a joint_trajectory_controller.

configure  read and check parameters, open the Policy (one kept-alive connection), check the
           joint names against joint_states and the model against the catalogue, create
           subscriptions and publishers
activate   start the control timer (and an episode, if start_on_activate)
deactivate publish a hold first, then stop; cleanup closes the connection
"""

import json
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, JointState
import sequence_ai_ros as sai
from sequence_ai_ros.client.config import read_credentials_file
from sequence_ai_ros.contract.key_masking import redact
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from .commands import Command, supported_action_space
from .controller_check import ask_controller, check_controller
from .diagnostics import build_statuses, diagnostic_array, Health
from .episode import COMMAND, END, Episode, HOLD
from .guard import CallbackGuard, refuse_service
from .hold_call import HoldServiceCall
from .inputs import CameraInput, InputCache
from .lifecycle_guard import guard_change_state
from .outputs import CommandOutputs
from .params import (
    ConfigError,
    CONFIGURE_PARAMETERS,
    declare_parameters,
    NodeConfig,
    read_config,
)
from .probe import wait_for_message

# The default trajectory topic (controller_name joint_trajectory_controller), for remapping.
COMMAND_TOPIC = 'joint_trajectory_controller/joint_trajectory'
INTERNAL_ERROR = 'internal error: see the node log and /diagnostics'
SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE


class PolicyNode(LifecycleNode):
    """Drives a joint_trajectory_controller from a cloud policy, holding when in doubt."""

    def __init__(self, node_name: str = 'policy_node', **kwargs: Any) -> None:
        # Before the base class: it creates the parameter services through create_service.
        self._guard = CallbackGuard(lambda: self.get_logger(), self._on_fault)
        super().__init__(node_name, **kwargs)
        guard_change_state(self, self._guard)
        # Bad values from the parameter file: reported now, refused by configure until set.
        self._parameter_problems = declare_parameters(self)
        for problem in self._parameter_problems.values():
            self.get_logger().error(f'{problem} (configure will fail until it is set)')
        self.add_on_set_parameters_callback(self._guard.wrap(
            'parameter callback', self._on_parameters,
            lambda params: SetParametersResult(successful=False, reason=INTERNAL_ERROR)))
        self.config: NodeConfig | None = None
        self.policy: sai.Policy | None = None
        self.inputs: InputCache | None = None
        self.episode: Episode | None = None
        self.last_summary: dict[str, Any] = {}
        self.model_entry: sai.Model | None = None
        self.node_state = 'unconfigured'
        self.holds = 0
        self.last_hold_reason = ''
        self._entities: list[Any] = []
        self._outputs: CommandOutputs | None = None
        self._control_timer: Any = None
        self._hold_call: HoldServiceCall | None = None
        self._outcome_pub: Any = None
        self._chunks_pub: Any = None
        self._diagnostics_pub: Any = None

    # -- lifecycle --------------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read parameters, open the connection, check joints and model, create interfaces."""
        try:
            self.config = config = read_config(self, self._parameter_problems)
            self.inputs = InputCache(config.joint_names, config.gripper_joint, tuple(
                CameraInput(view, topic, transport == 'compressed') for view, topic, transport
                in zip(config.camera_views, config.camera_topics, config.camera_transports)),
                config.instruction)
            self.policy = self._connect(config)
            self._create_interfaces(config)
            self._check_joint_names(config)
            self._check_model(config)
            self._check_controllers(config)
        except (ConfigError, ValueError, sai.SequencesError) as exc:
            self.get_logger().error(f'configure failed: {redact(str(exc))}')
            self._release()
            return FAILURE
        except Exception as exc:  # a transition that raises becomes ERROR silently: say why
            self.get_logger().error(f'configure failed: {type(exc).__name__}: '
                                    f'{redact(str(exc))}')
            self._release()
            return FAILURE
        self.node_state = 'inactive'
        self.get_logger().info(f'configured for {config.model} ({len(config.joint_names)} '
                               f'joints, cameras {", ".join(config.camera_views)})')
        return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the control timer, and an episode if start_on_activate."""
        try:
            super().on_activate(state)
            assert self.config is not None
            self._control_timer = self.create_timer(self._period(), self._tick)
            self.node_state = 'active'
            if self.config.start_on_activate:
                self.start_episode()
        except Exception as exc:
            self.get_logger().error(f'activate failed: {type(exc).__name__}: {exc}')
            return FAILURE
        return SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Hold first, then stop the timer; requests in flight are dropped, never played."""
        try:
            self.stop_episode('deactivated')
            self._destroy_timer()
            self.node_state = 'inactive'
            super().on_deactivate(state)
        except Exception as exc:
            self.get_logger().error(f'deactivate failed: {type(exc).__name__}: {exc}')
            return FAILURE
        return SUCCESS

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Close the connection and remove every interface."""
        self._guard.wrap('cleanup', self._release)()
        self.node_state = 'unconfigured'
        return SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Leave the robot holding, then release everything."""
        self._guard.wrap('shutdown', self.shutdown_holding)('shutdown')
        return SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Hold, release, and go back to unconfigured (a failure here would finalize)."""
        self._guard.wrap('error processing', self.stop_episode)('error')
        self._guard.wrap('error processing', self._release)()
        self.node_state = 'unconfigured'
        return SUCCESS

    # -- every callback from rclpy enters through the guard ------------------------------------

    def create_subscription(self, msg_type: Any, topic: str, callback: Any, *args: Any,
                            **kwargs: Any) -> Any:
        """Create a subscription whose callback cannot raise into the executor."""
        return super().create_subscription(
            msg_type, topic, self._guard.wrap(f'subscription {topic}', callback), *args,
            **kwargs)

    def create_service(self, srv_type: Any, srv_name: str, callback: Any, *args: Any,
                       **kwargs: Any) -> Any:
        """Create a service that answers a refusal instead of raising into the executor."""
        return super().create_service(
            srv_type, srv_name,
            self._guard.wrap(f'service {srv_name}', callback, refuse_service(INTERNAL_ERROR)),
            *args, **kwargs)

    def create_timer(self, timer_period_sec: float, callback: Any, *args: Any,
                     **kwargs: Any) -> Any:
        """Create a timer whose callback cannot raise into the executor."""
        name = getattr(callback, '__name__', 'callback').lstrip('_')
        return super().create_timer(timer_period_sec,
                                    self._guard.wrap(f'timer {name}', callback), *args,
                                    **kwargs)

    @property
    def callback_guard(self) -> CallbackGuard:
        """Return the guard every callback enters through (the spin loop reports to it too)."""
        return self._guard

    def _on_fault(self, reason: str) -> None:
        """End a running episode holding after an exception reached the guard, saying why."""
        episode = self.episode
        if episode is None or not episode.running:
            return
        tick = episode.end('error', f'internal error: {reason}', hold=True)
        self._hold(tick.command, f'internal error: {reason}')
        self._finish(episode)

    # -- episodes -----------------------------------------------------------------------------

    def start_episode(self) -> tuple[bool, str]:
        """Begin a bounded episode; only when active and none is running."""
        if self.node_state != 'active' or self.policy is None or self.config is None \
                or self.inputs is None:
            return False, 'the node is not active'
        if self.episode is not None and self.episode.running:
            return False, 'an episode is already running'
        if not self.inputs.instruction.strip():
            # A language-conditioned policy with no task does something, not nothing.
            return False, ('no instruction: set the instruction parameter or publish one on '
                           f'{self.resolve_topic_name("instruction")}')
        if self.episode is not None:
            self.episode.close()
        self.episode = Episode(self.policy, self.config, self.inputs)
        self._guard.clear()
        if self._outputs is not None:
            self._outputs.new_episode()
        self.get_logger().info(f'episode started: up to {self.config.max_actions} actions')
        return True, 'episode started'

    def stop_episode(self, reason: str) -> tuple[bool, str]:
        """End the running episode holding; nothing more is published until the next start."""
        episode = self.episode
        if episode is None or not episode.running:
            return False, 'no episode is running'
        tick = episode.end('stopped', reason, hold=True)
        self._hold(tick.command, reason)
        self._finish(episode)
        return True, f'episode stopped ({reason})'

    def shutdown_holding(self, reason: str) -> None:
        """
        End the episode holding and release everything, e.g. before the process ends.

        The hold is not waited for: Fast DDS (since Humble) and Cyclone DDS send it during
        publish(), and waiting for acknowledgements costs up to a heartbeat period (a full 1 s
        timeout, measured with Fast DDS on loopback).
        """
        self.stop_episode(reason)
        self._release()

    def _tick(self) -> None:
        episode = self.episode
        if episode is None or not episode.running or self.node_state != 'active':
            return
        try:
            tick = episode.tick(time.monotonic())
        except Exception as exc:  # never let a callback raise: hold and say why
            tick = episode.end('error', f'{type(exc).__name__}: {exc}', hold=True)
        self._publish_chunk_events(episode)
        if tick.kind == COMMAND and tick.command is not None:
            self._publish(tick.command, tick.ahead, episode.period)
            self._check_gripper(episode)
        elif tick.kind in (HOLD, END) and tick.command is not None:
            self._hold(tick.command, tick.reason)
        if not episode.running:
            if episode.outcome == 'completed' and episode.last_command is not None:
                self._settle(episode.last_command)
            self._finish(episode)
        elif abs(self._control_timer.timer_period_ns * 1e-9 - self._period()) > 1e-6:
            self._reset_timer()  # the first chunk told us the rate

    def _finish(self, episode: Episode) -> None:
        self._publish_chunk_events(episode)
        summary = episode.summary()
        self.last_summary = summary
        text = json.dumps(summary)
        # rclpy fixes a call site's severity at its first call: one call site per severity.
        if summary['outcome'] == 'completed':
            self.get_logger().info(f'episode ended: {summary["reason"]}: {text}')
        else:
            self.get_logger().warning(f'episode ended: {summary["reason"]}: {text}')
        if self._outcome_pub is not None:
            self._outcome_pub.publish(String(data=text))

    # -- publishing ---------------------------------------------------------------------------

    def _publish_chunk_events(self, episode: Episode) -> None:
        while episode.chunk_events and self._chunks_pub is not None:
            self._chunks_pub.publish(String(data=json.dumps(episode.chunk_events.pop(0))))

    def _publish(self, command: Command, ahead: tuple[Command, ...], period: float) -> None:
        assert self._outputs is not None
        self._outputs.send(command, ahead, period)

    def _settle(self, last: Command) -> None:
        """End a completed episode at rest at its last target (no hold service: no doubt)."""
        if self._outputs is not None and last.positions:
            self._outputs.hold(last.positions, self._period())

    def _check_gripper(self, episode: Episode) -> None:
        """Act on a rejected or aborted gripper goal as gripper_on_failure says."""
        gripper = self._outputs.gripper if self._outputs is not None else None
        failure = gripper.take_failure() if gripper is not None else ''
        if not failure or self.config is None:
            return
        if self.config.gripper_on_failure == 'hold':
            tick = episode.end('error', failure, hold=True)
            self._hold(tick.command, failure)
        else:
            self.get_logger().error(f'{failure} (gripper_on_failure: continue)')

    def _hold(self, command: Command | None, reason: str) -> None:
        """Publish a hold at the measured positions and call the hold service, if any."""
        self.holds += 1
        self.last_hold_reason = reason
        self.get_logger().warning(f'holding: {reason}')
        if command is not None and self._outputs is not None:
            self._outputs.hold(command.positions, self._period())
        if self._hold_call is not None:
            self._hold_call.request()

    # -- interfaces -------------------------------------------------------------------------

    def _create_interfaces(self, config: NodeConfig) -> None:
        assert self.inputs is not None
        inputs = self.inputs
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        add = self._entities.append
        add(self.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                     qos_profile_sensor_data))
        for camera in inputs.cameras:
            kind = CompressedImage if camera.compressed else Image
            add(self.create_subscription(kind, camera.topic, inputs.frame_callback(camera.view),
                                         qos_profile_sensor_data))
        add(self.create_subscription(String, 'instruction', self._on_instruction, reliable))
        if config.safety_gate_topic:
            add(self.create_subscription(Bool, config.safety_gate_topic,
                                         lambda msg: inputs.on_gate(msg.data), reliable))
        self._outputs = CommandOutputs(self, config)
        self._outcome_pub = self.create_publisher(String, '~/episode_outcome', reliable)
        self._chunks_pub = self.create_publisher(String, '~/chunks', reliable)
        add(self._chunks_pub)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        add(self._outcome_pub)
        add(self._diagnostics_pub)
        add(self.create_service(Trigger, '~/start_episode', self._on_start))
        add(self.create_service(Trigger, '~/stop_episode', self._on_stop))
        add(self.create_timer(config.diagnostics_period_s, self._publish_diagnostics))
        if config.hold_service:
            client = self.create_client(Trigger, config.hold_service)
            add(client)
            self._hold_call = HoldServiceCall(self, client, config.hold_service_timeout_s)

    def _release(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None
        self._destroy_timer()
        for entity in self._entities:
            self._destroy(entity)
        self._entities = []
        if self._outputs is not None:
            self._outputs.close()
            self._outputs = None
        self._outcome_pub = self._diagnostics_pub = None
        self._chunks_pub = None
        if self._hold_call is not None:
            self._hold_call.close()
            self._hold_call = None
        if self.policy is not None:
            self.policy.close()
            self.policy = None

    def _destroy(self, entity: Any) -> None:
        for destroy in (self.destroy_subscription, self.destroy_publisher, self.destroy_service,
                        self.destroy_timer, self.destroy_client):
            try:
                if destroy(entity):
                    return
            except Exception:  # wrong kind for this destroyer: try the next
                continue

    def _destroy_timer(self) -> None:
        if self._control_timer is not None:
            self.destroy_timer(self._control_timer)
            self._control_timer = None

    def _reset_timer(self) -> None:
        self._destroy_timer()
        self._control_timer = self.create_timer(self._period(), self._tick)

    def _period(self) -> float:
        if self.episode is not None and self.episode.stream.stats.chunks:
            return self.episode.period
        config = self.config
        if config is not None and config.control_rate_hz > 0:
            return 1.0 / config.control_rate_hz
        hz = self.model_entry.control_hz if self.model_entry else None
        return 1.0 / hz if hz else 1.0 / 15.0

    # -- callbacks ----------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        if self.inputs is not None:
            self.inputs.on_joint_state(list(msg.name), self._model_positions(msg),
                                       _stamp_ns(msg))

    def _model_positions(self, msg: JointState) -> list[float]:
        """Joint positions with the gripper's in model units (0 open .. 1 closed)."""
        positions = list(msg.position)
        config, outputs = self.config, self._outputs
        if config is not None and outputs is not None and config.gripper_joint:
            names = list(msg.name)
            if config.gripper_joint in names:
                i = names.index(config.gripper_joint)
                if i < len(positions):
                    positions[i] = outputs.scale.to_model(positions[i])
        return positions

    def _on_instruction(self, msg: String) -> None:
        if self.inputs is None:
            return
        if not msg.data.strip():
            self.get_logger().warning('ignored an empty instruction on the instruction topic; '
                                      'the task stays the same', throttle_duration_sec=5.0)
            return
        self.inputs.instruction = msg.data

    def _on_parameters(self, params: list[rclpy.parameter.Parameter]) -> SetParametersResult:
        # rclpy has checked each value's type and range against its descriptor by now.
        # rclpy's own parameters (use_sim_time, ...) are not this node's to refuse.
        for param in params:
            if param.name in CONFIGURE_PARAMETERS and self.node_state != 'unconfigured':
                return SetParametersResult(
                    successful=False, reason=f'{param.name} is read at configure: set it while '
                    f'the node is unconfigured (it is {self.node_state}; cleanup first)')
            if param.name == 'instruction' and not str(param.value).strip():
                return SetParametersResult(
                    successful=False, reason='instruction must not be empty: the task stays '
                    f'{self.inputs.instruction if self.inputs else "unset"!r}')
        for param in params:
            self._parameter_problems.pop(param.name, None)
            if param.name == 'instruction' and self.inputs is not None:
                self.inputs.instruction = str(param.value)
        return SetParametersResult(successful=True)

    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Any:
        response.success, response.message = self.start_episode()
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Any:
        response.success, response.message = self.stop_episode('stop requested')
        return response

    # -- configure checks ---------------------------------------------------------------------

    def _connect(self, config: NodeConfig) -> sai.Policy:
        """Open the Policy; a ca_file that cannot be read fails naming the parameter."""
        api_key = self._api_key(config)
        try:
            return sai.connect(config.model, api_key=api_key,
                               base_url=config.base_url or None,
                               control_hz=config.control_rate_hz or None,
                               timeout_s=config.request_timeout_s,
                               verify=config.ca_file or True)
        except OSError as exc:  # FileNotFoundError, PermissionError, ssl.SSLError (not PEM)
            if not config.ca_file:
                raise
            raise ConfigError(f'parameter ca_file: cannot load CA certificates from '
                              f'{config.ca_file}: {exc}') from exc

    def _api_key(self, config: NodeConfig) -> str | None:
        if not config.api_key_file:
            return None
        from pathlib import Path
        key = read_credentials_file(Path(config.api_key_file))
        if not key:
            raise ConfigError(f'parameter api_key_file: no key in {config.api_key_file}')
        return key

    def _check_joint_names(self, config: NodeConfig) -> None:
        """Wait for one joint_states message and fail naming any joint it lacks."""
        topic = self.resolve_topic_name('joint_states')
        message = wait_for_message(self, JointState, topic, config.configure_timeout_s)
        if message is None:
            raise ConfigError(f'no joint_states on {topic} within '
                              f'{config.configure_timeout_s:.1f} s (configure_timeout_s)')
        assert self.inputs is not None
        missing = self.inputs.missing_joints(list(message.name))
        if missing:
            raise ConfigError(f'parameter joint_names: {", ".join(missing)} not in '
                              f'{topic} (it has {", ".join(message.name)})')
        self.inputs.on_joint_state(list(message.name), self._model_positions(message),
                                   _stamp_ns(message))

    def _check_model(self, config: NodeConfig) -> None:
        """Check the model against the catalogue when it can be reached (not fatal if not)."""
        assert self.policy is not None
        try:
            entry = self.policy.describe()
        except sai.Unavailable as exc:
            self.get_logger().warning(f'catalogue not reachable, model not checked: {exc}')
            return
        except sai.CertificateError as exc:
            # The client's own advice names its verify= argument; here it is a parameter.
            reason = str(exc).split(';')[0]
            advice = (f'ca_file {config.ca_file} does not sign it' if config.ca_file else
                      'set the ca_file parameter to the PEM file of the CA that signs it')
            raise ConfigError(f'{reason}: {advice}') from exc
        if entry is None:
            raise ConfigError(f'parameter model: {config.model!r} is not in the catalogue')
        self.model_entry = entry
        views = set(entry.camera_views)
        unknown = [v for v in config.camera_views if views and v not in views]
        if unknown:
            raise ConfigError(f'parameter camera_views: {", ".join(unknown)} not among the '
                              f"model's views {sorted(views)}")
        dims = len(config.joint_names) + (1 if config.gripper_joint else 0)
        if entry.action_dim is not None and entry.action_dim != dims:
            raise ConfigError(f'parameter joint_names: the model acts on {entry.action_dim} '
                              f'values but joint_names + gripper_joint give {dims}')
        space = entry.raw.get('action_space')
        if isinstance(space, str) and not supported_action_space(space):
            raise ConfigError(f'model {config.model}: action space {space!r} cannot be '
                              'commanded as joint positions by this node')

    def _check_controllers(self, config: NodeConfig) -> None:
        """Ask the arm's (and a gripper's) controller whether it accepts what is sent."""
        outputs = self._outputs
        assert outputs is not None
        gripper = outputs.gripper
        if gripper is not None and not gripper.wait_for_server(config.configure_timeout_s):
            raise ConfigError(f'gripper_interface action: no GripperCommand server on '
                              f'{self.resolve_topic_name(gripper.name)} within '
                              f'{config.configure_timeout_s:.1f} s (gripper_controller, '
                              'gripper_action_name)')
        if not config.check_controller:
            return
        checks = [(config.controller_name, config.output_mode, outputs.arm_joints)]
        if config.gripper_joint and config.gripper_interface in ('trajectory',
                                                                 'forward_position'):
            mode = 'trajectory_stream' if config.gripper_interface == 'trajectory' \
                else 'forward_position'
            checks.append((config.gripper_controller, mode, [config.gripper_joint]))
        for controller, mode, joints in checks:
            values = ask_controller(self, controller, mode, config.configure_timeout_s)
            report = check_controller(values, mode, self.resolve_topic_name(controller), joints)
            for warning in report.warnings:
                self.get_logger().warning(warning)
            if report.problems:
                raise ConfigError('; '.join(report.problems))

    # -- diagnostics --------------------------------------------------------------------------

    def health(self) -> Health:
        """Report what the node knows now, for /diagnostics."""
        config, episode = self.config, self.episode
        now = time.monotonic()
        health = Health(node_state=self.node_state, holds=self.holds,
                        last_hold_reason=self.last_hold_reason,
                        internal_faults=self._guard.faults,
                        last_internal_fault=self._guard.last_fault)
        if self._hold_call is not None:
            call = self._hold_call
            health.hold_service, health.hold_service_calls = call.service_name, call.calls
            health.hold_service_failures = call.failures
            health.hold_service_problem = call.problem
        if config is None or self.inputs is None:
            return health
        outputs = self._outputs
        if outputs is not None:
            health.output_mode = config.output_mode
            health.command_topic = self.resolve_topic_name(outputs.arm_topic)
            health.planned_ahead_s = outputs.planned_s
            health.gripper_interface = config.gripper_interface if config.gripper_joint else ''
            if outputs.gripper is not None:
                health.gripper_goals = outputs.gripper.goals
                health.gripper_failures = outputs.gripper.failures
                health.gripper_problem = outputs.gripper.problem
        health.model, health.base_url = config.model, config.base_url
        health.join_mode, health.max_actions = config.join_mode, config.max_actions
        health.input_ages = self.inputs.ages(now)
        health.input_timeouts = {topic: config.camera_timeout_s for topic in health.input_ages}
        health.input_timeouts['joint_states'] = config.joint_state_timeout_s
        health.input_problems = {camera.topic: self.inputs.frame_problems.get(camera.view, '')
                                 for camera in self.inputs.cameras}
        health.input_problems['joint_states'] = self.inputs.joint_state_problem
        health.input_dropped = dict(self.inputs.dropped_out_of_order)
        health.gate_open = self.inputs.gate_open
        if episode is None:
            return health
        stats = episode.stream.stats
        summary = episode.summary()
        health.episode_state = episode.state
        health.episode_reason, health.episode_outcome = episode.reason, episode.outcome
        health.last_error, health.last_error_kind = episode.last_error, episode.last_error_kind
        health.warming_eta_s = episode.warming_eta_s
        health.gateway_reachable = stats.chunks > 0 or None
        health.latency_p50_s, health.latency_p95_s = (summary['latency_p50_s'],
                                                      summary['latency_p95_s'])
        health.requests, health.failed_requests = stats.requests, stats.failed_requests
        health.retries, health.retry_limit = episode.stream.retried, config.request_retries
        health.retries_in_a_row = episode.retries_in_a_row
        health.last_transient_error, health.last_transient_error_kind = \
            episode.last_transient_error
        health.buffered_s = episode.stream.buffered_seconds(now)
        health.underruns, health.underrun_s = stats.underruns, stats.underrun_s
        health.longest_underrun_s = stats.longest_underrun_s
        health.max_seam_jump = stats.max_seam_jump
        health.action_space = stats.action_space or ''
        health.actions, health.chunks = episode.actions, stats.chunks
        return health

    def _publish_diagnostics(self) -> None:
        if self._diagnostics_pub is None or self.config is None:
            return
        statuses = build_statuses(self.health(), self.get_name(), self.config.hardware_id)
        self._diagnostics_pub.publish(diagnostic_array(statuses,
                                                       self.get_clock().now().to_msg()))


def _stamp_ns(msg: Any) -> int:
    stamp = msg.header.stamp
    return stamp.sec * 1_000_000_000 + stamp.nanosec
