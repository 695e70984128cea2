"""
Trajectory execution as ros2_control's joint_trajectory_controller (JTC) does it, ROS-free.

Times are plain seconds on one clock the caller chooses (the sim passes its ROS clock, the
clock `header.stamp` is written in); nothing here reads a clock, so tests inject time.

Ported from ros-controls/ros2_controllers; each rule cites `<path> @ <commit> (<branch>),
lines A-B` (how each version's branch was, or was not, established: jtc_rules). In
joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
unverified) unless another version is named:

- A message is checked on receipt (jtc_rules; topic_callback, lines 1508-1524); a rejected
  one changes nothing and its reason is logged with upstream's text. An accepted one waits in
  a one-slot buffer (add_new_trajectory_msg, lines 2142-2146): the *next* update replaces
  the running trajectory with the newest message (lines 279-302; topics never queue).
- Joints the message omits (allow_partial_joints_goal) keep their last commanded position,
  with zero velocity/acceleration where the message has those fields (fill_partial_goal,
  lines 1654-1733).
- The first update of a new trajectory takes the point before it (lines 314-333): the
  measured state at that time, or the last command with open_loop_control
  (joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master,
  4.5.0), lines 157-173; 38679ea8 calls it interpolate_from_desired_state). Measured
  velocities count only with a 'velocity' state interface (lines 633-653). In
  joint_trajectory_controller/src/trajectory.cpp @ 01936294 (branch unverified): a zero
  stamp starts the trajectory at that update (lines 75-84); before point 0 the segment runs
  from that state to point 0 (lines 97-119), whose spline the fields both ends carry select
  (lines 191-192, 207-298); a stamped trajectory already under way is joined where it is
  now (lines 121-151); after the last point its positions are commanded on (lines 153-166).
- cmd_timeout (off at 0, and dropped unless greater than constraints.goal_time: lines
  1259-1278) counts from the last point's time: once it is exceeded, "Aborted due to command
  timeout" and the controller holds the measured position (lines 370-389). Only while not
  holding: every accepted message, on the topic (topic_callback) or as a goal
  (goal_accepted_callback), arms it again; the controller's own holds disarm it
  (set_hold_position, and set_success_trajectory_point when a goal succeeds). A topic
  message therefore always ends with that WARN unless another replaces it.
- At activation, and on hold(), the controller holds the measured position (a one-point,
  zero-time trajectory), as set_hold_position() does (lines 1255-1257, 2163-2173;
  init_hold_position_msg, lines 2386-2410).
- Jazzy and kilted command the sample one control period ahead (#1306, lines 346-349);
  humble the sample now (joint_trajectory_controller/src/joint_trajectory_controller.cpp
  @ 07749aa0 (master, 4.5.0), lines 176-179, the form before #1306).
"""

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from sequence_ai_ros.sim import jtc_rules
from sequence_ai_ros.sim.jtc_rules import JtcParams, Point, TrajectoryMsg
from sequence_ai_ros.sim.splines import deduce_from_derivatives, interpolate, State

Log = Callable[[str, str], None]


def _array(values: Sequence[float]) -> np.ndarray | None:
    return np.array(values, dtype=float) if len(values) else None


