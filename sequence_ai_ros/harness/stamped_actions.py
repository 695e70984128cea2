"""
Stamped actions: every action names its loop, request and step, so order is checked as played.

A test or benchmark policy writes one number into the last value of each action of a chunk:

    stamp = loop * LOOP_UNIT + seq * SEQ_UNIT + step

where `loop` is the client loop that asked, `seq` the request's sequence number within that
loop (one per observation, in order) and `step` the action's index in its chunk. The loop
reads the stamp back from each action it executes, with `read_stamp`, and `SequenceCheck`
counts every break in order it sees. No ROS, no numpy: the gateway's plug-ins, the client
loops and the tests all import it.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

# Stamps stay integers below 2**53, so float64 and JSON carry them exactly:
# 10**6 loops x 10**6 requests x 1000 steps.
LOOP_UNIT = 10 ** 9
SEQ_UNIT = 1000


def stamp(loop: int, seq: int, step: int) -> float:
    """Return the number step `step` of request `seq` from loop `loop` carries."""
    return float(loop * LOOP_UNIT + seq * SEQ_UNIT + step)


def stamped_instruction(prefix: str, loop: int, seq: int) -> str:
    """Return the instruction that carries a loop's id and its request's sequence number."""
    return f'{prefix} {loop} {seq}'


def read_instruction(instruction: str, prefix: str) -> tuple[int, int] | None:
    """Return (loop, seq) from a stamped instruction, or None if it is not one of `prefix`."""
    words = instruction.split()
    if len(words) != 3 or words[0] != prefix:
        return None
    return int(words[1]), int(words[2])


def read_stamp(value: float) -> tuple[int, int, int]:
    """Return (loop, seq, step) from a stamped number."""
    loop, rest = divmod(int(round(value)), LOOP_UNIT)
    seq, step = divmod(rest, SEQ_UNIT)
    return loop, seq, step


@dataclass
class SequenceCheck:
    """
    What one loop executed, read from the stamps: breaks in order, by kind.

    Call `act` with each action as it is executed. The check keeps the chunk (request) being
    played and the furthest step played in it, and counts, each against that:

    - `foreign`: an action stamped by another loop.
    - `out_of_order`: an action of a chunk older than the one being played (the loop went
      backwards to an older observation).
    - `repeated`: a step of the current chunk at or before its furthest step (played again).
    - `skipped_steps`: steps of the current chunk jumped over (each missing step counts).
    - `cut_short`: a chunk left for a newer one before its last step was played; its length
      is `lengths[seq]`, as the wire gave it, and a chunk of unknown length counts too.
    - `late_entry`: a newer chunk entered at a step other than 0.

    The caller fills `lengths` (request -> steps) as answers arrive, before they can play; a
    chunk the loop leaves when its run stops is never counted. `played` lists the requests in
    the order each was first executed. Foreign and out-of-order actions leave the state as it
    was, so one stray action is one break, not a cascade.
    """

    loop: int
    lengths: dict[int, int] = field(default_factory=dict)
    played: list[int] = field(default_factory=list)
    foreign: int = 0
    out_of_order: int = 0
    repeated: int = 0
    skipped_steps: int = 0
    cut_short: int = 0
    late_entry: int = 0
    _seq: int = field(default=-1, init=False, repr=False)
    _step: int = field(default=-1, init=False, repr=False)

    def act(self, values: Sequence[float]) -> None:
        """Check one executed action (its stamp in the last value) against those before it."""
        loop, seq, step = read_stamp(values[-1])
        if loop != self.loop:
            self.foreign += 1
        elif seq < self._seq:
            self.out_of_order += 1
        elif seq == self._seq:
            self.repeated += step <= self._step
            self.skipped_steps += max(0, step - self._step - 1)
            # The furthest step, not the last: after a replay, the steps played again are
            # repeats, and none already played is counted skipped or cut short.
            self._step = max(self._step, step)
        else:
            if self._seq >= 0 and self._step != self.lengths.get(self._seq, 0) - 1:
                self.cut_short += 1
            self.late_entry += step != 0
            self.played.append(seq)
            self._seq, self._step = seq, step

    def breaks(self) -> dict[str, int]:
        """Return every kind of break with its count."""
        return {'foreign': self.foreign, 'out_of_order': self.out_of_order,
                'repeated': self.repeated, 'skipped_steps': self.skipped_steps,
                'cut_short': self.cut_short, 'late_entry': self.late_entry}

    @property
    def total(self) -> int:
        """Count every kind of break together."""
        return sum(self.breaks().values())
