"""
What the robot is told during an underrun of run(): the local gateway stopped mid-run.

The gateway is a real process frozen with SIGSTOP (and thawed with SIGCONT): a silent server.
The kernel still accepts its connections and takes the requests, nothing answers. Before this,
run() called nothing while it waited, and the robot had no command and no hold for up to
(retries + 1) x timeout_s; now hold() and on_underrun_start() come at the tick whose action is
missing. The sequence-ai client's own on_underrun keeps its meaning (after, with seconds), which
is checked against the published `sequence-ai` 0.1.0 client on the same outage.
"""

import os
import signal
import threading
import time

from fixtures_gateway import act_body, gateway_fixture
from observations import observation
import pytest
import sequence_ai
import sequence_ai_ros as sai
from sequence_ai_ros.gateway.process import free_port

KEY = 'seq_client_underrun_tests_key_0001'
SCALE = 0.5  # pi05-droid: 15 steps at 30 Hz, a 0.5 s chunk; latency median 0.15 s
OBS = observation()
STOP_AT = 40  # the act() that freezes the gateway: a few chunks in, latency measured
# The plan and the requests in flight cover at most the lead (tail latency + a period) plus
# a chunk, under 0.9 s here: a 1.5 s outage always runs the plan dry.
OUTAGE_S = 1.5
# Generous against a two-core machine shared with other runs; the loop this replaces told
# the robot nothing for seconds (a timeout_s at the least).
MARGIN_S = 0.25
# The frozen requests' latency lands in the window: the engine rightly warns it cannot keep up.
pytestmark = pytest.mark.filterwarnings('ignore:append joining:RuntimeWarning')


gateway = gateway_fixture(
    ['--time-scale', str(SCALE), '--start-warm', '--latency-median-s', '0.3'], keys={KEY: 100000})


