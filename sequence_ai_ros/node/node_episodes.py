"""
The episode part of PolicyNode: starting and stopping episodes, the control tick, holds.

A mixin of PolicyNode (``self`` is the node): its timers and services are created through
PolicyNode's create_* overrides, so every callback here enters through the callback guard.
"""

import json
import time
from typing import Any

from std_msgs.msg import String
from std_srvs.srv import Trigger

from .commands import Command
from .episode import COMMAND, END, Episode, HOLD


class EpisodeControl:
    """Episodes, the control tick and holds, for PolicyNode."""

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
        self._recording_started()
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
        self._hold(tick.command, reason, final=True)
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
            self._publish(tick.command, tick.ahead, episode.period, tick.first_s)
            self._check_gripper(episode)
        elif tick.kind in (HOLD, END) and tick.command is not None:
            self._hold(tick.command, tick.reason, final=tick.kind == END)
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
        self._recording_finished(summary)
        text = json.dumps(summary)
        # rclpy fixes a call site's severity at its first call: one call site per severity.
        if summary['outcome'] == 'completed':
            self.get_logger().info(f'episode ended: {summary["reason"]}: {text}')
        else:
            self.get_logger().warning(f'episode ended: {summary["reason"]}: {text}')
        if self._outcome_pub is not None:
            self._outcome_pub.publish(String(data=text))

    def _publish_chunk_events(self, episode: Episode) -> None:
        while episode.chunk_events and self._chunks_pub is not None:
            event = episode.chunk_events.pop(0)
            self._chunks_pub.publish(String(data=json.dumps(event)))
            self._recorded_join(event)

    def _publish(self, command: Command, ahead: tuple[Command, ...], period: float,
                 first_s: float | None) -> None:
        assert self._outputs is not None
        self._outputs.send(command, ahead, period, first_s)

    def _settle(self, last: Command) -> None:
        """End a completed episode at rest at its last target (no hold service: no doubt)."""
        if self._outputs is not None and last.positions:
            self._outputs.hold(last.positions, self._period(), final=True)

    def _check_gripper(self, episode: Episode) -> None:
        """Act on a rejected or aborted gripper goal as gripper_on_failure says."""
        gripper = self._outputs.gripper if self._outputs is not None else None
        failure = gripper.take_failure() if gripper is not None else ''
        if not failure or self.config is None:
            return
        if self.config.gripper_on_failure == 'hold':
            tick = episode.end('error', failure, hold=True)
            self._hold(tick.command, failure, final=True)
        else:
            self.get_logger().error(f'{failure} (gripper_on_failure: continue)')

    def _hold(self, command: Command | None, reason: str, final: bool = False) -> None:
        """
        Publish a hold at the measured positions and call the hold service, if any.

        `final`: the hold ends the episode (its last message: CommandOutputs.hold).
        """
        self.holds += 1
        self.last_hold_reason = reason
        self._recorded_hold(reason, command)
        self.get_logger().warning(f'holding: {reason}')
        if command is not None and self._outputs is not None:
            self._outputs.hold(command.positions, self._period(), final=final)
        if self._hold_call is not None:
            self._hold_call.request()

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

    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Any:
        response.success, response.message = self.start_episode()
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Any:
        response.success, response.message = self.stop_episode('stop requested')
        return response
