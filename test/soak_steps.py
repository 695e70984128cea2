"""
The chaos soak's own steps, on top of the operator session's: the gateway killed or frozen.

Like the session's, each starts in the resting state and brings the node back to it.
"""

from collections.abc import Callable
import os
import signal
import time

from operator_harness import ERROR, Session
from operator_plan import Step
from ros_harness import NODE_SCALE


def gateway_killed(s: Session) -> str:
    run = s.begin()
    killed = time.monotonic()
    s.gateway.kill()  # SIGKILL: no answer for the requests in flight
    try:
        s.check_dry_hold('gateway killed', killed)
        result = s.finish(run, 'error', 'gateway: ')
    finally:
        s.gateway.start()
    s.expect_status('episode', ERROR, 'ended by an error', run.ended)
    return result['reason']


def gateway_frozen(seconds: float | None) -> Callable[[Session], str]:
    """
    Return a step that freezes the gateway with SIGSTOP mid-episode.

    For `seconds` (less than the request timeout: answers come late, an underrun holds and
    the episode resumes after SIGCONT), or None: until the retries are spent and the episode
    ends holding.
    """
    def run_frozen(s: Session) -> str:
        run = s.begin()
        frozen = time.monotonic()
        pid = s.gateway.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            s.check_dry_hold('gateway frozen', frozen)
            if seconds is None:
                result = s.finish(run, 'error', 'gateway: ')
            else:
                time.sleep(max(0.0, frozen + seconds - time.monotonic()))
        finally:
            os.kill(pid, signal.SIGCONT)
        if seconds is None:
            s.expect_status('episode', ERROR, 'ended by an error', run.ended)
            return result['reason']
        s.still_running(run, time.monotonic())
        result = s.stop(run)
        return f'{result["underruns"]} underruns, {result["retries"]} retries, then stopped'
    return run_frozen


def latency_spike(s: Session) -> str:
    """Add 0.3 s each way (latency over three chunks) for a while: underruns, then it goes on."""
    run = s.begin()
    s.proxy.latency_s = 0.3
    time.sleep(1.5)
    s.proxy.latency_s = 0.0
    s.still_running(run, time.monotonic())
    result = s.stop(run)
    return f'{result["underruns"]} underruns, then stopped'


SOAK_STEPS = [
    Step('gateway killed mid-episode (SIGKILL)', 'gateway process', gateway_killed),
    Step(f'gateway frozen (SIGSTOP) {5 * NODE_SCALE:g} s mid-episode', 'gateway process',
         gateway_frozen(5 * NODE_SCALE)),
    Step('gateway frozen (SIGSTOP) until the retries are spent', 'gateway process',
         gateway_frozen(None)),
    Step('latency spike (+0.6 s a round trip)', 'network', latency_spike),
]
