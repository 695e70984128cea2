"""
What may fail configure: opening the connection and checking joints, model and controllers.

Each check raises ConfigError naming what to fix; each is given what it checks.
"""

from collections.abc import Callable
from pathlib import Path

from rclpy.node import Node
from sensor_msgs.msg import JointState
import sequence_ai_ros as sai
from sequence_ai_ros.client import read_credentials_file

from .arm_output import FORWARD_POSITION
from .commands import supported_action_space
from .controller_check import (
    ask_controller,
    ask_update_rate,
    check_controller,
    check_feed_rate,
    manager_of,
)
from .inputs import InputCache
from .outputs import CommandOutputs
from .params import ConfigError, NodeConfig
from .probe import wait_for_message

__all__ = ['check_action_space', 'check_controllers', 'check_joint_names', 'check_model',
           'connect', 'untrusted_gateway']

# A controller_manager that has not answered by then is not asked about its rate: a driver
# without one must not slow configure by the whole configure_timeout_s.
MANAGER_TIMEOUT_S = 1.0


def connect(config: NodeConfig) -> sai.Policy:
    """Open the Policy; a ca_file that cannot be read fails naming the parameter."""
    api_key = _api_key(config)
    try:
        return sai.connect(config.model, api_key=api_key,
                           base_url=config.base_url or None,
                           control_hz=config.control_rate_hz or None,
                           timeout_s=config.request_timeout_s,
                           verify=config.ca_file or True, protocol=config.protocol,
                           action_space=config.action_space or None)
    except OSError as exc:  # FileNotFoundError, PermissionError, ssl.SSLError (not PEM)
        if not config.ca_file:
            raise
        raise ConfigError(f'parameter ca_file: cannot load CA certificates from '
                          f'{config.ca_file}: {exc}') from exc


def _api_key(config: NodeConfig) -> str | None:
    if not config.api_key_file:
        return None
    key = read_credentials_file(Path(config.api_key_file))
    if not key:
        raise ConfigError(f'parameter api_key_file: no key in {config.api_key_file}')
    return key


def check_joint_names(node: Node, config: NodeConfig, inputs: InputCache,
                      store: Callable[[JointState], None]) -> None:
    """Wait for one joint_states message, fail naming any joint it lacks, else `store` it."""
    topic = node.resolve_topic_name('joint_states')
    message = wait_for_message(node, JointState, topic, config.configure_timeout_s)
    if message is None:
        raise ConfigError(f'no joint_states on {topic} within '
                          f'{config.configure_timeout_s:.1f} s (configure_timeout_s)')
    missing = inputs.missing_joints(list(message.name))
    if missing:
        raise ConfigError(f'parameter joint_names: {", ".join(missing)} not in '
                          f'{topic} (it has {", ".join(message.name)})')
    store(message)


def check_model(node: Node, policy: sai.Policy, config: NodeConfig) -> sai.Model | None:
    """
    Check the model against the catalogue when it can be reached (not fatal if not).

    Return its catalogue entry, or None when the catalogue could not be asked or (the direct
    protocol, with action_space set) does not list the deployment: the hosted service lists
    no robot deployments. The action space is checked here too (check_action_space).
    """
    try:
        entry = policy.describe()
    except sai.Unavailable as exc:
        node.get_logger().warning(f'catalogue not reachable, model not checked: {exc}')
        check_action_space(None, config, policy.protocol)
        return None
    except sai.CertificateError as exc:
        raise untrusted_gateway(exc, config) from exc
    if entry is None:
        if policy.protocol == 'direct' and config.action_space:
            node.get_logger().info(f'{config.model} is not in the catalogue (a robot '
                                   'deployment): its answers are checked as they come, as '
                                   f'{config.action_space} (action_space)')
            return None
        if policy.protocol == 'direct':
            # The hosted service lists no robot deployment: the missing piece is the space.
            raise ConfigError(f'parameter action_space: {config.model!r} is not in the '
                              'catalogue and does not state its action space: set '
                              "action_space ('joint_velocity', 'joint_position', ...) as the "
                              'deployment was trained')
        raise ConfigError(f'parameter model: {config.model!r} is not in the catalogue')
    views = set(entry.camera_views)
    unknown = [v for v in config.camera_views if views and v not in views]
    if unknown:
        raise ConfigError(f'parameter camera_views: {", ".join(unknown)} not among the '
                          f"model's views {sorted(views)}")
    dims = len(config.joint_names) + (1 if config.gripper_joint else 0)
    if entry.action_dim is not None and entry.action_dim != dims:
        raise ConfigError(f'parameter joint_names: the model acts on {entry.action_dim} '
                          f'values but joint_names + gripper_joint give {dims}')
    check_action_space(entry, config, policy.protocol)
    return entry


