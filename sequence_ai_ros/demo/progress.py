"""The demo's status line: rewritten in place on a terminal, printed now and then in a log."""

import time
from typing import Any, TextIO

from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.process import GatewayProcess

from . import analysis
from .summary import Run

NON_TTY_EVERY_S = 3.0


class Progress:
    """One status line: rewritten in place on a terminal, printed now and then in a log."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self._shown = ''
        self._printed_at = 0.0
        self._phase = ''

    def show(self, text: str) -> None:
        """Replace the status line with `text`."""
        if self.tty:
            self.out.write('\r' + text.ljust(len(self._shown)))
            self.out.flush()
            self._shown = text
            return
        # In a log, a line when the phase changes (the text less its numbers), else now and then.
        phase = ''.join(c for c in text if not c.isdigit())
        if phase != self._phase or time.monotonic() - self._printed_at >= NON_TTY_EVERY_S:
            self._phase = phase
            self.line(text)

    def line(self, text: str) -> None:
        """Print `text` on a line of its own, below the status line."""
        if self._shown:
            self.out.write('\r' + ' ' * len(self._shown) + '\r')
            self._shown = ''
        self.out.write(text + '\n')
        self.out.flush()
        self._printed_at = time.monotonic()


class RunStatus:
    """What the status line says while an episode plays: the cold start, then the progress."""

    def __init__(self, gateway: GatewayProcess, profile: ModelProfile, actions: int) -> None:
        self.gateway = gateway
        self.profile = profile
        self.actions = actions
        self._stats_at = 0.0
        self._stats: dict[str, Any] = {}

    def text(self, run: Run) -> str:
        """Return the status of `run` now."""
        data = run.data
        played = len(analysis.actions(data))
        if not played:
            return f'{run.label}: {self._warming(data) or "waiting for the first chunk"}'
        distance = f', tool {100 * data.distances[-1][1]:.1f} cm from the target' \
            if data.distances else ''
        return (f'{run.label}: {played}/{self.actions} actions, {len(data.chunks)} chunks, '
                f'{len(analysis.underruns(data))} underruns{distance}')

    def _warming(self, data: analysis.Recording) -> str:
        """Return the cold-start countdown ('' when the model is not warming)."""
        now = time.monotonic()
        if now - self._stats_at > 0.5:
            self._stats_at = now
            try:
                self._stats = self.gateway.stats()['models'][self.profile.id]
            except Exception:  # a busy gateway: the node's own estimate will do
                self._stats = {}
        if self._stats.get('state') == 'warming':
            return (f'cold start: the gateway is loading {self.profile.name}, ready in '
                    f'{self._stats.get("warm_in_s", 0.0):.0f} s')
        if not self._stats and data.warming_eta_s is not None:
            # The node's /diagnostics: the Retry-After of its last 503, not counting down.
            return f'cold start: the model is warming up, ready in ~{data.warming_eta_s:.0f} s'
        return ''