class Trajectory:
    """
    One accepted message in controller joint order, sampled as trajectory.cpp samples it.

    Trajectory::sample: joint_trajectory_controller/src/trajectory.cpp @ 01936294 (branch
    unverified), lines 60-167.
    """

    def __init__(self, msg: TrajectoryMsg) -> None:
        self.msg = msg
        self.start_time = msg.stamp
        self.times = np.array(msg.times, dtype=float)
        # Working copies: deduce_from_derivatives fills them in place, as upstream does
        # (joint_trajectory_controller/src/trajectory.cpp @ 01936294, lines 301-334).
        self.points = [State(_array(p.positions), _array(p.velocities), _array(p.accelerations))
                       for p in msg.points]
        self.sampled_already = False
        self.time_before = 0.0
        self.state_before = State(None)

    def set_point_before(self, time: float, state: State) -> None:
        """Set the state the segment before point 0 starts from."""
        self.time_before = time
        self.state_before = State(state.positions.copy() if state.positions is not None else None,
                                  state.velocities, state.accelerations)

    def sample(self, t: float, interpolation: str) -> tuple[State, int, bool] | None:
        """
        Return (state, index of the segment's start point, before the last point?) at `t`.

        None before the point before the trajectory (upstream: "not a valid point";
        joint_trajectory_controller/src/trajectory.cpp @ 01936294 (branch unverified), lines
        86-90).
        """
        if not self.sampled_already:
            if self.start_time == 0.0:
                self.start_time = t
            self.sampled_already = True
        if t < self.time_before:
            return None
        dim = self.state_before.positions.size if self.state_before.positions is not None else 0
        first_time = self.start_time + self.times[0]
        if t < first_time:
            if interpolation == 'none':
                return self.state_before, 0, True
            deduce_from_derivatives(self.state_before, self.points[0], dim,
                                    first_time - self.time_before)
            return interpolate(self.time_before, self.state_before, first_time, self.points[0],
                               t), 0, True
        for i in range(len(self.points) - 1):
            t0, t1 = self.start_time + self.times[i], self.start_time + self.times[i + 1]
            if t0 <= t < t1:
                if interpolation == 'none':
                    return self.points[i + 1], i, True
                deduce_from_derivatives(self.points[i], self.points[i + 1], dim, t1 - t0)
                return interpolate(t0, self.points[i], t1, self.points[i + 1], t), i, True
        last = self.points[-1]
        zeros = np.zeros(dim)
        return State(last.positions, last.velocities if last.velocities is not None else zeros,
                     last.accelerations if last.accelerations is not None else zeros), \
            len(self.points) - 1, False


