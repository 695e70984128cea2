"""
What configure builds, as one object.

The connection, the inputs and outputs, the node's subscriptions, publishers, services and
diagnostics timer, the hold service call, the episode recording.

Cleanup, error and shutdown close it as one (:meth:`ConfiguredNode.close`); a build that fails
halfway closes what it had made. Everything is created through the node's create_* overrides,
so every callback here enters through the callback guard.
"""

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.client import Client
from rclpy.lifecycle import LifecycleNode
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, JointState
import sequence_ai_ros as sai
from sequence_ai_ros.record.metadata import episode_metadata
from sequence_ai_ros.record.node_recording import NodeRecording
from std_msgs.msg import Bool, String
from std_srvs.srv import SetBool, Trigger

from .configure_checks import connect
from .hold_call import HoldServiceCall
from .inputs import CameraInput, InputCache
from .outputs import CommandOutputs
from .params import NodeConfig, PARAMETERS

__all__ = ['ConfiguredNode', 'NodeHandlers', 'stamp_ns']

E = TypeVar('E')


@dataclass(frozen=True)
class NodeHandlers:
    """The node's own callbacks for the services and the timer that configure creates."""

    start_episode: Callable[[Any, Any], Any]  # std_srvs/Trigger (request, response) -> response
    stop_episode: Callable[[Any, Any], Any]
    label_episode: Callable[[Any, Any], Any]  # std_srvs/SetBool: data = success
    publish_diagnostics: Callable[[], None]


