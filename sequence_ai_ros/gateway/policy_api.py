"""
The small contract a served policy meets, loading one from `--policy`, and checking its output.

A policy is made by a factory, `factory(profile) -> policy`, once per model at start-up. Each
call is `policy.act(observation, options, rng)` on a worker thread, where

- `observation` is `{'images': {view: PIL RGB image}, 'timestamps_ms': {view: int | None},
  'proprioception': {'joint_positions': [...], optional 'joint_velocities',
  'end_effector_pose', 'gripper'}, 'instruction': str}`;
- `options` is `{'action_horizon': n, 'seed': int | None, ...}` plus any other option keys
  the request carried; a real-time-chunking request's are checked first (prefix.py) and
  given as `'action_prefix'` (a float array, rows x action_dim), `'inference_delay_steps'`
  and `'execution_horizon'` (ints);
- `rng` is a `numpy.random.Generator`, seeded from the request's `seed` when it has one;

and it returns `n` rows of `profile.action_dim` finite numbers in `profile.action_space`, or
a tuple `(rows, warnings)` with a list of strings for the response's `warnings`. Step 0 is
the action for the moment the observation was taken. Anything else is answered 500.

A policy that honours the prefix (returns its first `min(d, rows)` rows as they are and
continues from where they end) says so with a class attribute `honours_prefix = True`; only
then does the answer report the prefix as used (its `rtc` key). Any other policy's answers
carry a warning instead, and a client falls back from real-time chunking.
"""

from collections.abc import Callable, Sequence
import importlib
from typing import Any, cast, Protocol

import numpy as np

from .catalogue import ModelProfile


class Policy(Protocol):
    """What `--policy` factories return (the reference policy is one too)."""

    def act(self, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> Any:
        """Rows (n x action_dim), or `(rows, warnings)`."""


PolicyFactory = Callable[[ModelProfile], Policy]


class PolicyError(RuntimeError):
    """
    The policy failed; the message is the response's detail, `status` its code (500).

    A policy that fronts another server says which side failed: 502 (its answer was bad), 503
    (unreachable: the client retries), 504 (it did not answer in time), 422 (this request
    lacks what the model needs).
    """

    def __init__(self, message: str, status: int = 500) -> None:
        super().__init__(message)
        self.status = status


def honours_prefix(policy: Policy) -> bool:
    """Whether a policy declares that it honours real-time-chunking prefixes."""
    return getattr(policy, 'honours_prefix', False) is True


def load_factory(spec: str) -> PolicyFactory:
    """Import `package.module:factory` and return the factory."""
    module_name, sep, attribute = spec.partition(':')
    if not sep or not module_name or not attribute:
        raise ValueError(f'--policy must look like package.module:factory, got {spec!r}')
    target: Any = importlib.import_module(module_name)
    for part in attribute.split('.'):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f'--policy {spec}: {attribute} is not callable')
    return cast(PolicyFactory, target)


def check_output(result: Any, steps: int, dim: int,
                 name: str) -> tuple[np.ndarray, list[str]]:
    """Get the policy's rows as a (steps, dim) float array and its warnings, else PolicyError."""
    warnings: Sequence[Any] = []
    if isinstance(result, tuple) and len(result) == 2:
        result, warnings = result
        if not isinstance(warnings, (list, tuple)):
            raise PolicyError(f'policy {name} returned warnings that are not a list of strings')
    try:
        rows = np.asarray(result, dtype=float)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f'policy {name} returned rows that are not numbers: {exc}') from None
    if rows.shape != (steps, dim):
        raise PolicyError(f'policy {name} returned shape {rows.shape}; expected ({steps}, {dim})'
                          ' (action_horizon x action_dim)')
    if not np.isfinite(rows).all():
        raise PolicyError(f'policy {name} returned non-finite numbers (NaN or infinity)')
    return rows, [str(w) for w in warnings]
