"""
Episodes on the wire: which episode a request belongs to, and its observations' numbers.

The frames are kept too, so that a worker that missed some (409 frames_missing) can be sent
them again.
"""

from collections import deque
import threading
from typing import Any
import uuid

# Frames kept per episode for a resend: more than the requests a loop keeps in flight.
KEEP_FRAMES = 32


class EpisodeBook:
    """Thread-safe: the current episode, the next observation number, the last ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current: str | None = None
        self.last: str | None = None  # the episode label() names when given none
        self._numbers: dict[str, int] = {}
        self._unsent: dict[str, int] = {}  # the first number the worker has not acknowledged
        self._newest_act: dict[str, int] = {}
        self._kept: dict[str, deque[tuple[int, dict[str, Any]]]] = {}

    def begin(self, episode_id: str | None = None) -> str:
        """Open an episode (a new id unless given) and make it current; return its id."""
        episode = episode_id or uuid.uuid4().hex
        with self._lock:
            self.current = self.last = episode
            self._numbers.setdefault(episode, 0)
            self._kept.setdefault(episode, deque(maxlen=KEEP_FRAMES))
        return episode

    def current_or_begin(self) -> str:
        """Return the current episode, opening one if none is open."""
        with self._lock:
            current = self.current
        return current if current is not None else self.begin()

    def end(self, episode_id: str | None = None) -> str | None:
        """Close `episode_id` (default: the current one); return the id closed, if any."""
        with self._lock:
            episode = episode_id or self.current
            if episode is None:
                return None
            if episode == self.current:
                self.current = None
            self._numbers.pop(episode, None)
            self._unsent.pop(episode, None)
            self._newest_act.pop(episode, None)
            self._kept.pop(episode, None)
            return episode

    def number(self, episode: str, inputs: dict[str, Any]) -> int:
        """Give the next observation of `episode` its number and keep it for a resend."""
        with self._lock:
            seq = self._numbers.get(episode, 0)
            self._numbers[episode] = seq + 1
            self._kept.setdefault(episode, deque(maxlen=KEEP_FRAMES)).append((seq, inputs))
            return seq

    def act_sent(self, episode: str, seq: int) -> None:
        """Note that an act numbered `seq` of `episode` is on its way."""
        with self._lock:
            self._newest_act[episode] = max(self._newest_act.get(episode, 0), seq)

    def under_way(self) -> bool:
        """Tell whether the current episode has an act on a worker (a lost seat loses it)."""
        with self._lock:
            return self.current is not None and self.current in self._newest_act

    def overtaken(self, episode: str, seq: int) -> bool:
        """Tell whether an act of `episode` numbered after `seq` has been sent since."""
        with self._lock:
            return self._newest_act.get(episode, 0) > seq

    def unsent(self, episode: str) -> int:
        """Return the first number of `episode` the worker has not acknowledged."""
        with self._lock:
            return self._unsent.get(episode, 0)

    def acknowledged(self, episode: str, through: int) -> None:
        """Note that the worker holds every observation of `episode` up to `through`."""
        with self._lock:
            self._unsent[episode] = max(self._unsent.get(episode, 0), through + 1)

    def frames_from(self, episode: str, first: int) -> list[tuple[int, dict[str, Any]]]:
        """Return the kept frames of `episode` numbered `first` or later, in order."""
        with self._lock:
            return [frame for frame in self._kept.get(episode, ()) if frame[0] >= first]
