"""
The configure part of PolicyNode: the connection and the checks that may fail configure.

A mixin of PolicyNode (``self`` is the node); each check raises ConfigError naming what to fix.
"""

from pathlib import Path

from sensor_msgs.msg import JointState
import sequence_ai_ros as sai
from sequence_ai_ros.client import read_credentials_file

from .commands import supported_action_space
from .controller_check import ask_controller, check_controller
from .node_wiring import stamp_ns
from .params import ConfigError, NodeConfig
from .probe import wait_for_message


class ConfigureChecks:
    """Opens the Policy and checks joints, model and controllers, for PolicyNode."""

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
                                   stamp_ns(message))

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
        problem = gripper.connect(config.configure_timeout_s) if gripper is not None else ''
        if problem:
            raise ConfigError(f'gripper_interface {config.gripper_interface}: {problem} '
                              '(gripper_controller, gripper_action_name)')
        if gripper is not None and gripper.action:
            self.get_logger().info(f'gripper: control_msgs/action/{gripper.action} on '
                                   f'{self.resolve_topic_name(gripper.name)}')
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
