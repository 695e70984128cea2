"""
The wiring part of PolicyNode: its subscriptions, publishers and services, and their callbacks.

A mixin of PolicyNode (``self`` is the node): everything is created through PolicyNode's
create_* overrides, so every callback here enters through the callback guard.
"""

from dataclasses import replace
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros.record.metadata import episode_metadata
from sequence_ai_ros.record.node_recording import NodeRecording
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from .diagnostics import Health
from .hold_call import HoldServiceCall
from .outputs import CommandOutputs
from .params import CONFIGURE_PARAMETERS, NodeConfig, PARAMETERS


class NodeWiring:
    """Creates and releases the node's interfaces and handles what arrives on them."""

    # Set at configure; None before, after cleanup, or when recording is off for good.
    _recording: NodeRecording | None = None

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
        self._create_recording(config)
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
        self._release_recording()
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

    def _on_joint_state(self, msg: JointState) -> None:
        recording = self._recording
        if recording is not None:
            recording.joint_state(msg)
        if self.inputs is not None:
            self.inputs.on_joint_state(list(msg.name), self._model_positions(msg),
                                       stamp_ns(msg))

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

    # -- episode recording (the writer thread does the work; these only queue) ---------------

    def _create_recording(self, config: NodeConfig) -> None:
        self._recording = NodeRecording(config.record, config.record_dir, config.record_max_mb)
        assert self.policy is not None and self._outputs is not None
        self.policy.add_observer(self._recording.observer)
        self._outputs.on_publish = self._recording.command
        if self._outputs.gripper is not None:
            self._outputs.gripper.on_publish = self._recording.gripper_command
        if self._recording.problem and config.record:
            self.get_logger().warning(f'episodes are not recorded: {self._recording.problem}')

    def _release_recording(self) -> None:
        recording = self._recording
        if recording is not None:
            # Off the control loop (cleanup, shutdown): let the last file be finished.
            recording.finish(None, wait_s=NodeRecording.CLOSE_AT_SHUTDOWN_S)
            self._recording = None

    def _recording_started(self) -> None:
        """Open the episode's file (called by start_episode)."""
        recording, config = self._recording, self.config
        if recording is None or config is None:
            return
        parameters = {name: getattr(config, spec.field) for name, spec in PARAMETERS.items()}
        metadata = episode_metadata(parameters, source='sequence_ai_ros policy node',
                                    node=self.get_fully_qualified_name(), model=config.model)
        problem = recording.start(f'{self.get_name()}_{config.model.rsplit("/", 1)[-1]}',
                                  metadata)
        if problem:
            self.get_logger().warning(f'episodes are not recorded: {problem}')

    def _recorded_hold(self, reason: str, command: Any) -> None:
        """Record a hold (called by _hold)."""
        recording = self._recording
        if recording is not None:
            recording.hold(reason, command.positions if command is not None else ())

    def _recorded_join(self, event: dict[str, Any]) -> None:
        """Record a chunk joined (called as its ~/chunks event is published)."""
        recording = self._recording
        if recording is not None and self.episode is not None:
            recording.join(event, self.episode.stream.engine)

    def _recording_finished(self, summary: dict[str, Any]) -> None:
        """Record the outcome; the writer thread finishes the file (called by _finish)."""
        recording = self._recording
        if recording is not None:
            recording.finish(summary)

    def health(self) -> Health:
        """Report the node's health with the recording's (where, dropped) added."""
        health: Health = super().health()  # type: ignore[misc]
        recording = self._recording
        if recording is not None:
            health = replace(health, recording=recording.status,
                             recording_dropped=recording.dropped_now)
        return health


def stamp_ns(msg: Any) -> int:
    """Return a message's header stamp in nanoseconds."""
    stamp = msg.header.stamp
    return stamp.sec * 1_000_000_000 + stamp.nanosec
