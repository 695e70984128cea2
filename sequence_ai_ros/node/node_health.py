"""
The diagnostics part of PolicyNode: what it knows, gathered for /diagnostics.

A mixin of PolicyNode (``self`` is the node); build_statuses turns the Health into statuses.
"""

import time

from .diagnostics import build_statuses, diagnostic_array, Health


class HealthReport:
    """Gathers the node's Health and publishes /diagnostics, for PolicyNode."""

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