class Outage:
    """Freeze the gateway with SIGSTOP; thaw it `resume_after_s` later, else on exit."""

    def __init__(self, gateway, resume_after_s=None):
        self.pid = gateway.pid
        self.resume_after_s = resume_after_s
        self.stopped_at = self.resumed_at = None
        self._lock = threading.Lock()
        self._timer = None

    def stop(self):
        self.stopped_at = time.monotonic()  # before the signal: every bound below stays safe
        os.kill(self.pid, signal.SIGSTOP)
        if self.resume_after_s is not None:
            self._timer = threading.Timer(self.resume_after_s, self.resume)
            self._timer.start()

    def resume(self):
        with self._lock:
            if self.stopped_at is not None and self.resumed_at is None:
                self.resumed_at = time.monotonic()
                os.kill(self.pid, signal.SIGCONT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._timer is not None:
            self._timer.cancel()
        self.resume()  # never leave the module's gateway frozen for the next test


class Robot:
    """Plays the robot: logs every call run() makes to it, in order, with the time."""

    def __init__(self, outage):
        self.outage = outage
        self.events = []  # (name, monotonic time, value)
        self.period = None

    def log(self, name, value=None):
        self.events.append((name, time.monotonic(), value))

    def observe(self):
        self.log('observe')
        return OBS

    def validate(self, action):
        self.log('validate')
        return True

    def act(self, action):
        self.log('act')
        if self.names().count('act') == STOP_AT:
            self.outage.stop()

    def hold(self):
        self.log('hold')

    def on_chunk(self, prediction):
        self.period = 1.0 / prediction.action_chunk.control_frequency_hz
        self.log('chunk', len(prediction.action_chunk))

    def run(self, policy, **kwargs):
        kwargs.setdefault('max_actions', 90)
        return policy.run(self.observe, self.act, validate=self.validate, hold=self.hold,
                          on_chunk=self.on_chunk, on_underrun=lambda s: self.log('underrun', s),
                          on_underrun_start=lambda: self.log('underrun_start'), **kwargs)

    # -- reading the log --

    def names(self, events=None):
        return [name for name, _, _ in (self.events if events is None else events)]

    def where(self, name):
        return [i for i, (n, _, _) in enumerate(self.events) if n == name]

    def time(self, i):
        return self.events[i][1]

    def last_act_before(self, i):
        return max(j for j in self.where('act') if j < i)

    def assert_told_at_the_buffers_end(self, i):
        """Assert the call at index i came as the plan ran dry: every joined step played."""
        before = self.events[:i]
        joined = sum(value for name, _, value in before if name == 'chunk')
        assert self.names(before).count('act') == joined, 'hold must come when the plan is dry'
        gap = self.time(i) - self.time(self.last_act_before(i))
        assert gap <= self.period + MARGIN_S, f'{gap:.3f} s after the last act'


def connect(gateway, **kwargs):
    return sai.connect('pi05-droid', api_key=KEY, base_url=gateway.base_url, **kwargs)


def test_an_underrun_holds_at_its_start_and_act_resumes_after_sigcont(gateway):
    with Outage(gateway, resume_after_s=OUTAGE_S) as outage:
        robot = Robot(outage)
        with connect(gateway, timeout_s=5.0) as policy:
            outcome = robot.run(policy)
    assert outcome.actions == 90 and outcome.reason == 'completed' and not outcome.stopped_early
    holds, starts = robot.where('hold'), robot.where('underrun_start')
    ends = robot.where('underrun')
    # Every underrun (the outage's, and any the load made) follows one rule; none holds at the end.
    assert len(holds) == len(starts) == len(ends) == outcome.underruns == outcome.holds >= 1
    for hold, start, end in zip(holds, starts, ends):
        robot.assert_told_at_the_buffers_end(hold)
        assert start == hold + 1, 'on_underrun_start right after hold'
        assert {'act', 'validate'}.isdisjoint(robot.names(robot.events[start:end])), \
            'nothing moves while the loop waits'
        assert robot.names(robot.events[end:end + 3]) == ['underrun', 'validate', 'act']
    # The outage's underrun: held while the gateway was frozen, counted with its seconds.
    frozen = [(h, e) for h, e in zip(holds, ends)
              if outage.stopped_at <= robot.time(h) <= outage.resumed_at]
    assert len(frozen) == 1, 'exactly one underrun began while the gateway was stopped'
    hold, end = frozen[0]
    seconds = robot.events[end][2]
    assert seconds >= outage.resumed_at - robot.time(hold)
    assert seconds == pytest.approx(robot.time(end) - robot.time(hold), abs=MARGIN_S)
    assert outcome.longest_underrun_s >= seconds
    assert outcome.underrun_s == pytest.approx(sum(robot.events[e][2] for e in ends))
    # act() resumed, every action checked first, and paced from the resumption: no burst.
    acts = [i for i in robot.where('act') if i > end]
    assert len(acts) >= 11
    assert robot.time(acts[10]) - robot.time(acts[0]) >= 10 * robot.period - 1e-3
    assert len(robot.where('validate')) == len(robot.where('act')) == 90
    assert all(robot.events[i - 1][0] == 'validate' for i in robot.where('act'))


def test_a_gateway_that_never_answers_raises_after_the_retries_held_from_the_buffers_end(
        gateway):
    timeout_s, retries = 1.0, 2
    with Outage(gateway) as outage:
        robot = Robot(outage)
        with connect(gateway, timeout_s=timeout_s) as policy:
            with pytest.raises(sai.Unavailable, match='timed out') as caught:
                # One request at a time, so the requests after the last chunk are exactly the
                # one that timed out and its retries.
                robot.run(policy, max_actions=300, request_retries=retries, retry_backoff_s=0.1,
                          max_inflight=1)
    assert not caught.value.warming
    last_act = robot.where('act')[-1]
    assert robot.names(robot.events[last_act + 1:]) in (
        ['hold', 'underrun_start', 'observe', 'observe', 'hold'],
        ['observe', 'hold', 'underrun_start', 'observe', 'observe', 'hold'])
    first, final = robot.where('hold')
    robot.assert_told_at_the_buffers_end(first)
    assert robot.time(first) > outage.stopped_at
    last_chunk = robot.where('chunk')[-1]
    requests = robot.names(robot.events[last_chunk:]).count('observe')
    assert requests == retries + 1, 'one request and its two retries, no more'
    # Held from the buffer's end through the two retries' timeouts, then held once more (the
    # loop stopped early) just before the error was raised.
    assert robot.time(final) - robot.time(first) >= retries * timeout_s
    assert 'underrun' not in robot.names(), 'on_underrun is for an underrun that ended'


def test_hold_on_underrun_false_calls_hold_as_the_sequence_ai_client_does(gateway):
    with Outage(gateway, resume_after_s=OUTAGE_S) as outage:
        robot = Robot(outage)
        with connect(gateway, timeout_s=5.0) as policy:
            outcome = robot.run(policy, hold_on_underrun=False)
    assert outcome.reason == 'completed' and outcome.underruns >= 1
    assert robot.where('hold') == [] and outcome.holds == 0
    starts, ends = robot.where('underrun_start'), robot.where('underrun')
    assert len(starts) == len(ends) == outcome.underruns
    for start in starts:
        robot.assert_told_at_the_buffers_end(start)


def test_hold_on_underrun_must_be_a_bool():
    dead = f'http://127.0.0.1:{free_port()}'
    with sai.connect('pi05-droid', api_key=KEY, base_url=dead) as policy:
        with pytest.raises(TypeError, match='pass the callable as hold='):
            policy.run(lambda: OBS, lambda a: None, validate=lambda a: True, max_actions=5,
                       hold_on_underrun=lambda: None)


# -- the sequence-ai client's on_underrun, unchanged -------------------------------------------

def _published_observation():
    wire = act_body()['observation']
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(f['view'], f['data']) for f in wire['images']],
        proprioception=sequence_ai.Proprioception(**wire['proprioception']),
        instruction=wire['instruction'])


