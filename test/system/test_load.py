"""
The load test: 32 control loops on one local gateway, order and resources checked.

Every loop is `Policy.run()` on a Policy of its own. Its instruction carries the loop's id and
a request number; the gateway serves `make_stamping_policy` (below; the gateway process imports
this module), which writes (loop, request, step) into every action, so each loop checks what it
really executed: chunks in observation order, each step once and in order. Each request's fate
(answered or failed) is noted where it is sent. Assertions are on behaviour and counts, never
on timings: the machine has two shared cores.

The sustained run uses the gateway's defaults (16 inferences at once per model), which 32
pi05-droid loops overload about 1.6 times: requests queue, answers overtake each other, loops
underrun and skip chunks that came too late. None of that may lose or reorder a chunk. The
second run kills the gateway mid-run and starts it again on the same port: every loop must
reconnect by itself and leave no socket or thread behind.
"""

import threading
import time
from typing import Any
import warnings

from fixtures_gateway import encode, TEST_DIR
from PIL import Image
from sequence_ai_ros.client import full_model_id, ImageFrame, Transport
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.fault_matrix import FaultRow, settled
from sequence_ai_ros.harness.proc_stats import open_sockets, resident_kib, thread_count
from sequence_ai_ros.harness.stamped_actions import read_instruction, stamp
from sequence_ai_ros.harness.stamped_loop import StampedLoop

LOOPS = 32
TIME_SCALE = 0.25  # a 1.0 s pi05-droid chunk plays in 0.25 s: 32 loops ask 128 requests/s
RUN_S = 36.0
WARMUP_S = 9.0  # memory after this point is compared with the end of the run
MEMORY_BOUND_KIB = 16 * 1024  # peak to peak; ~12 KiB per request answered in between
# The gateway's RSS swings by ~30 MiB as its worker threads come and go (a glibc arena each):
# peaks of the thirds differed by -4.8 to +5.0 MiB locally, by 24.1 MiB on a clean CI machine
# (its rerun failed too). 32 MiB still fails a leak of 8 KiB or more per request (~4,000).
GATEWAY_MEMORY_BOUND_KIB = 32 * 1024
RESTART_RUN_S = 16.0
KEY = 'seq_load_tests_key_00000000000001'
MODEL = 'pi05-droid'
PREFIX = 'load'


# -- the gateway's plug-in ---------------------------------------------------------------------

class StampingPolicy:
    """A `--policy` plug-in: joints still, and (loop, request, step) in the last column."""

    def __init__(self, profile: Any) -> None:
        self.dim = int(profile.action_dim)

    def act(self, observation: dict, options: dict, rng: Any) -> list[list[float]]:
        """Stamp every step of the chunk with the request's loop and number."""
        loop, seq = read_instruction(observation['instruction'], PREFIX)
        return [[0.0] * (self.dim - 1) + [stamp(loop, seq, i)]
                for i in range(int(options['action_horizon']))]


def make_stamping_policy(profile: Any) -> StampingPolicy:
    """Return the factory named on the load gateway's command line."""
    return StampingPolicy(profile)


def stamping_gateway(*flags: str) -> GatewayProcess:
    """Make a warm, keyed gateway serving StampingPolicy (not yet started)."""
    return GatewayProcess(
        ['--time-scale', str(TIME_SCALE), '--start-warm', '--log-level', 'warning',
         '--policy', 'system.test_load:make_stamping_policy', *flags],
        keys={KEY: 10 ** 9}, import_paths=[TEST_DIR])


# -- one loop ----------------------------------------------------------------------------------

class Loop(StampedLoop):
    """One control loop on its own Policy, played until a deadline (validate then says no)."""

    def __init__(self, number: int, base_url: str, frames: list[ImageFrame],
                 **run_options: Any) -> None:
        super().__init__(number, Transport(api_key=KEY, base_url=base_url), MODEL, frames,
                         PREFIX)
        self.run_options = run_options
        self.deadline = 0.0
        self.last_go = float('inf')
        self.outcome: Any = None
        self.error = ''

    def run(self, start_at: float, seconds: float) -> None:
        """Run from `start_at` for `seconds`, then wait for the fate of every request sent."""
        time.sleep(max(0.0, start_at - time.monotonic()))
        self.deadline = time.monotonic() + seconds
        try:
            self.outcome = self.policy.run(
                self.observe, self.check.act, max_actions=10 ** 6, join_mode='append',
                validate=self.validate, **self.run_options)
        except Exception as exc:  # noqa: BLE001 (the test asserts on it)
            self.error = f'{type(exc).__name__}: {exc}'
        # Requests abandoned at the stop still finish on their worker threads.
        settled(lambda: len(self.stamps.unresolved()), 0, timeout_s=40.0)

    def validate(self, action: Any) -> bool:
        """Say go until the deadline, noting when go was last said."""
        now = time.monotonic()
        if now >= self.deadline:
            return False
        self.last_go = now
        return True


