"""
Interrupts: one thread-safe signal that cuts short whatever a Policy is waiting on now.

A generation count rather than a flag: what was in flight when interrupt() was called is
cut, and nothing started after it is, so no one has to remember to clear it.
"""

from collections.abc import Callable
import threading

from ._errors import Interrupted


class InterruptSignal:
    """interrupt() from any thread; waits that began before it end at once with Interrupted."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._generation = 0
        self._cutters: list[Callable[[], object]] = []

    @property
    def generation(self) -> int:
        """Return the count of interrupts so far: take it when a wait or request begins."""
        with self._cond:
            return self._generation

    def on_interrupt(self, cut: Callable[[], object]) -> None:
        """Call `cut` at every interrupt (the direct transport closes its connections)."""
        with self._cond:
            self._cutters.append(cut)

    def fire(self) -> None:
        """Interrupt: wake every wait and cut every connection a request is in flight on."""
        with self._cond:
            self._generation += 1
            cutters = list(self._cutters)
            self._cond.notify_all()
        for cut in cutters:
            cut()

    def fired_since(self, generation: int) -> bool:
        """Return whether interrupt() was called after `generation` was taken."""
        with self._cond:
            return self._generation != generation

    def check(self, generation: int, what: str) -> None:
        """Raise Interrupted if interrupt() was called after `generation` was taken."""
        if self.fired_since(generation):
            raise Interrupted(f'{what} was interrupted (interrupt()); nothing of it was played')

    def sleep(self, seconds: float, generation: int, what: str) -> None:
        """Sleep `seconds`, or raise Interrupted at once if interrupt() is called meanwhile."""
        with self._cond:
            self._cond.wait_for(lambda: self._generation != generation,
                                timeout=max(0.0, seconds))
        self.check(generation, what)