class ConfiguredNode:
    """Everything a configured PolicyNode has that an unconfigured one has not."""

    def __init__(self, node: LifecycleNode, config: NodeConfig, handlers: NodeHandlers) -> None:
        """Open the connection and create the interfaces; on any failure, release them."""
        self.config = config
        self.inputs = InputCache(config.joint_names, config.gripper_joint, tuple(
            CameraInput(view, topic, transport == 'compressed') for view, topic, transport
            in zip(config.camera_views, config.camera_topics, config.camera_transports)),
            config.instruction)
        # The catalogue's entry, set by configure's model check when the catalogue answered.
        self.model_entry: sai.Model | None = None
        # Set by configure once connected: the protocol in use and what readiness said last.
        self.protocol = ''
        self.readiness = ''
        self.readiness_eta_s: float | None = None
        self._node = node
        with ExitStack() as stack:
            self.policy = connect(config)
            stack.callback(self.policy.close)
            self._subscribe(stack)
            self.outputs = CommandOutputs(node, config,
                                          lambda: self.inputs.last_finite_positions)
            stack.callback(self.outputs.close)
            self.recording = self._record()
            # Off the control loop (cleanup, shutdown): let the last file be finished.
            stack.callback(self.recording.finish, None,
                           wait_s=NodeRecording.CLOSE_AT_SHUTDOWN_S)
            reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
            self.outcome_pub = node.create_publisher(String, '~/episode_outcome', reliable)
            stack.callback(_quietly, node.destroy_publisher, self.outcome_pub)
            self.chunks_pub = node.create_publisher(String, '~/chunks', reliable)
            stack.callback(_quietly, node.destroy_publisher, self.chunks_pub)
            self.diagnostics_pub = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
            stack.callback(_quietly, node.destroy_publisher, self.diagnostics_pub)
            for name, callback in (('~/start_episode', handlers.start_episode),
                                   ('~/stop_episode', handlers.stop_episode)):
                stack.callback(_quietly, node.destroy_service,
                               node.create_service(Trigger, name, callback))
            stack.callback(_quietly, node.destroy_service, node.create_service(
                SetBool, '~/label_episode', handlers.label_episode))
            stack.callback(_quietly, node.destroy_timer, node.create_timer(
                config.diagnostics_period_s, handlers.publish_diagnostics))
            self.hold_call: HoldServiceCall | None = None
            if config.hold_service:
                client: Client[Any, Any] = node.create_client(Trigger, config.hold_service)
                stack.callback(_quietly, node.destroy_client, client)
                self.hold_call = HoldServiceCall(node, client, config.hold_service_timeout_s)
                stack.callback(self.hold_call.close)
            self._close = stack.pop_all()

    def close(self) -> None:
        """Finish the recording, destroy every interface and close the connection."""
        self._close.close()

    def store_joint_state(self, msg: Any) -> None:
        """Keep a sensor_msgs/JointState's positions in the input cache, in model units."""
        self.inputs.on_joint_state(list(msg.name), self._model_positions(msg), stamp_ns(msg))

    def start_recording(self) -> None:
        """Open the episode's file (an episode starts); say once if it cannot be recorded."""
        config, node = self.config, self._node
        parameters = {name: getattr(config, spec.field) for name, spec in PARAMETERS.items()}
        metadata = episode_metadata(parameters, source='sequence_ai_ros policy node',
                                    node=node.get_fully_qualified_name(), model=config.model)
        problem = self.recording.start(f'{node.get_name()}_{config.model.rsplit("/", 1)[-1]}',
                                       metadata)
        if problem:
            node.get_logger().warning(f'episodes are not recorded: {problem}')

    def _subscribe(self, stack: ExitStack) -> None:
        node, config, inputs = self._node, self.config, self.inputs
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        subscriptions = [node.create_subscription(JointState, 'joint_states',
                                                  self._on_joint_state, qos_profile_sensor_data)]
        for camera in inputs.cameras:
            kind = CompressedImage if camera.compressed else Image
            subscriptions.append(node.create_subscription(
                kind, camera.topic, inputs.frame_callback(camera.view), qos_profile_sensor_data))
        subscriptions.append(node.create_subscription(String, 'instruction',
                                                      self._on_instruction, reliable))
        if config.safety_gate_topic:
            subscriptions.append(node.create_subscription(
                Bool, config.safety_gate_topic, lambda msg: inputs.on_gate(msg.data), reliable))
        for subscription in subscriptions:
            stack.callback(_quietly, node.destroy_subscription, subscription)

    def _record(self) -> NodeRecording:
        """Create the recording and hook it to what the policy and the outputs see."""
        config = self.config
        recording = NodeRecording(config.record, config.record_dir, config.record_max_mb)
        # RecordingObserver has PolicyObserver's methods without its class (record/ is ROS-side).
        self.policy.add_observer(recording.observer)
        self.outputs.on_publish = recording.command
        if self.outputs.gripper is not None:
            self.outputs.gripper.on_publish = recording.gripper_command
        if recording.problem and config.record:
            self._node.get_logger().warning(f'episodes are not recorded: {recording.problem}')
        return recording

    def _on_joint_state(self, msg: Any) -> None:
        self.recording.joint_state(msg)
        self.store_joint_state(msg)

    def _model_positions(self, msg: Any) -> list[float]:
        """Joint positions with the gripper's in model units (0 open .. 1 closed)."""
        positions = list(msg.position)
        config = self.config
        if config.gripper_joint:
            names = list(msg.name)
            if config.gripper_joint in names:
                i = names.index(config.gripper_joint)
                if i < len(positions):
                    positions[i] = self.outputs.scale.to_model(positions[i])
        return positions

    def _on_instruction(self, msg: Any) -> None:
        if not msg.data.strip():
            self._node.get_logger().warning('ignored an empty instruction on the instruction '
                                            'topic; the task stays the same',
                                            throttle_duration_sec=5.0)
            return
        self.inputs.instruction = msg.data


def _quietly(destroy: Callable[[E], bool], entity: E) -> None:
    """Destroy `entity`; one that cannot be (its context already gone) is destroy_node's."""
    try:
        destroy(entity)
    except Exception:  # cleanup goes on: the rest must still be released
        pass


def stamp_ns(msg: Any) -> int:
    """Return a message's header stamp in nanoseconds."""
    stamp = msg.header.stamp
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)