def run_loops(base_url: str, seconds: float, during: Any = None,
              **run_options: Any) -> tuple[list[Loop], int]:
    """
    Run LOOPS loops at once for `seconds`; `during(start_at)` runs on this thread meanwhile.

    Returns the loops (their Policies closed) and how many engine warnings they raised.
    """
    frames = [ImageFrame('exterior_1', encode(Image.new('RGB', (224, 224), (90, 90, 95)))),
              ImageFrame('wrist', encode(Image.new('RGB', (224, 224), (40, 40, 40))))]
    loops = [Loop(i, base_url, frames, **run_options) for i in range(LOOPS)]
    start_at = time.monotonic() + 0.5
    threads = [threading.Thread(target=loop.run, args=(start_at, seconds), name=f'load-{i}')
               for i, loop in enumerate(loops)]
    # Overloaded loops warn that they cannot keep up: expected here, so noted, not printed.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        for thread in threads:
            thread.start()
        if during is not None:
            during(start_at)
        for thread in threads:
            thread.join()
    for loop in loops:
        loop.policy.close()
    return loops, len(caught)


def tally(loops: list[Loop]) -> dict[str, int]:
    """Sum the counts that must add up over every loop."""
    total: dict[str, int] = {'requested': 0, 'sent': 0, 'answered': 0, 'failed': 0, 'lost': 0,
                             'played': 0, 'unplayed': 0, 'stale': 0, 'breaks': 0,
                             'underruns': 0}
    for loop in loops:
        stamps, outcome = loop.stamps, loop.outcome
        total['requested'] += loop.requested
        total['sent'] += len(stamps.sent)
        total['answered'] += len(stamps.answered)
        total['failed'] += len(stamps.failed)
        total['lost'] += len(stamps.unresolved())
        total['played'] += len(loop.check.played)
        # An answer in hand by the last tick that said go was joined at the next (stale or
        # played); one landing after it may be dropped with the stop, reported nowhere.
        total['unplayed'] += len(loop.unplayed(landed_before=loop.last_go))
        total['breaks'] += loop.check.total
        if outcome is not None:
            total['stale'] += outcome.stale_chunks
            total['underruns'] += outcome.underruns
    return total


def answered_by_gateway(stats: dict[str, Any]) -> int:
    """Count the /v1/act calls the gateway answered 200."""
    return sum(int(by_status.get('200', 0)) for by_status in stats['acts'].values())


# -- the tests ---------------------------------------------------------------------------------

