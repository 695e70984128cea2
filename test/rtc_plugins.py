"""`--policy` plug-ins for the real-time-chunking tests (imported by the gateway subprocess)."""

import json

import numpy as np
from sequence_ai_ros.gateway.reference_policy import ReferencePolicy


class EchoPrefixPolicy:
    """Honours a prefix by returning it padded with its last row; says what options it got."""

    honours_prefix = True

    def __init__(self, profile: object) -> None:
        self.profile = profile

    def act(self, observation: dict, options: dict, rng: np.random.Generator) -> object:
        steps, dim = options['action_horizon'], self.profile.action_dim  # type: ignore
        prefix = options.get('action_prefix')
        seen = {k: type(v).__name__ for k, v in sorted(options.items())}
        if prefix is None:
            return np.zeros((steps, dim)), [json.dumps(seen)]
        seen['prefix_shape'] = list(prefix.shape)
        rows = np.vstack([prefix, np.repeat(prefix[-1:], steps - len(prefix), axis=0)])
        return rows[:steps], [json.dumps(seen)]


class IgnoringPolicy(ReferencePolicy):
    """The reference policy without the claim: what a server that ignores the prefix serves."""

    honours_prefix = False

    def act(self, observation: dict, options: dict, rng: np.random.Generator) -> object:
        plain = {k: v for k, v in options.items() if k != 'action_prefix'}
        return super().act(observation, plain, rng)


def echo(profile: object) -> EchoPrefixPolicy:
    """Make the echoing plug-in (the factory the gateway's --policy names)."""
    return EchoPrefixPolicy(profile)


def ignoring(profile: object) -> IgnoringPolicy:
    """Make the ignoring plug-in."""
    return IgnoringPolicy(profile)  # type: ignore[arg-type]
