"""
forward_position lines (node/forward_output.py), ROS-free: a fake node, timer and clock.

And the warning configure gives when the controller_manager updates faster than they come.
"""

import numpy as np
import pytest
from sequence_ai_ros.node.controller_check import check_feed_rate, manager_of
from sequence_ai_ros.node.forward_output import ForwardPositionOutput, Segment


class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Timer:

    def __init__(self, callback):
        self.callback, self.running, self.resets = callback, True, 0

    def cancel(self):
        self.running = False

    def reset(self):
        self.running = True
        self.resets += 1


class Node:

    def __init__(self):
        self.timer = None

    def create_timer(self, period, callback):
        self.timer = Timer(callback)
        return self.timer

    def destroy_timer(self, timer):
        self.timer = None


class Publisher:

    def __init__(self, clock):
        self.sent, self.times, self.clock = [], [], clock

    def publish(self, msg):
        self.sent.append(list(msg.data))
        self.times.append(self.clock())


def output(measured=(0.0, 0.0)):
    node, clock = Node(), Clock()
    publisher = Publisher(clock)
    lines = ForwardPositionOutput(node, publisher.publish, 500.0, lambda: list(measured), clock)
    return lines, node, publisher, clock


def play(node, clock, until, every=0.002):
    while clock.now < until - 1e-12:
        clock.now += every
        if node.timer is not None and node.timer.running:
            node.timer.callback()


def test_a_segment_never_goes_past_its_target():
    segment = Segment([0.0], [1.0], began=10.0, duration=0.5)
    assert segment.at(9.0) == ([0.0], False)
    assert segment.at(10.25) == ([0.5], False)
    assert segment.at(11.0) == ([1.0], True)


def test_every_value_lies_between_the_checked_steps_and_the_step_is_reached():
    lines, node, publisher, clock = output()
    steps = [(0.01, -0.02), (0.03, -0.01), (0.02, 0.0)]
    previous = np.array([0.0, 0.0])
    for target in steps:
        start = len(publisher.sent)
        lines.step(target, 1 / 15)
        play(node, clock, clock.now + 1 / 15 + 0.01)
        values = np.array(publisher.sent[start:])
        low, high = np.minimum(previous, target), np.maximum(previous, target)
        assert ((values >= low - 1e-12) & (values <= high + 1e-12)).all()
        assert values[-1].tolist() == pytest.approx(list(target))
        assert np.abs(np.diff(values, axis=0)).max() < 0.002  # ~33 values per step
        previous = np.array(target)
    count = len(publisher.sent)
    play(node, clock, clock.now + 0.1)
    assert len(publisher.sent) == count, 'values published after the step was reached'


def test_a_step_mid_line_goes_on_from_where_the_line_is_in_the_timers_phase():
    # A line restarted from the last value published paused the arm up to a period at each
    # step, and a timer reset at each step left a gap of up to two periods: a kink per step.
    lines, node, publisher, clock = output(measured=(0.0,))
    lines.step((0.015,), 0.1)  # 0.15 rad/s
    play(node, clock, 0.05)
    clock.now += 0.0015  # the next step arrives between two ticks, on at the same speed
    lines.step((0.15 * (clock.now + 0.1),), 0.1)
    play(node, clock, 0.14)
    values = np.array(publisher.sent)[:, 0]
    assert values == pytest.approx(0.15 * np.array(publisher.times), abs=1e-12)
    assert node.timer.resets == 1


def test_a_late_step_leaves_the_output_at_the_last_one():
    lines, node, publisher, clock = output()
    lines.step((0.01, 0.01), 1 / 15)
    play(node, clock, 1.0)
    assert publisher.sent[-1] == pytest.approx([0.01, 0.01])
    assert all(v <= 0.01 + 1e-12 for sent in publisher.sent for v in sent)


def test_a_hold_stops_the_line_at_once():
    lines, node, publisher, clock = output()
    lines.step((0.1, 0.1), 1 / 15)
    play(node, clock, 0.02)
    lines.hold((0.03, 0.03))
    assert publisher.sent[-1] == [0.03, 0.03]
    count = len(publisher.sent)
    play(node, clock, 0.2)
    assert len(publisher.sent) == count, 'the line went on after the hold'


def test_the_first_line_of_an_episode_starts_at_the_measured_positions():
    lines, node, publisher, clock = output(measured=(0.5, 0.5))
    lines.step((0.51, 0.49), 1 / 15)
    play(node, clock, 0.004)
    assert publisher.sent[0] == pytest.approx([0.5, 0.5], abs=0.001)


def test_configure_warns_when_the_controller_manager_updates_faster_than_the_lines_come():
    manager = manager_of('/arm/forward_position_controller')
    assert manager == '/arm/controller_manager'
    (warning,) = check_feed_rate(1000.0, 500.0, manager)
    assert '/arm/controller_manager updates at 1000 Hz' in warning
    assert 'forward_output_rate_hz 500' in warning and 'trajectory_stream' in warning
    assert 'each step at once' in check_feed_rate(100.0, 0.0, manager)[0]
    assert check_feed_rate(500.0, 500.0, manager) == []
    assert check_feed_rate(None, 500.0, manager) == []  # a manager that did not answer
    assert manager_of('/forward_position_controller') == '/controller_manager'
