"""
Running episodes on a configured node: start and stop, the control tick, holds.

One EpisodeRunner per configure, given what it works with: the node (its logger, timers and
names), what configure built, the callback guard and the node's hold tally. Its timer is
created through the node's create_timer override, so the tick enters through the guard.
"""

from dataclasses import dataclass
import json
import time

from rclpy.node import Node
from rclpy.timer import Timer
from sequence_ai_ros.client import FALLBACK_CONTROL_RATE_HZ, SequencesError
from sequence_ai_ros.contract.key_masking import redact
from std_msgs.msg import String

from .commands import Command
from .configured import ConfiguredNode
from .episode import COMMAND, END, Episode, HOLD
from .guard import CallbackGuard

__all__ = ['EpisodeRunner', 'HoldTally']


@dataclass
class HoldTally:
    """The holds over the node's life, across configures (for /diagnostics)."""

    count: int = 0
    last_reason: str = ''


class EpisodeRunner:
    """Starts, ticks and stops the episodes of one configured node, holding when in doubt."""

    def __init__(self, node: Node, configured: ConfiguredNode, guard: CallbackGuard,
                 holds: HoldTally) -> None:
        self._node = node
        self._configured = configured
        self._guard = guard
        self._holds = holds
        self.episode: Episode | None = None
        self.active = False
        self._timer: Timer | None = None

    def activate(self) -> None:
        """Start the control tick; episodes may start from now on."""
        self._timer = self._node.create_timer(self._period(), self._tick)
        self.active = True

    def deactivate(self, reason: str) -> None:
        """Stop a running episode holding, then the control tick."""
        self.stop(reason)
        self._destroy_timer()
        self.active = False

    def close(self) -> None:
        """Drop the episode (its requests in flight are not waited for) and the timer."""
        if self.episode is not None:
            self.episode.close()
            self.episode = None
        self._destroy_timer()

    def start(self) -> tuple[bool, str]:
        """Begin a bounded episode; only when active and none is running."""
        configured = self._configured
        if not self.active:
            return False, 'the node is not active'
        if self.episode is not None and self.episode.running:
            return False, 'an episode is already running'
        if not configured.inputs.instruction.strip():
            # A language-conditioned policy with no task does something, not nothing.
            return False, ('no instruction: set the instruction parameter or publish one on '
                           f'{self._node.resolve_topic_name("instruction")}')
        if self.episode is not None:
            self.episode.close()
        self.episode = Episode(configured.policy, configured.config, configured.inputs)
        # One node episode is one episode on the wire (direct; nothing on v1).
        configured.policy.begin_episode()
        configured.start_recording()
        self._guard.clear()
        configured.outputs.new_episode()
        self._node.get_logger().info(
            f'episode started: up to {configured.config.max_actions} actions')
        return True, 'episode started'

    def stop(self, reason: str) -> tuple[bool, str]:
        """End the running episode holding; nothing more is published until the next start."""
        episode = self.episode
        if episode is None or not episode.running:
            return False, 'no episode is running'
        tick = episode.end('stopped', reason, hold=True)
        self._hold(tick.command, reason, final=True)
        self._finish(episode)
        return True, f'episode stopped ({reason})'

    def fault(self, reason: str) -> None:
        """End a running episode holding after an exception reached the guard, saying why."""
        episode = self.episode
        if episode is None or not episode.running:
            return
        tick = episode.end('error', f'internal error: {reason}', hold=True)
        self._hold(tick.command, f'internal error: {reason}', final=True)
        self._finish(episode)

    def _tick(self) -> None:
        episode = self.episode
        if episode is None or not episode.running or not self.active:
            return
        try:
            tick = episode.tick(time.monotonic())
        except Exception as exc:  # never let a callback raise: hold and say why
            tick = episode.end('error', f'{type(exc).__name__}: {exc}', hold=True)
        self._publish_chunk_events(episode)
        if tick.kind == COMMAND and tick.command is not None:
            self._configured.outputs.send(tick.command, tick.ahead, episode.period,
                                          tick.first_s)
            self._check_gripper(episode)
        elif tick.kind in (HOLD, END) and tick.command is not None:
            self._hold(tick.command, tick.reason, final=tick.kind == END)
        if not episode.running:
            if episode.outcome == 'completed' and episode.last_command is not None:
                self._settle(episode.last_command)
            self._finish(episode)
        elif self._timer is not None and \
                abs(self._timer.timer_period_ns * 1e-9 - self._period()) > 1e-6:
            self._reset_timer()  # the first chunk told us the rate

    def label(self, success: bool, notes: str) -> tuple[bool, str]:
        """
        Label the last episode on the gateway (direct) and in its recording; (ok, message).

        Either may be missing (v1 has no labels; recording off): the other is still labelled,
        and the message says what was and what was not.
        """
        configured = self._configured
        done, missing = [], []
        if configured.protocol == 'direct':
            try:
                done.append(f'gateway episode {configured.policy.label(success, notes)}')
            except SequencesError as exc:
                missing.append(f'gateway: {redact(str(exc))}')
        else:
            missing.append('gateway: the v1 protocol has no labels')
        label, problem = configured.recording.label(success, notes)
        if label is not None:
            done.append('recording')
        else:
            missing.append(f'recording: {problem}')
        outcome = 'success' if success else 'failure'
        text = f'labelled {outcome}: {", ".join(done)}' if done else f'not labelled {outcome}'
        if missing:
            text += f' (not labelled: {"; ".join(missing)})'
        self._node.get_logger().info(text)
        return bool(done), text

    def _finish(self, episode: Episode) -> None:
        self._publish_chunk_events(episode)
        # In the background: an unreachable worker must not stall the node's callbacks.
        self._configured.policy.end_episode(wait=False)
        summary = episode.summary()
        self._configured.recording.finish(summary)
        text = json.dumps(summary)
        # rclpy fixes a call site's severity at its first call: one call site per severity.
        if summary['outcome'] == 'completed':
            self._node.get_logger().info(f'episode ended: {summary["reason"]}: {text}')
        else:
            self._node.get_logger().warning(f'episode ended: {summary["reason"]}: {text}')
        self._configured.outcome_pub.publish(String(data=text))

    def _publish_chunk_events(self, episode: Episode) -> None:
        while episode.chunk_events:
            event = episode.chunk_events.pop(0)
            self._configured.chunks_pub.publish(String(data=json.dumps(event)))
            self._configured.recording.join(event, episode.stream.engine)

    def _settle(self, last: Command) -> None:
        """End a completed episode at rest at its last target (no hold service: no doubt)."""
        if last.positions:
            self._configured.outputs.hold(last.positions, self._period(), final=True)

    def _check_gripper(self, episode: Episode) -> None:
        """Act on a rejected or aborted gripper goal as gripper_on_failure says."""
        gripper = self._configured.outputs.gripper
        failure = gripper.take_failure() if gripper is not None else ''
        if not failure:
            return
        if self._configured.config.gripper_on_failure == 'hold':
            tick = episode.end('error', failure, hold=True)
            self._hold(tick.command, failure, final=True)
        else:
            self._node.get_logger().error(f'{failure} (gripper_on_failure: continue)')

    def _hold(self, command: Command | None, reason: str, final: bool = False) -> None:
        """
        Publish a hold at the measured positions and call the hold service, if any.

        `final`: the hold ends the episode (its last message: CommandOutputs.hold).
        """
        configured = self._configured
        self._holds.count += 1
        self._holds.last_reason = reason
        configured.recording.hold(reason, command.positions if command is not None else ())
        self._node.get_logger().warning(f'holding: {reason}')
        if command is not None:
            configured.outputs.hold(command.positions, self._period(), final=final)
        if configured.hold_call is not None:
            configured.hold_call.request()

    def _destroy_timer(self) -> None:
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None

    def _reset_timer(self) -> None:
        self._destroy_timer()
        self._timer = self._node.create_timer(self._period(), self._tick)

    def _period(self) -> float:
        if self.episode is not None and self.episode.stream.stats.chunks:
            return self.episode.period
        config, entry = self._configured.config, self._configured.model_entry
        if config.control_rate_hz > 0:
            return 1.0 / config.control_rate_hz
        hz = entry.control_hz if entry else None
        return 1.0 / (hz or FALLBACK_CONTROL_RATE_HZ)