def _assert_on_underrun_means_after_with_seconds(robot, outage):
    """Assert the outage's stall reached on_underrun once over, before the next act."""
    ends = robot.where('underrun')
    end = min(e for e in ends if robot.time(e) >= outage.resumed_at)
    before = robot.last_act_before(end)
    assert not any(n in ('underrun', 'act') for n in robot.names(robot.events[before + 1:end]))
    assert 'act' in robot.names(robot.events[end:]), 'called before motion resumes'
    seconds, dry_at = robot.events[end][2], robot.time(before) + robot.period
    assert outage.resumed_at - dry_at - MARGIN_S <= seconds
    assert seconds <= robot.time(end) - dry_at + MARGIN_S
    return len(ends)


def test_on_underrun_is_called_after_with_seconds_as_in_the_sequence_ai_client(gateway):
    with Outage(gateway, resume_after_s=OUTAGE_S) as outage:
        published = Robot(outage)
        with sequence_ai.connect('pi05-droid', api_key=KEY, base_url=gateway.base_url,
                                 timeout_s=5.0) as policy:
            obs = _published_observation()
            theirs = policy.run(lambda: obs, published.act, validate=published.validate,
                                hold=published.hold, on_chunk=published.on_chunk,
                                on_underrun=lambda s: published.log('underrun', s),
                                max_actions=90)
    assert theirs.reason == 'completed'
    assert _assert_on_underrun_means_after_with_seconds(published, outage) == theirs.underruns
    assert published.where('hold') == []  # the published client tells the robot nothing
    with Outage(gateway, resume_after_s=OUTAGE_S) as outage:
        ours = Robot(outage)
        with connect(gateway, timeout_s=5.0) as policy:
            outcome = ours.run(policy)
    assert outcome.reason == 'completed'
    assert _assert_on_underrun_means_after_with_seconds(ours, outage) == outcome.underruns
    assert len(ours.where('hold')) == outcome.underruns  # ours adds the hold at the start
