"""
The node's Health, as /diagnostics shows it: a pure function of what the node holds now.

The node gathers its parts in a :class:`NodeSnapshot`; :func:`health_of` reads them (and
changes nothing); diagnostics.build_statuses turns the Health into statuses.
"""

from dataclasses import dataclass

from sequence_ai_ros.record.node_recording import NodeRecording

from .diagnostics import Health
from .episode import Episode
from .hold_call import HoldServiceCall
from .inputs import InputCache, JOINT_STATES
from .outputs import CommandOutputs
from .params import NodeConfig

__all__ = ['health_of', 'NodeSnapshot']


@dataclass(frozen=True)
class NodeSnapshot:
    """What the node knows at `now`; the configured parts are None while unconfigured."""

    now: float
    node_state: str
    holds: int
    last_hold_reason: str
    internal_faults: int
    last_internal_fault: str
    hold_call: HoldServiceCall | None = None
    config: NodeConfig | None = None
    inputs: InputCache | None = None
    outputs: CommandOutputs | None = None
    command_topic: str = ''  # the outputs' arm topic, resolved by the node
    episode: Episode | None = None
    recording: NodeRecording | None = None
    protocol: str = ''  # direct or v1, once configure has connected
    readiness: str = ''  # what the worker's readiness said last (direct)
    readiness_eta_s: float | None = None
    seat_lost: bool = False


def health_of(state: NodeSnapshot) -> Health:
    """Report what `state` says, for /diagnostics."""
    health = Health(node_state=state.node_state, holds=state.holds,
                    last_hold_reason=state.last_hold_reason,
                    internal_faults=state.internal_faults,
                    last_internal_fault=state.last_internal_fault)
    if state.hold_call is not None:
        call = state.hold_call
        health.hold_service, health.hold_service_calls = call.service_name, call.calls
        health.hold_service_failures = call.failures
        health.hold_service_problem = call.problem
    if state.recording is not None:
        health.recording = state.recording.status
        health.recording_dropped = state.recording.dropped_now
    config, inputs = state.config, state.inputs
    if config is None or inputs is None:
        return health
    _add_outputs(health, config, state.outputs, state.command_topic)
    health.model, health.base_url = config.model, config.base_url
    health.protocol, health.readiness = state.protocol, state.readiness
    health.seat_lost = state.seat_lost
    if state.readiness_eta_s is not None:
        health.warming_eta_s = state.readiness_eta_s
    health.join_mode, health.max_actions = config.join_mode, config.max_actions
    health.input_ages = inputs.ages(state.now)
    health.input_timeouts = inputs.timeouts(config.joint_state_timeout_s,
                                            config.camera_timeout_s)
    health.input_problems = {camera.topic: inputs.frame_problems.get(camera.view, '')
                             for camera in inputs.cameras}
    health.input_problems[JOINT_STATES] = inputs.joint_state_problem
    health.input_dropped = dict(inputs.dropped_out_of_order)
    health.gate_open = inputs.gate_open
    if state.episode is not None:
        _add_episode(health, config, state.episode, state.now)
    return health


def _add_outputs(health: Health, config: NodeConfig, outputs: CommandOutputs | None,
                 command_topic: str) -> None:
    if outputs is None:
        return
    health.output_mode = config.output_mode
    health.command_topic = command_topic
    health.planned_ahead_s = outputs.planned_s
    health.gripper_interface = config.gripper_interface if config.gripper_joint else ''
    if outputs.gripper is not None:
        health.gripper_goals = outputs.gripper.goals
        health.gripper_failures = outputs.gripper.failures
        health.gripper_problem = outputs.gripper.problem


def _add_episode(health: Health, config: NodeConfig, episode: Episode, now: float) -> None:
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
