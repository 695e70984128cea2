"""
One bounded episode: the node's control tick, without ROS.

Each tick answers one question: publish this command, publish a hold, do nothing, or end.
Every action is checked before it is allowed out; any doubt (stale or bad input, a gateway
error, an action outside the limits) ends the episode holding. An underrun holds and resumes.

Two kinds of waiting, kept apart: the stream retries a transient failure (lost connection,
timeout, 5xx, malformed answer) `request_retries` times in a row while the plan plays, and
raises the next one; the episode waits out a warming or queued model (a 503 with
Retry-After) up to `startup_timeout_s`: before the first action as a cold start, later holding
the arm while it waits. Everything else ends it holding, and cuts the request in flight
(Policy.interrupt) instead of waiting for its timeout.
"""

from dataclasses import asdict, dataclass
import math
import time
from typing import Any

from sequence_ai_ros.client import ActionStream, Policy, Prediction, SequencesError, Unavailable
from sequence_ai_ros.contract.key_masking import redact

from .arm_output import FORWARD_VELOCITY, PLAN
from .commands import Command, CommandMapper, UnsupportedActionSpace
from .diagnostics import error_kind
from .images import ImageError
from .input_problem import input_problem
from .inputs import InputCache
from .params import NodeConfig
from .safety import check_command, check_velocities, is_stale, SafetyLimits

COMMAND, HOLD, IDLE, END = 'command', 'hold', 'idle', 'end'


@dataclass(frozen=True)
class Tick:
    """
    What the node must do this tick. `command` is set for COMMAND, HOLD and a holding END.

    `ahead` are the checked commands after `command`, one period apart (trajectory_plan);
    `first_s` is when `command` is due after receipt (None: one period).
    """

    kind: str
    command: Command | None = None
    reason: str = ''
    ahead: tuple[Command, ...] = ()
    first_s: float | None = None