def test_32_loops_for_a_sustained_period_lose_and_reorder_nothing(fault_matrix):
    samples: list[tuple[float, int, int]] = []  # (s since start, this process KiB, gateway's)
    with stamping_gateway() as gateway:
        sockets, threads = open_sockets(), thread_count()
        gateway_sockets = open_sockets(gateway.pid)
        stop = threading.Event()
        began = time.monotonic()

        def sample_memory() -> None:
            while not stop.wait(0.5):
                samples.append((time.monotonic() - began, resident_kib(),
                                resident_kib(gateway.pid)))

        sampler = threading.Thread(target=sample_memory, name='load-memory')
        sampler.start()
        try:
            loops, warned = run_loops(gateway.base_url, RUN_S)
        finally:
            stop.set()
            sampler.join()
        stats = gateway.stats()
        gateway_sockets_after = settled(lambda: open_sockets(gateway.pid), gateway_sockets)
        # The sampler thread has ended too: the counts compare like with like.
        sockets_after = settled(open_sockets, sockets)
        threads_after = settled(thread_count, threads)
    total = tally(loops)
    # Peaks of the first and last thirds after warm-up: the gateway's RSS swings by ~30 MiB as
    # its worker threads come and go, a leak lifts every peak; the engines' bounded series
    # (10,000 samples each) still grow over a run this short, a few MiB in all.
    warm = [s for s in samples if s[0] >= WARMUP_S]
    third = max(1, len(warm) // 3)
    early, late = warm[:third], warm[-third:]
    own_growth = max(s[1] for s in late) - max(s[1] for s in early) if warm else 0
    gateway_growth = max(s[2] for s in late) - max(s[2] for s in early) if warm else 0
    model = stats['models'][full_model_id(MODEL)]
    fault_matrix.record(FaultRow(
        area='load', case=f'{LOOPS} client loops for {RUN_S:g} s',
        outcome=f"{total['played']} chunks played in observation order, every step once; "
        f"{total['lost']} lost, {total['breaks']} sequence breaks; {total['unplayed']} "
        f'skipped, all reported stale; peak RSS growth after warm-up {own_growth} KiB here, '
        f'{gateway_growth} KiB in the gateway (bounds {MEMORY_BOUND_KIB} and '
        f'{GATEWAY_MEMORY_BOUND_KIB} KiB)',
        sockets=(sockets, sockets_after), threads=(threads, threads_after),
        extra={**total, 'gateway_answered': answered_by_gateway(stats),
               'connections': stats['connections'], 'max_queued': model['max_queued'],
               'rss_kib_range_after_warmup': [min(s[1] for s in warm), max(s[1] for s in warm)]
               if warm else None,
               'gateway_rss_kib_range_after_warmup': [min(s[2] for s in warm),
                                                      max(s[2] for s in warm)] if warm else None,
               'gateway_sockets': [gateway_sockets, gateway_sockets_after],
               'engine_warnings': warned, 'time_scale': TIME_SCALE,
               'moving_fraction_min': min(
                   (loop.outcome.moving_fraction for loop in loops if loop.outcome),
                   default=None)}))

    assert [loop.error for loop in loops if loop.error] == []
    assert all(loop.outcome.reason == 'validate' for loop in loops), 'each ran to its deadline'
    for loop in loops:
        assert loop.check.breaks() == dict.fromkeys(loop.check.breaks(), 0), loop.number
        assert len(loop.check.played) >= 3, f'loop {loop.number} barely ran'
        # What left counts: a request observed, then cancelled at the stop, was never sent.
        assert loop.outcome.requests == len(loop.stamps.sent)
    # Every request sent was answered or failed; with no fault injected, none failed; every
    # answer the gateway gave reached its loop; every answer not played was reported stale
    # (the rest landed after the loop stopped, and were dropped, never played).
    assert total['lost'] == 0 and total['failed'] == 0
    assert total['requested'] - total['sent'] <= 2 * LOOPS, 'only the stop cancels a request'
    assert total['answered'] == answered_by_gateway(stats)
    assert total['unplayed'] <= total['stale']
    assert len(warm) >= 10, 'memory was sampled through the run'
    assert own_growth < MEMORY_BOUND_KIB and gateway_growth < GATEWAY_MEMORY_BOUND_KIB, \
        [(round(t, 1), own, gw) for t, own, gw in warm]
    assert sockets_after <= sockets and threads_after <= threads
    assert gateway_sockets_after <= gateway_sockets, 'the gateway closed every connection'


def test_32_loops_ride_through_a_gateway_crash_and_reconnect_without_leaks(fault_matrix):
    with stamping_gateway('--concurrency', '64') as gateway:
        sockets, threads = open_sockets(), thread_count()
        crashed: list[float] = []

        def crash(start_at: float) -> None:
            time.sleep(max(0.0, start_at + RESTART_RUN_S / 3 - time.monotonic()))
            gateway.kill()  # SIGKILL, as a crash: every kept-alive connection dies
            crashed.append(time.monotonic())
            gateway.start()  # the same port: the clients must reconnect on their own

        loops, _ = run_loops(gateway.base_url, RESTART_RUN_S, crash, request_retries=8,
                             retry_backoff_s=0.25)
        stats = gateway.stats()  # since the restart
        sockets_after = settled(open_sockets, sockets)
        threads_after = settled(thread_count, threads)
    total = tally(loops)
    restarted_at = crashed[0] if crashed else float('inf')
    after_crash = [loop for loop in loops if any(
        loop.stamps.answered_at[s] > restarted_at for s in loop.check.played)]
    fault_matrix.record(FaultRow(
        area='load', case=f'{LOOPS} client loops, gateway killed and restarted mid-run',
        outcome=f"every loop rode through: {total['failed']} requests failed and were retried, "
        f"{total['lost']} lost, {total['breaks']} sequence breaks; "
        f'{len(after_crash)}/{LOOPS} loops played chunks answered after the restart',
        sockets=(sockets, sockets_after), threads=(threads, threads_after),
        extra={**total, 'connections_after_restart': stats['connections'],
               'answered_after_restart': answered_by_gateway(stats)}))

    assert crashed, 'the gateway was killed mid-run'
    assert [loop.error for loop in loops if loop.error] == []
    for loop in loops:
        assert loop.check.breaks() == dict.fromkeys(loop.check.breaks(), 0), loop.number
    assert total['lost'] == 0 and total['failed'] >= 1
    assert total['unplayed'] <= total['stale']
    assert len(after_crash) == LOOPS, 'every loop reconnected and played new chunks'
    assert 1 <= stats['connections'] <= 2 * LOOPS, 'at most two connections per Policy'
    assert sockets_after <= sockets and threads_after <= threads
