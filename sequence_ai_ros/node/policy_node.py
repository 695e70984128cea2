"""
PolicyNode: a lifecycle node between sensors and a joint_trajectory_controller.

configure  read and check parameters, open the Policy (one kept-alive connection; the
           direct protocol or v1, as `protocol` says), check the joint names against
           joint_states and the model and its action space against the catalogue, create
           subscriptions and publishers, and wait for the worker to be ready (direct)
activate   start the control timer (and an episode, if start_on_activate)
deactivate cut a request in flight, publish a hold, then stop; cleanup closes the connection
           and gives the seat back (direct)
"""

from __future__ import annotations  # rclpy's Parameter is generic only from Jazzy on

from dataclasses import replace
import time
from typing import Any

from rcl_interfaces.msg import SetParametersResult
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
import sequence_ai_ros as sai
from sequence_ai_ros.contract.key_masking import redact

from .configure_checks import check_controllers, check_joint_names, check_model
from .configured import ConfiguredNode, NodeHandlers
from .diagnostics import build_statuses, diagnostic_array, Health
from .episode import Episode
from .episode_runner import EpisodeRunner, HoldTally
from .guard import CallbackGuard, refuse_service
from .health import health_of, NodeSnapshot
from .lifecycle_guard import guard_change_state
from .params import ConfigError, CONFIGURE_PARAMETERS, declare_parameters, NodeConfig, read_config
from .readiness import settle_protocol, wait_ready

# The default trajectory topic (controller_name joint_trajectory_controller), for remapping.
COMMAND_TOPIC = 'joint_trajectory_controller/joint_trajectory'
INTERNAL_ERROR = 'internal error: see the node log and /diagnostics'
SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE
# How long the publishers outlive the hold that ends an episode before they are destroyed.
HOLD_DELIVERY_S = 0.2


