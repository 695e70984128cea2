"""
Episodes at the worker: numbered observations, the act that reads them, ends and labels.

A robot numbers its observations per episode from 0 and posts them (several posts at once, so
they may land out of order); an act says how many came before it (`seq`), and reads the newest
of them once every one from the episode's first here up to `seq - 1` has landed. What lacks one
after a short wait is refused `frames_missing` with the first number missing (details.from),
which the client sends again from. An act of an episode this worker never began (nothing of it
here, or only observations from past its first, which a client re-sends to a new worker) is
`episode_lost`: its state went with the process that held it, a gateway restarted under the
robot.
"""

import asyncio
from dataclasses import dataclass, field
import time
from typing import Any

from .errors import DirectError

# Observations kept per episode and not yet read by an act; more are refused, as a worker
# refuses what it cannot hold (the client then leaves them out of the episode).
MAX_KEPT = 256
# How long an act waits for observations still on their way (real seconds).
FRAMES_WAIT_S = 2.0
# Ended episodes remembered, so an act sent after its end is told, not served a new episode.
ENDED_KEPT = 1024
LABELS_KEPT = 1024


@dataclass
class Episode:
    """One episode's observations at the worker."""

    model: str
    first: int  # the first number this worker was sent
    frames: dict[int, Any] = field(default_factory=dict)
    served: int = -1  # every number up to this one was read by an act
    acts: int = 0
    landed: asyncio.Event = field(default_factory=asyncio.Event)

    def through(self) -> int:
        """Return the last number up to which every observation from the first has landed."""
        n = max(self.served, self.first - 1)
        while n + 1 in self.frames:
            n += 1
        return n


class EpisodeBook:
    """Every open episode of this worker, the ended ones it remembers, and labels."""

    def __init__(self, frames_wait_s: float = FRAMES_WAIT_S) -> None:
        self.frames_wait_s = frames_wait_s
        self._open: dict[str, Episode] = {}
        self._ended: dict[str, str] = {}  # episode -> model, oldest first
        self.labels: list[dict[str, Any]] = []
        self.counts = {'observations': 0, 'acts': 0, 'ended': 0, 'lost': 0, 'missing': 0}

    def observe(self, model: str, episode_id: str, frames: list[tuple[int, Any]],
                skipped: list[int]) -> int:
        """Keep an observe post's frames (and numbers left out); return the episode's `through`."""
        episode = self._open.get(episode_id)
        if episode is None:
            numbers = [n for n, _ in frames] + list(skipped)
            episode = self._open[episode_id] = Episode(model, min(numbers) if numbers else 0)
            self._ended.pop(episode_id, None)
        if episode.model != model:
            raise DirectError('invalid_request', 'this episode belongs to another deployment')
        kept = len(episode.frames)
        for number, inputs in frames:
            if number < episode.served or number in episode.frames:
                continue  # sent again: the first copy stands
            if kept >= MAX_KEPT:
                raise DirectError('frames_over_limit', f'more than {MAX_KEPT} observations of '
                                  'this episode wait for an act; act on them first',
                                  details={'from': number, 'limit': MAX_KEPT})
            episode.frames[number] = inputs
            kept += 1
        for number in skipped:
            if number >= episode.served:
                episode.frames.setdefault(number, None)
        self.counts['observations'] += len(frames)
        episode.landed.set()
        episode.landed = asyncio.Event()
        return episode.through()

    async def inputs_for(self, model: str, episode_id: str, seq: int) -> Any:
        """Wait for what an act of `seq` reads: the newest observation before it."""
        if seq <= 0:
            # A client starts its episode anew on a new worker (a gateway restarted under it)
            # and hands the new one none of the old one's observations.
            raise DirectError('invalid_request', 'act() with no observation before it in this '
                              'episode (one starts anew after a reconnect to a new worker, as '
                              'after a gateway restart): hand the robot-arm observation to '
                              'observe() first, then act()')
        deadline = time.monotonic() + self.frames_wait_s
        while True:
            episode = self._open.get(episode_id)
            if episode is not None and (episode.first == 0 or episode.acts) \
                    and episode.through() >= seq - 1:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._why_not(episode, episode_id, seq)
            waiter = episode.landed if episode is not None else None
            try:
                if waiter is None:
                    await asyncio.sleep(min(left, 0.02))
                else:
                    await asyncio.wait_for(waiter.wait(), left)
            except asyncio.TimeoutError:
                pass
        if episode.model != model:
            raise DirectError('invalid_request', 'this episode belongs to another deployment')
        inputs = episode.frames.get(seq - 1)
        if inputs is None:
            raise DirectError('invalid_request', f'observation {seq - 1}, the newest before this '
                              'act, was left out by the robot; observe() again, then act()')
        return inputs

    def served(self, episode_id: str, seq: int) -> None:
        """
        Drop the observations before an answered act's own (that of `seq`).

        Only then: an act refused on the way (a cold model, no credit) is sent again with the
        same number and reads the same observation, which is kept until a later act is served.
        """
        episode = self._open.get(episode_id)
        if episode is None:
            return
        for number in [n for n in episode.frames if n < seq - 1]:
            del episode.frames[number]
        episode.served = max(episode.served, seq - 1)
        episode.acts += 1
        self.counts['acts'] += 1

    def _why_not(self, episode: Episode | None, episode_id: str, seq: int) -> DirectError:
        if episode_id in self._ended:
            return DirectError('invalid_request', 'this episode ended (episode_end); a new one '
                               'starts with a new episode id')
        if episode is None or not (episode.first == 0 or episode.acts):
            self.counts['lost'] += 1
            return DirectError('episode_lost', 'this worker does not hold the episode: the '
                               'gateway restarted and its state went with it; go on in a new '
                               'episode', details={'cause': 'restarted'})
        self.counts['missing'] += 1
        first = episode.through() + 1
        return DirectError('frames_missing', f'observations from number {first} of this episode '
                           f'never arrived; this act reads up to {seq - 1}',
                           details={'from': first})

    def counted_act(self) -> None:
        """Count an act that carried its own inputs (the old form)."""
        self.counts['acts'] += 1

    def end(self, episode_id: str) -> bool:
        """End an episode: its observations are dropped; whether it was open here."""
        episode = self._open.pop(episode_id, None)
        if episode is None:
            return False
        self._ended[episode_id] = episode.model
        while len(self._ended) > ENDED_KEPT:
            del self._ended[next(iter(self._ended))]
        self.counts['ended'] += 1
        return True

    def label(self, model: str, episode_id: str, success: bool, notes: str) -> dict[str, Any]:
        """Keep how an episode went, as the gateway's stats list it."""
        row = {'model': model, 'episode_id': episode_id, 'success': success, 'notes': notes,
               'at': time.time()}
        self.labels.append(row)
        del self.labels[:-LABELS_KEPT]
        return row

    def snapshot(self) -> dict[str, Any]:
        """Return open episodes per model, the counters and the labels."""
        per_model: dict[str, int] = {}
        for episode in self._open.values():
            per_model[episode.model] = per_model.get(episode.model, 0) + 1
        return {'open': per_model, **self.counts, 'labels': list(self.labels)}