class Episode:
    """A bounded run of `max_actions` actions through one ActionStream."""

    def __init__(self, policy: Policy, config: NodeConfig, inputs: InputCache,
                 now: float | None = None) -> None:
        self.config = config
        self.inputs = inputs
        gripper = ((len(config.joint_names), config.max_gripper_step_change),) \
            if config.gripper_joint else ()
        self.limits = SafetyLimits(config.position_lower, config.position_upper,
                                   config.max_step_change, step_overrides=gripper)
        self.stream: ActionStream = policy.new_stream(config.playback, on_chunk=self._on_chunk)
        self._interrupt = policy.interrupt
        # stream.retried when the last chunk joined: the failures absorbed since are "in a row".
        self._retried_at_chunk = 0
        # One record per chunk joined, for the node's ~/chunks topic (monitoring, the demo).
        self.chunk_events: list[dict[str, Any]] = []
        self.started = time.monotonic() if now is None else now
        self.state = 'starting'
        self.reason = ''
        self.outcome = ''
        self.actions = 0
        self.holds = 0
        self.last_error = ''
        self.last_error_kind = ''
        self.warming_eta_s: float | None = None
        self.mapper: CommandMapper | None = None
        self.last_command: Command | None = None
        # The velocities last sent (forward_velocity); None = from rest, after every hold.
        self.last_velocities: tuple[float, ...] | None = None
        # trajectory_plan: when the last command sent is due, and how many checked steps
        # went after it (None after a hold: the next plan starts from rest).
        self._plan_due: float | None = None
        self._plan_sent = 0
        self._retry_at = 0.0
        # When the current wait for a warming or queued model began (None: not waiting); the
        # episode's start counts as the start of the first one.
        self._waiting_since: float | None = self.started
        self._grace_until = self.started + max(config.joint_state_timeout_s,
                                               config.camera_timeout_s)

    @property
    def period(self) -> float:
        """Seconds per action (the engine's: the override, else the chunk's rate)."""
        return self.stream.period

    @property
    def running(self) -> bool:
        """Return False once the episode has ended."""
        return self.state != 'ended'

    @property
    def retries_in_a_row(self) -> int:
        """Transient failures retried since the last chunk joined (> 0: retrying now)."""
        return self.stream.retried - self._retried_at_chunk

    @property
    def last_transient_error(self) -> tuple[str, str]:
        """Return (message, kind) of the last transient failure retried, ('', '') if none."""
        error = self.stream.last_transient_error
        if error is None:
            return '', ''
        return redact(error.message), error_kind(error)

    def tick(self, now: float) -> Tick:
        """Advance the episode to `now`."""
        if not self.running:
            return Tick(IDLE)
        problem, arriving = input_problem(self.inputs, self.config, now)
        if problem:
            if arriving and self.actions == 0 and now < self._grace_until:
                return Tick(IDLE)  # inputs may still be arriving at episode start
            return self.end('safety', f'input: {problem}', hold=True)
        budget = self.stream.needs_more(self.actions, self.config.max_actions)
        try:
            step = self.stream.step(now, self._observe, allow_request=budget and
                                    now >= self._retry_at)
        except Unavailable as exc:
            return self._unavailable(exc, now)
        except SequencesError as exc:
            self._note_error(exc)
            return self.end('error', f'gateway: {exc}', hold=True)
        except (ImageError, ValueError) as exc:
            return self.end('safety', f'input: {exc}', hold=True)
        if step is None:
            return self._starved()
        self.last_error, self.last_error_kind, self.warming_eta_s = '', '', None
        self._waiting_since = None
        skip, first_s = self._catch_up(now)
        # _catch_up skips only steps still in the plan: none of these is None.
        skipped = [self.stream.next_action(now) for _ in range(skip)]
        values = [step.values] + [s.values for s in skipped if s is not None]
        return self._play(values, now, first_s)

    def end(self, outcome: str, reason: str, *, hold: bool) -> Tick:
        """Stop for good: drop the plan and the requests in flight; hold if asked."""
        # The reason goes to the log and the outcome topic and may quote a server's message.
        self.state, self.outcome, self.reason = 'ended', outcome, redact(reason)
        self._interrupt()  # a request in flight fails now; nothing of it is played
        self.stream.close(wait_for_inflight=False)
        if hold:
            self.holds += 1
            return Tick(END, self._hold_command(), self.reason)
        return Tick(END, None, self.reason)

    def close(self) -> None:
        """Release the stream's threads without waiting for requests in flight."""
        self.stream.close(wait_for_inflight=False)

    def summary(self) -> dict[str, Any]:
        """Return the outcome as RunOutcome-like fields, for logs and the outcome topic."""
        fields = asdict(self.stream.report(self.actions))
        return dict(fields, actions=self.actions,
                    elapsed_s=round(time.monotonic() - self.started, 3), holds=self.holds,
                    retries=self.stream.retried,
                    stopped_early=self.outcome != 'completed', outcome=self.outcome,
                    reason=self.reason)

    # -- internals -------------------------------------------------------------------------------

    def _on_chunk(self, prediction: Prediction) -> None:
        self._retried_at_chunk = self.stream.retried
        stats = self.stream.stats
        self.chunk_events.append({
            'chunk': stats.chunks, 'id': prediction.id, 'steps': len(prediction.action_chunk),
            'action_space': prediction.action_chunk.action_space,
            'latency_s': stats.latencies[-1] if stats.latencies else None,
            'server_inference_ms': prediction.perf.get('inference_ms'),
            'actions_before': self.actions, 'warnings': prediction.warnings})

    def _observe(self) -> Any:
        snapshot = self.inputs.snapshot()
        return self.inputs.builder(snapshot, size=self.config.image_size,
                                   quality=self.config.jpeg_quality)

    def _unavailable(self, exc: Unavailable, now: float) -> Tick:
        self._note_error(exc)
        if self._waiting_since is None:
            self._waiting_since = now
        waiting = (exc.warming or exc.queued) and \
            now - self._waiting_since < self.config.startup_timeout_s
        if not waiting:
            return self.end('error', f'gateway: {exc}', hold=True)
        pause = max(1.0, exc.retry_after_s if exc.retry_after_s is not None else 5.0)
        self._retry_at = now + pause
        self.warming_eta_s = exc.retry_after_s
        began_now, self.state = self.state != 'warming', 'warming'
        if began_now and self.actions:
            # The arm was moving: it holds while the model warms (or the line moves) again.
            self.holds += 1
            return Tick(HOLD, self._hold_command(), f'model not ready, waiting: {exc}')
        return Tick(IDLE)

    def _note_error(self, exc: SequencesError) -> None:
        # str(): the message with the service's hint and request id, for the operator.
        self.last_error, self.last_error_kind = redact(str(exc)), error_kind(exc)

    def _starved(self) -> Tick:
        if self.actions == 0 or self.state == 'underrun':
            return Tick(IDLE)
        self.state = 'underrun'
        self.holds += 1
        return Tick(HOLD, self._hold_command(), 'underrun: the next chunk has not arrived')

    def _catch_up(self, now: float) -> tuple[int, float | None]:
        """
        Return (steps to skip, first_s) for trajectory_plan's command at `now`.

        While a tick is late (a stalled process, a busy machine) the controller carries the
        arm along the last plan; a new plan from the next step, due one period from now,
        would take it back over that ground. So the last plan's steps due before now + half a
        period are skipped (checked and sent: the controller is playing them) and the new
        plan keeps their due times. Never past what was sent: there the arm is at rest, and
        the next plan starts from it one period from now.
        """
        if self.config.output_mode != PLAN or self._plan_due is None:
            return 0, None
        period = self.period
        # Leave one action for this tick's command, and skip only steps still in the plan.
        limit = min(self._plan_sent, self.config.max_actions - self.actions - 1,
                    len(self.stream.upcoming(self._plan_sent)))
        skip, due = 0, self._plan_due + period
        while due - now < period / 2 and skip < limit:
            skip, due = skip + 1, due + period
        if due - now < period / 2:
            return skip, period
        return skip, due - now

    def _play(self, values: list[list[float]], now: float, first_s: float | None) -> Tick:
        """Play the step `values[-1]`, after the skipped `values[:-1]` (_catch_up)."""
        measured = self.inputs.last_finite_positions
        assert measured is not None  # input_problem guarantees a finite joint state
        if self.mapper is None:
            space = self.stream.action_space or ''
            try:
                self.mapper = CommandMapper(space, len(self.config.joint_names),
                                            bool(self.config.gripper_joint))
            except UnsupportedActionSpace as exc:
                return self.end('error', str(exc), hold=True)
            self.mapper.reset(measured)
        resumed = False
        if self.state in ('underrun', 'starting', 'warming'):
            if self.state == 'underrun' or (self.state == 'warming' and self.actions):
                self.mapper.reset(measured)  # the hold stopped the arm where it is
                resumed = True
            self.state = 'running'
        # After a hold the arm may have coasted past the hold command before stopping; the
        # integration restarts from where it is now, so that is what the step is measured from.
        previous = self.last_command.positions if self.last_command and not resumed \
            else measured
        for action in values:
            try:
                command = self.mapper.command(action, self.period)
            except ValueError as exc:
                return self.end('error', f'chunk: {exc}', hold=True)
            # A skipped step is checked as if sent: the step after it is measured from it.
            problem = check_command(command.positions, previous, self.limits,
                                    names=self.inputs.layout) or self._velocity_problem(command)
            if problem:
                return self.end('safety', f'action: {problem}', hold=True)
            self.last_command, previous = command, command.positions
            self.actions += 1
        ahead = self._checked_ahead(command)
        if self.config.output_mode == PLAN:
            self._plan_due = now + (self.period if first_s is None else first_s)
            self._plan_sent = len(ahead)
        if self.actions >= self.config.max_actions:
            # The last command still goes out; the node sees `running` drop and reports.
            self.state, self.outcome, self.reason = 'ended', 'completed', 'completed'
            self.stream.close(wait_for_inflight=False)
        return Tick(COMMAND, command, ahead=ahead, first_s=first_s)

    def _velocity_problem(self, command: Command) -> str | None:
        """Check a forward_velocity command's speeds and accelerations (None elsewhere)."""
        config = self.config
        if config.output_mode != FORWARD_VELOCITY:
            return None
        joints = len(config.joint_names)
        velocities = command.velocities[:joints]
        problem = check_velocities(velocities, self.last_velocities, config.velocity_limits,
                                   config.max_acceleration, self.period,
                                   names=config.joint_names)
        if problem is None:
            self.last_velocities = velocities
        return problem

    def _checked_ahead(self, command: Command) -> tuple[Command, ...]:
        """
        Return the plan after `command` to send ahead (trajectory_plan), each step checked.

        No further than plan_ahead_s in all, never past max_actions, and cut before the first
        step that fails a check: that step ends the episode when it is due, not before.
        """
        config = self.config
        if config.output_mode != PLAN or self.mapper is None:
            return ()
        points = max(1, math.floor(config.plan_ahead_s / self.period + 1e-9))
        count = min(points - 1, config.max_actions - self.actions)
        ahead: list[Command] = []
        previous = command.positions
        try:
            preview = self.mapper.preview(self.stream.upcoming(count), self.period)
        except ValueError:  # a malformed step: it ends the episode when it is due
            return ()
        for step in preview:
            if check_command(step.positions, previous, self.limits, names=self.inputs.layout):
                break
            ahead.append(step)
            previous = step.positions
        return tuple(ahead)

    def _hold_command(self) -> Command:
        """Stay at the measured positions; this becomes the step check's previous command."""
        positions = self.inputs.last_finite_positions
        seen = self.inputs.joint_state_time
        # Joint states that stopped (or went back in time) tell where the arm was: it went on
        # to the commands sent since, and a hold at the old positions would move it back.
        stale = is_stale(None if seen is None else time.monotonic() - seen,
                         self.config.joint_state_timeout_s)
        if positions is None or (stale and self.last_command is not None):
            positions = self.last_command.positions if self.last_command else ()
        if self.mapper is not None and positions:
            hold = self.mapper.hold(positions)
        else:
            hold = Command(tuple(positions), (0.0,) * len(positions))
        if positions:
            self.last_command = hold
        self.last_velocities = None
        self._plan_due = None
        return hold
