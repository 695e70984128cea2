"""
The chunk-timing arithmetic a ChunkEngine decides by (docs/CHUNK_TIMING.md derives it).

C is a chunk's seconds of motion, L the planning latency (a p99 estimate), k the requests
allowed in flight, and the lead the covered time a request starts at (L + one period).
"""

from collections.abc import Iterable

# A request in flight longer than this many planning latencies (a p99 estimate) is not
# counted on: a backup starts while a slot is free. At 2 a heavy tail (3-5x the median) was
# backed up too late to shorten its stall at all; at 1, about 1% of requests are backed up.
LATE_FACTOR = 1.0


def join_in_force(join: str, latency: float | None, chunk_s: float) -> str:
    """
    Return `join`, or 'append' for an aligned or rtc join while L >= C.

    From L >= C on, every aligned chunk would land wholly in the past; appended whole they
    keep the arm moving until latency comes back down. Before any chunk (C == 0) or any
    sample, the configured join holds.
    """
    if join == 'append' or not chunk_s or latency is None or latency < chunk_s:
        return join
    return 'append'


def aligned_delay(lead: float, period: float, chunk_s: float, max_inflight: int) -> float:
    """
    Return the seconds an aligned join plays behind its capture: 0 while latency allows.

    A request fires when the coverage left is the lead and a chunk delayed by d covers until
    capture + d + C, so requests start every d + C - lead seconds; k of them in flight keep up
    while that is at least L / k, hence d = max(0, lead + L/k - C), which is 0 while
    L <= k*(C - period)/(k+1).
    """
    latency = lead - period
    return max(0.0, lead + latency / max_inflight - chunk_s)


def covered_until(now: float, buffered_s: float, captures: Iterable[float],
                  latency: float | None, chunk_s: float, *, append: bool, parked: int,
                  delay: float) -> float:
    """
    Return until when the plan and the requests in flight (`captures`) keep the arm moving.

    A request in flight for more than LATE_FACTOR times the planning latency is late beyond
    the tail planned for: it is not counted, so a backup starts while a slot is free instead
    of the arm starving behind it (the one that lands second is stale). Appended, each request
    and each `parked` chunk adds a chunk; aligned, one reaches its capture + `delay` + C.
    """
    pending = [capture for capture in captures
               if latency is None or now - capture <= LATE_FACTOR * latency]
    horizon = now + buffered_s
    if append:
        return horizon + (len(pending) + parked) * chunk_s
    for capture in sorted(pending):
        # An aligned chunk never extends what is already covered by more than one chunk (it
        # may land after the plan has run out).
        horizon = max(horizon, min(capture + delay + chunk_s, horizon + chunk_s))
    return horizon