class TrajectoryExecutor:
    """The JTC of some joints: checks messages, and each update says where they should be."""

    def __init__(self, params: JtcParams, update_period: float, log: Log | None = None) -> None:
        self.params = params
        self.update_period = update_period
        self._log = log or (lambda level, text: None)
        self._index = {name: i for i, name in enumerate(params.joints)}
        self._pending: TrajectoryMsg | None = None
        self._trajectory: Trajectory | None = None
        self._holding = True
        self._activated = False
        self._cmd_timeout = 0.0
        self._last_state = State(None)
        self._command: np.ndarray | None = None
        self._commanded = State(None)
        self._command_time = 0.0
        self._accepted = 0
        self._pending_number = 0
        self.running = 0
        self.before_last_point = False

    @property
    def joints(self) -> tuple[str, ...]:
        """Return the controller's joints, in its order."""
        return self.params.joints

    @property
    def holding(self) -> bool:
        """Return True while the controller holds a position rather than follows a message."""
        return self._holding

    def set_params(self, params: JtcParams) -> None:
        """
        Apply dynamic parameters (upstream refreshes them every update, #761).

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 264-274.
        """
        if params.joints != self.params.joints:
            raise ValueError('joints are read-only')
        self.params = params

    @property
    def measured(self) -> np.ndarray | None:
        """Return the positions the last update read (None before the first)."""
        return self._last_state.positions

    @property
    def command(self) -> np.ndarray | None:
        """Return the last position sent (None before the first update)."""
        return self._command

    def check(self, msg: TrajectoryMsg, now: float) -> str | None:
        """Return (and log) why the controller refuses `msg` at `now`, or None."""
        reason = jtc_rules.validate_trajectory(msg, self.params, now) or jtc_rules.sim_checks(msg)
        if reason:
            self._log('error', reason)
        return reason

    def accept(self, msg: TrajectoryMsg) -> int:
        """Queue a checked `msg` for the next update; return its number (see `running`)."""
        self._accepted += 1
        self._pending, self._pending_number = msg, self._accepted
        self._holding = False
        return self._accepted

    def receive(self, msg: TrajectoryMsg, now: float) -> str | None:
        """
        Check `msg` as topic_callback does and queue it; None if accepted, else the reason.

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 1508-1524.
        """
        reason = self.check(msg, now)
        if reason is None:
            self.accept(msg)
        return reason

    def succeed(self) -> None:
        """
        Go on commanding the last point at rest (set_success_trajectory_point).

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 2263-2275.
        """
        if self._trajectory is not None:
            last = replace(self._trajectory.msg.points[-1], time_from_start=0.0)
            self._pending, self._pending_number = TrajectoryMsg(self.params.joints, (last,)), 0
            self._holding = True

    def hold(self) -> None:
        """
        Hold the last measured position from the next update on (set_hold_position).

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 2163-2173.
        """
        if self._last_state.positions is not None:
            self._pending, self._pending_number = self._hold_msg(self._last_state.positions), 0
            self._holding = True

    def update(self, now: float, position: np.ndarray, velocity: np.ndarray) -> np.ndarray:
        """Return the position command for every joint at `now`, given their measured state."""
        state = State(np.asarray(position, dtype=float).copy(),
                      np.asarray(velocity, dtype=float).copy()
                      if 'velocity' in self.params.state_interfaces else None)
        self._last_state = state
        if not self._activated:
            self._activate(now, state)
        if self._pending is not None:
            self._trajectory = Trajectory(self._sorted(self._filled(self._pending)))
            self._pending = None
            # The number of the message now running; 0 for a hold the controller made itself.
            self.running, self._pending_number = self._pending_number, 0
        traj = self._trajectory
        assert self._command is not None
        if traj is None:
            return self._command.copy()
        if not traj.sampled_already:
            if self.params.open_loop_control:
                traj.set_point_before(self._command_time, self._commanded)
            else:
                traj.set_point_before(now, state)
        method = self.params.interpolation_method
        traj.sample(now, method)  # establishes the start time of a zero stamp, as upstream
        ahead = self.update_period if jtc_rules.samples_next_cycle(self.params.distro) else 0.0
        sampled = traj.sample(now + ahead, method)
        if sampled is None:
            return self._command.copy()
        desired, start_index, self.before_last_point = sampled
        since = now - (traj.start_time + traj.times[start_index])
        if (not self.before_last_point and not self._holding and self._cmd_timeout > 0.0
                and since > self._cmd_timeout):
            self._log('warn', 'Aborted due to command timeout')
            self._pending, self._pending_number = self._hold_msg(state.positions), 0
            self._holding = True
        assert desired.positions is not None
        self._command = desired.positions.copy()
        self._commanded = State(self._command.copy(), desired.velocities, desired.accelerations)
        self._command_time = now
        return self._command.copy()

    def _activate(self, now: float, state: State) -> None:
        """
        Do what on_activate does: hold the measured position, parse cmd_timeout.

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 1255-1278.
        """
        assert state.positions is not None
        self._activated = True
        self._command = state.positions.copy()
        self._commanded = State(state.positions.copy(), state.velocities)
        self._command_time = now
        self._pending = self._hold_msg(state.positions)
        self._holding = True
        self._cmd_timeout, warning = jtc_rules.effective_cmd_timeout(self.params)
        if warning:
            self._log('warn', warning)

    def _hold_msg(self, positions: np.ndarray) -> TrajectoryMsg:
        """
        Build init_hold_position_msg's message: one point at `positions`, stamp 0, time 0.

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 2386-2410, filled by set_hold_position, lines 2163-2173.
        """
        return TrajectoryMsg(self.params.joints, (Point(tuple(float(v) for v in positions)),))

    def _filled(self, msg: TrajectoryMsg) -> TrajectoryMsg:
        """
        Port of fill_partial_goal: add the missing joints, holding their last command.

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 1654-1733.
        """
        missing = [name for name in self.params.joints if name not in msg.joint_names]
        if not missing:
            return msg
        assert self._command is not None
        hold = tuple(float(self._command[self._index[name]]) for name in missing)
        zeros = (0.0,) * len(missing)
        points = tuple(replace(
            p, positions=p.positions + hold if p.positions else (),
            velocities=p.velocities + zeros if p.velocities else (),
            accelerations=p.accelerations + zeros if p.accelerations else (),
            effort=p.effort + zeros if p.effort else ()) for p in msg.points)
        return TrajectoryMsg(msg.joint_names + tuple(missing), points, msg.stamp)

    def _sorted(self, msg: TrajectoryMsg) -> TrajectoryMsg:
        """
        Port of sort_to_local_joint_order: every field in the controller's joint order.

        joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
        unverified), lines 1927-1974.
        """
        order = [msg.joint_names.index(name) for name in self.params.joints]

        def remap(values: tuple[float, ...]) -> tuple[float, ...]:
            return tuple(values[i] for i in order) if values else values

        points = tuple(replace(p, positions=remap(p.positions), velocities=remap(p.velocities),
                               accelerations=remap(p.accelerations), effort=remap(p.effort))
                       for p in msg.points)
        return TrajectoryMsg(self.params.joints, points, msg.stamp)