def untrusted_gateway(exc: sai.CertificateError, config: NodeConfig) -> Exception:
    """Return the configure error for a gateway certificate that failed verification."""
    if isinstance(exc, sai.CertPinError):  # the worker's, pinned: no parameter mends it
        return exc
    # The client's own advice names its verify= argument; here it is a parameter.
    reason = str(exc).split(';')[0]
    advice = (f'ca_file {config.ca_file} does not sign it' if config.ca_file else
              'set the ca_file parameter to the PEM file of the CA that signs it')
    return ConfigError(f'{reason}: {advice}')


def check_action_space(entry: sai.Model | None, config: NodeConfig, protocol: str) -> str:
    """
    Return the action space the node will play, failing configure where it is not stated.

    The catalogue entry states it, or the action_space parameter; never both differently.
    Neither fails on the direct protocol (its answers may not say it either: velocities must
    never be played as positions by a configuration mistake); on v1 every answer states it.
    """
    stated = entry.raw.get('action_space') if entry is not None else None
    stated = stated if isinstance(stated, str) and stated else None
    if stated and config.action_space and stated != config.action_space:
        raise ConfigError(f'parameter action_space: {config.action_space!r}, but the '
                          f'deployment {config.model} states {stated!r}')
    space = stated or config.action_space
    if not space and protocol == 'direct':
        raise ConfigError(f'parameter action_space: {config.model} does not state its action '
                          "space: set action_space ('joint_velocity', 'joint_position', ...) "
                          'as the deployment was trained')
    if space and not supported_action_space(space):
        raise ConfigError(f'model {config.model}: action space {space!r} cannot be '
                          'commanded as joint positions by this node')
    return space


def check_controllers(node: Node, config: NodeConfig, outputs: CommandOutputs) -> None:
    """Ask the arm's (and a gripper's) controller whether it accepts what is sent."""
    gripper = outputs.gripper
    problem = gripper.connect(config.configure_timeout_s) if gripper is not None else ''
    if problem:
        raise ConfigError(f'gripper_interface {config.gripper_interface}: {problem} '
                          '(gripper_controller, gripper_action_name)')
    if gripper is not None and gripper.action:
        node.get_logger().info(f'gripper: control_msgs/action/{gripper.action} on '
                               f'{node.resolve_topic_name(gripper.name)}')
    if not config.check_controller:
        return
    checks = [(config.controller_name, config.output_mode, outputs.arm_joints)]
    if config.gripper_joint and config.gripper_interface in ('trajectory', 'forward_position'):
        mode = 'trajectory_stream' if config.gripper_interface == 'trajectory' \
            else 'forward_position'
        checks.append((config.gripper_controller, mode, [config.gripper_joint]))
    for controller, mode, joints in checks:
        values = ask_controller(node, controller, mode, config.configure_timeout_s)
        report = check_controller(values, mode, node.resolve_topic_name(controller), joints)
        for warning in report.warnings:
            node.get_logger().warning(warning)
        if report.problems:
            raise ConfigError('; '.join(report.problems))
    if config.output_mode == FORWARD_POSITION:
        manager = manager_of(node.resolve_topic_name(config.controller_name))
        rate = ask_update_rate(node, manager, min(MANAGER_TIMEOUT_S, config.configure_timeout_s))
        for warning in check_feed_rate(rate, config.forward_output_rate_hz, manager):
            node.get_logger().warning(warning)
