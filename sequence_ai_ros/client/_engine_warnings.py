"""
The engine's configuration warning: the set-up cannot keep the arm moving, with the numbers.

The arithmetic is docs/CHUNK_TIMING.md's: append keeps up while p99 latency <= k x chunk;
aligned and rtc while it is <= k x chunk / (k + 1), later (delayed joins) up to one chunk, and
no k helps from one chunk on.
"""

# The engine sees one round trip; it cannot tell a slow network or model from a gateway whose
# workers are all busy, where more requests in flight only lengthen the queue.
QUEUEING_CAVEAT = (' (unless the latency is requests queueing at a saturated gateway: '
                   'more in flight would only lengthen its queue)')
_NAMES = {'aligned': 'time-aligned joining', 'rtc': 'real-time chunking'}


def configuration_warning(join: str, max_inflight: int, p99: float, chunk_s: float,
                          delay_s: float) -> str | None:
    """
    Return what is wrong with `join` at `max_inflight` for this p99 latency, or None.

    `chunk_s` is a chunk's seconds of motion and `delay_s` how far behind its capture an
    aligned join plays now (ChunkEngine.aligned_delay).
    """
    k = max_inflight
    if join == 'append':
        if p99 <= chunk_s * k:
            return None
        return (f'append joining with max_inflight={k} cannot keep up: p99 latency '
                f'{p99:.3f}s > {k} x chunk {chunk_s:.3f}s; raise max_inflight'
                + QUEUEING_CAVEAT)
    if p99 <= k * chunk_s / (k + 1):
        return None
    if p99 >= chunk_s:
        consequence = ('chunks are appended whole, with no prefix, while that lasts'
                       if join == 'rtc' else 'chunks are appended whole while that lasts')
    else:
        advice = 'raise max_inflight' if join == 'rtc' else \
            'raise max_inflight to stay aligned'
        consequence = (f'joins play up to {delay_s:.3f}s behind their capture while that '
                       f'lasts; {advice}' + QUEUEING_CAVEAT)
    return (f'{_NAMES[join]} with max_inflight={k} cannot keep up: p99 latency {p99:.3f}s > '
            f'{k} x chunk {chunk_s:.3f}s / {k + 1}; ' + consequence)
