"""
The `--policy` plug-in that serves one catalogue model from an openpi policy server.

`sequence-ai-ros gateway --openpi ws://gpu-box:8000 [--openpi-model pi05-droid]` serves that
model alone (the others answer 404), warm from the start and with no simulated latency: the
server's own time is the latency, and an unreachable server answers 503 until it is back. In
code, `openpi_factory(url, table=MY_ROBOT)` gives a factory for `create_app`'s plug-in slot.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
from sequence_ai_ros.gateway.catalogue import Catalogue, ModelProfile
from sequence_ai_ros.gateway.policy_api import PolicyFactory

from .connection import ConnectionPool, server_name
from .mapping import action_rows, DROID, ObservationMap, openpi_observation

DEFAULT_MODEL = 'pi05-droid'
OPEN_TIMEOUT_S = 5.0
# Above any real pi0/pi0.5 inference (~0.1-1 s on a GPU), well under the client's 30 s timeout.
ANSWER_TIMEOUT_S = 8.0


class OpenpiPolicy:
    """Serve `profile` from an openpi server: its observation keys by `table`, its actions."""

    def __init__(self, profile: ModelProfile, url: str, table: ObservationMap = DROID,
                 connections: int = 1, open_timeout_s: float = OPEN_TIMEOUT_S,
                 answer_timeout_s: float = ANSWER_TIMEOUT_S) -> None:
        self.profile = profile
        self.table = table
        self.pool = ConnectionPool(url, connections, open_timeout_s, answer_timeout_s)

    def act(self, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
        """Ask the server for a chunk; rows in the profile's space, or a typed PolicyError."""
        answer = self.pool.infer(openpi_observation(self.table, observation))
        return action_rows(self.table, answer, options['action_horizon'],
                           self.profile.action_dim), []


def openpi_factory(url: str, table: ObservationMap = DROID, connections: int = 1,
                   **timeouts: float) -> PolicyFactory:
    """Return a factory of OpenpiPolicy for `url` (checked now: ws:// or wss://)."""
    server_name(url)

    def factory(profile: ModelProfile) -> OpenpiPolicy:
        return OpenpiPolicy(profile, url, table, connections, **timeouts)
    return factory


@dataclass(frozen=True)
class OpenpiServing:
    """What the app serves for `--openpi`: the one model, its factory and its name in logs."""

    catalogue: Catalogue
    factory: PolicyFactory
    name: str


def openpi_serving(url: str, model: str, catalogue: Catalogue) -> OpenpiServing:
    """Keep only `model` of the catalogue and serve it from the openpi server at `url`."""
    profile = catalogue.get(model)
    if profile is None:
        names = ', '.join(p.name for p in catalogue.profiles)
        raise ValueError(f'--openpi-model {model!r} is not in the catalogue ({names})')
    return OpenpiServing(Catalogue([profile]), openpi_factory(url),
                         f'openpi {server_name(url)}')