class PolicyNode(LifecycleNode):
    """
    Drives a joint_trajectory_controller from a cloud policy, holding when in doubt.

    The lifecycle and the callback guard are here. Configure builds a ConfiguredNode (the
    connection, inputs, outputs, interfaces, recording) and an EpisodeRunner over it (start,
    stop, the control tick, holds); configure_checks may fail it; /diagnostics is health_of
    a snapshot of the node.
    """

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
        self.node_state = 'unconfigured'
        self._holds = HoldTally()
        self._configured: ConfiguredNode | None = None
        self._runner: EpisodeRunner | None = None

    @property
    def config(self) -> NodeConfig | None:
        """Return the configuration read at configure (None while unconfigured)."""
        return self._configured.config if self._configured is not None else None

    @property
    def episode(self) -> Episode | None:
        """Return the running or last episode of this configure, if any."""
        return self._runner.episode if self._runner is not None else None

    @property
    def holds(self) -> int:
        """Return how many holds the node has published since it started."""
        return self._holds.count

    # -- lifecycle --------------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read parameters, open the connection, check joints and model, create interfaces."""
        try:
            config = read_config(self, self._parameter_problems)
            self._configured = configured = ConfiguredNode(
                self, config, NodeHandlers(self._on_start, self._on_stop, self._on_label,
                                           self._publish_diagnostics))
            check_joint_names(self, config, configured.inputs, configured.store_joint_state)
            configured.protocol = settle_protocol(self, configured.policy, config)
            configured.model_entry = check_model(self, configured.policy, config)
            check_controllers(self, config, configured.outputs)
            wait_ready(self, configured.policy, config, self._readiness_report(configured))
            self._runner = EpisodeRunner(self, configured, self._guard, self._holds)
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
                               f'joints, cameras {", ".join(config.camera_views)}; the '
                               f'{configured.protocol} protocol)')
        return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the control timer, and an episode if start_on_activate."""
        try:
            super().on_activate(state)
            runner, configured = self._runner, self._configured
            assert runner is not None and configured is not None
            runner.activate()
            self.node_state = 'active'
            if configured.config.start_on_activate:
                runner.start()
        except Exception as exc:
            self.get_logger().error(f'activate failed: {type(exc).__name__}: {exc}')
            return FAILURE
        return SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Hold first, then stop the timer; requests in flight are dropped, never played."""
        try:
            if self._runner is not None:
                self._runner.deactivate('deactivated')
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
        self._guard.wrap('error processing', self.shutdown_holding)('error')
        self.node_state = 'unconfigured'
        return SUCCESS

    # -- episodes -------------------------------------------------------------------------------

    def start_episode(self) -> tuple[bool, str]:
        """Begin a bounded episode; only when active and none is running."""
        if self._runner is None:
            return False, 'the node is not active'
        return self._runner.start()

    def stop_episode(self, reason: str) -> tuple[bool, str]:
        """End the running episode holding; nothing more is published until the next start."""
        if self._runner is None:
            return False, 'no episode is running'
        return self._runner.stop(reason)

    def shutdown_holding(self, reason: str) -> None:
        """
        End the episode holding and release everything, e.g. before the process ends.

        The publishers outlive a hold by HOLD_DELIVERY_S: Fast DDS hands a reader on this
        machine the message in the writer's shared memory, and a writer destroyed at once lost
        the hold a busy reader had not yet taken (3 shutdowns in 5 beside a busy loop). Waiting for
        the acknowledgement instead waits for the next heartbeat (2.7 s, measured on loopback).
        """
        try:
            stopped, _ = self.stop_episode(reason)
            if stopped:
                time.sleep(HOLD_DELIVERY_S)
        finally:
            self._release()

    def _release(self) -> None:
        runner, configured = self._runner, self._configured
        self._runner = self._configured = None
        if runner is not None:
            runner.close()
        if configured is not None:
            configured.close()

    def _on_start(self, request: Any, response: Any) -> Any:
        response.success, response.message = self.start_episode()
        return response

    def _on_stop(self, request: Any, response: Any) -> Any:
        response.success, response.message = self.stop_episode('stop requested')
        return response

    def _on_label(self, request: Any, response: Any) -> Any:
        if self._runner is None:
            response.success, response.message = False, 'the node is not configured'
            return response
        notes = str(self.get_parameter('label_notes').value)
        response.success, response.message = self._runner.label(bool(request.data), notes)
        return response

    def _readiness_report(self, configured: ConfiguredNode) -> Any:
        """Return configure's readiness callback: kept for /diagnostics, published at once."""
        def report(text: str, eta_s: float | None) -> None:
            configured.readiness, configured.readiness_eta_s = text, eta_s
            # Configure holds the executor while it waits: the diagnostics timer cannot run.
            self._publish_diagnostics()
        return report

    # -- parameters and /diagnostics -------------------------------------------------------

    def _on_parameters(self, params: list[Parameter[Any]]) -> SetParametersResult:
        # rclpy has checked each value's type and range against its descriptor by now.
        # rclpy's own parameters (use_sim_time, ...) are not this node's to refuse.
        inputs = self._configured.inputs if self._configured is not None else None
        for param in params:
            if param.name in CONFIGURE_PARAMETERS and self.node_state != 'unconfigured':
                return SetParametersResult(
                    successful=False, reason=f'{param.name} is read at configure: set it while '
                    f'the node is unconfigured (it is {self.node_state}; cleanup first)')
            if param.name == 'instruction' and not str(param.value).strip():
                return SetParametersResult(
                    successful=False, reason='instruction must not be empty: the task stays '
                    f'{inputs.instruction if inputs else "unset"!r}')
        for param in params:
            self._parameter_problems.pop(param.name, None)
            if param.name == 'instruction' and inputs is not None:
                inputs.instruction = str(param.value)
        return SetParametersResult(successful=True)

    def health(self) -> Health:
        """Report what the node knows now, for /diagnostics."""
        configured, runner = self._configured, self._runner
        snapshot = NodeSnapshot(
            now=time.monotonic(), node_state=self.node_state, holds=self._holds.count,
            last_hold_reason=self._holds.last_reason, internal_faults=self._guard.faults,
            last_internal_fault=self._guard.last_fault)
        if configured is None:
            return health_of(snapshot)
        return health_of(replace(
            snapshot, hold_call=configured.hold_call, config=configured.config,
            inputs=configured.inputs, outputs=configured.outputs,
            command_topic=self.resolve_topic_name(configured.outputs.arm_topic),
            episode=runner.episode if runner is not None else None,
            recording=configured.recording, protocol=configured.protocol,
            readiness=configured.readiness, readiness_eta_s=configured.readiness_eta_s,
            seat_lost=configured.policy.seat_lost))

    def _publish_diagnostics(self) -> None:
        configured = self._configured
        if configured is None:
            return
        statuses = build_statuses(self.health(), self.get_name(), configured.config.hardware_id)
        configured.diagnostics_pub.publish(diagnostic_array(statuses,
                                                            self.get_clock().now().to_msg()))

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
        if self._runner is not None:
            self._runner.fault(reason)
