"""
PolicyNode: a lifecycle node between sensors and a joint_trajectory_controller.

configure  read and check parameters, open the Policy (one kept-alive connection), check the
           joint names against joint_states and the model against the catalogue, create
           subscriptions and publishers
activate   start the control timer (and an episode, if start_on_activate)
deactivate publish a hold first, then stop; cleanup closes the connection
"""

from typing import Any

from rcl_interfaces.msg import SetParametersResult
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
import sequence_ai_ros as sai
from sequence_ai_ros.contract.key_masking import redact

from .episode import Episode
from .guard import CallbackGuard, refuse_service
from .hold_call import HoldServiceCall
from .inputs import CameraInput, InputCache
from .lifecycle_guard import guard_change_state
from .node_checks import ConfigureChecks
from .node_episodes import EpisodeControl
from .node_health import HealthReport
from .node_wiring import NodeWiring
from .outputs import CommandOutputs
from .params import ConfigError, declare_parameters, NodeConfig, read_config

# The default trajectory topic (controller_name joint_trajectory_controller), for remapping.
COMMAND_TOPIC = 'joint_trajectory_controller/joint_trajectory'
INTERNAL_ERROR = 'internal error: see the node log and /diagnostics'
SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE


class PolicyNode(EpisodeControl, NodeWiring, ConfigureChecks, HealthReport, LifecycleNode):
    """
    Drives a joint_trajectory_controller from a cloud policy, holding when in doubt.

    The lifecycle and the callback guard are here; the episodes (node_episodes), the
    interfaces and their callbacks (node_wiring), the configure checks (node_checks) and
    /diagnostics (node_health) are its parts, each in its own module.
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
        self._hold(tick.command, f'internal error: {reason}', final=True)
        self._finish(episode)
