"""
The robot side of an operator session: the ros_harness Robot, auditing every command it gets.

Besides joint states and frames it publishes a safety gate (GATE_PERIOD_S), can withdraw or
refuse its hold service, records when it sent each input (to tell a stall of its own from the
node's) and the node's ~/chunks records. A command is unsafe (a violation) if

- it arrives while no episode may run: between an episode's end (its outcome, then its final
  hold, then a settling time) and the next start request;
- any position or velocity is not finite, or carries a marker value that only a bad answer
  holds (MARKER in a malformed chunk, OUT_OF_LIMITS in an out-of-limits one), or a position
  moved by exactly a marker x the control period (a marker velocity integrated);
- a position is outside position_limits, or more than max_step_change (the gripper:
  max_gripper_step_change) from the previous command (after a reset: from where the robot
  was put).

The auditor is written out here rather than calling the node's own safety.check_command: a
check shared with the code it audits would agree with that code's mistakes.
"""

import collections
import json
import math
import time

from rclpy.service import Service
from ros_harness import CONTROL_PERIOD_S, effective_value, is_final_rest, is_hold, RELIABLE, Robot
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger
from system.test_node_gateway_faults import MARKER

GATE_PERIOD_S = 0.1
OUT_OF_LIMITS = 50.0  # rad/s: one 1/75 s step of it is 0.67 rad, over max_step_change 0.5
MARKERS = (MARKER, OUT_OF_LIMITS)  # values no real chunk holds
EPS = 1e-6


class AuditedRobot(Robot):
    """The ros_harness Robot with a safety gate, a say over its hold service, and an auditor."""

    def __init__(self, node, namespace: str, params: dict) -> None:
        # Before the base class: its timers may fire (on the spinning thread) at once.
        self.frame_sent: collections.deque = collections.deque(maxlen=5000)
        self.gate_sent: collections.deque = collections.deque(maxlen=5000)
        self.violations: list[tuple[float, str]] = []
        self.chunk_events: list[tuple[float, dict]] = []
        self.quiet = True  # no episode may run: any command is a violation
        self.gate_open, self.publish_gate, self.hold_refuses = True, True, False
        self.hold_offered = True
        super().__init__(node, namespace, stamp_frames=True, watch_diagnostics=True)
        self.lower = [float(v) for v in params['position_limits.lower']]
        self.upper = [float(v) for v in params['position_limits.upper']]
        self.max_step = [float(params['max_step_change'])] * (len(self.lower) - 1) + \
            [float(effective_value(params, 'max_gripper_step_change'))]
        self.reference = list(self.positions)
        self._keep(node.create_subscription(String, f'{self.ns}/policy_node/chunks',
                                            self._on_chunk_event, RELIABLE))
        self.every(GATE_PERIOD_S, self._send_gate)

    # -- what the robot does -----------------------------------------------------------------

    def _on_command(self, msg) -> None:
        problem = self.audit(msg)
        if problem:
            self.violations.append((time.monotonic(), problem))
        super()._on_command(msg)
        if msg.points and len(msg.points[0].positions) == len(self.reference):
            self.reference = [float(v) for v in msg.points[0].positions]

    def _send_frames(self) -> None:
        super()._send_frames()
        if self.publish_cameras:
            self.frame_sent.append(time.monotonic())

    def _send_gate(self) -> None:
        if self.publish_gate:
            self.gate_pub.publish(Bool(data=self.gate_open))
            self.gate_sent.append(time.monotonic())

    def _on_hold(self, request, response):
        response = super()._on_hold(request, response)
        if self.hold_refuses:
            response.success, response.message = False, 'brake fault'
        return response

    def _on_chunk_event(self, msg) -> None:
        self.chunk_events.append((time.monotonic(), json.loads(msg.data)))

    def reset(self) -> None:
        """Back to a healthy robot at HOME with the gate open and a willing hold service."""
        super().reset()
        self.reference = list(self.positions)
        self.gate_open = self.publish_gate = True
        self.hold_refuses = False

    # -- the hold service ------------------------------------------------------------------

    def withdraw_hold_service(self) -> None:
        """Destroy the hold service: the node's calls find nobody."""
        name = f'{self.ns}/robot/hold'
        for entity in [e for e in self._entities if isinstance(e, Service)
                       and e.srv_name == name]:
            self.node.destroy_service(entity)
            self._entities.remove(entity)
        self.hold_offered = False

    def offer_hold_service(self) -> None:
        """Offer the hold service again (after withdraw_hold_service)."""
        self._keep(self.node.create_service(Trigger, f'{self.ns}/robot/hold', self._on_hold))
        self.hold_offered = True

    # -- the auditor -------------------------------------------------------------------------

    def audit(self, msg) -> str:
        """Return why a command must not have been sent ('' if it may)."""
        if self.quiet:
            return f'a command while no episode runs ({_describe(msg)})'
        if len(msg.points) != 1 and not is_final_rest(msg):
            return f'{len(msg.points)} points in a command'
        point = msg.points[0]
        values = (*point.positions, *point.velocities)
        if not all(math.isfinite(v) for v in values):
            return f'a non-finite command ({_describe(msg)})'
        if any(abs(v - mark) < 1e-9 for v in values for mark in MARKERS):
            return f'a value of a bad answer reached the arm ({_describe(msg)})'
        if len(point.positions) != len(self.lower):
            return f'{len(point.positions)} positions for {len(self.lower)} values'
        # A velocity integrated into positions shows as a step of exactly marker x period, on
        # each joint the bad answer marked (all of them); one joint alone was a coincidence
        # once (an episode's first step from where the arm rests can be of any size).
        stepped = [abs(abs(p - q) - mark * CONTROL_PERIOD_S) < 1e-6 for mark in MARKERS
                   for p, q in zip(point.positions, self.reference)]
        if sum(stepped) >= 2:
            return f'a step of a bad answer reached the arm ({_describe(msg)})'
        for i, p in enumerate(point.positions):
            if not self.lower[i] - EPS <= p <= self.upper[i] + EPS:
                return f'value {i} at {p:.4f}, outside [{self.lower[i]}, {self.upper[i]}]'
            if abs(p - self.reference[i]) > self.max_step[i] + EPS:
                return (f'value {i} moved {abs(p - self.reference[i]):.4f} in one step '
                        f'(limit {self.max_step[i]})')
        return ''

    # -- history -----------------------------------------------------------------------------

    def sent_gap(self, kind: str, since: float, until: float) -> float:
        """Return the longest pause in this robot's `kind` sends between `since` and `until`."""
        sent = {'joints': self.joint_sent, 'frames': self.frame_sent, 'gate': self.gate_sent}
        times = [since] + [t for t in list(sent[kind]) if since < t < until] + [until]
        return max(b - a for a, b in zip(times, times[1:]))

    def forget(self, before: float) -> None:
        """Drop commands, statuses and chunk events received before `before`."""
        with self._lock:
            self.commands = [c for c in self.commands if c[0] >= before]
        self.diagnostics[:] = [d for d in list(self.diagnostics) if d[0] >= before]
        self.chunk_events[:] = [c for c in self.chunk_events if c[0] >= before]


def _describe(msg) -> str:
    if not msg.points:
        return 'no points'
    point = msg.points[0]
    kind = 'hold' if is_hold(msg) else 'moving'
    return f'{kind}, positions {[round(v, 3) for v in point.positions]}'
