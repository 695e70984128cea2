"""
Where the gateway's act path meets the policy: one call's rules, and the backends that run it.

`call_policy` is the one place a policy is called and its answer checked; a backend decides
where that runs. `ThreadPoolBackend` runs it on the gateway's own worker threads; the Ray
Serve backend (ray_serve/backend.py) runs it in a policy deployment's replica. The act path
(act.py) sees only `PolicyBackend.infer`, so auth, credit, warm-up, FIFO order and
validation are the same code whichever backend serves.
"""

from dataclasses import dataclass
import logging
import traceback
from typing import Any, Protocol

import numpy as np
from sequence_ai_ros.contract.key_masking import redact
from starlette.concurrency import run_in_threadpool

from .catalogue import ModelProfile
from .errors import ApiError
from .policy_api import check_output, honours_prefix, Policy, PolicyError

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Inference:
    """One checked answer: (horizon x action_dim) rows, warnings, whether prefixes are kept."""

    rows: np.ndarray
    warnings: list[str]
    honours_prefix: bool


class PolicyBackend(Protocol):
    """What the act path calls to run one inference; raises ApiError on any failure."""

    name: str
    # How many copies of the policy serve at once (at most); the FIFO gate admits
    # `concurrency` calls per copy.
    replicas: int

    async def infer(self, profile: ModelProfile, observation: dict[str, Any],
                    options: dict[str, Any], rng: np.random.Generator) -> Inference:
        """Run the policy of `profile` on one validated call."""

    def describe(self) -> dict[str, Any]:
        """Say how the policy is served, for the local stats endpoint."""


def call_policy(policy: Policy, name: str, profile: ModelProfile, observation: dict[str, Any],
                options: dict[str, Any], rng: np.random.Generator) -> Inference:
    """Call `policy` once and check its answer; a misbehaving policy becomes ApiError(500)."""
    try:
        result = policy.act(observation, options, rng)
        rows, warnings = check_output(result, options['action_horizon'], profile.action_dim,
                                      name)
    except PolicyError as error:
        failure = ApiError(error.status, str(error))
        LOG.error('%s', failure.detail)
        raise failure from None
    except Exception as error:
        failure = ApiError(500, f'policy {name} raised {type(error).__name__}: {error}')
        # The plug-in's own message may quote its inputs: the traceback is redacted too.
        LOG.error('%s\n%s', failure.detail,
                  redact(''.join(traceback.format_exception(error)).rstrip()))
        raise failure from None
    return Inference(rows, warnings, honours_prefix(policy))


class ThreadPoolBackend:
    """The in-process gateway's backend: one policy per model, called on worker threads."""

    def __init__(self, policies: dict[str, Policy], name: str) -> None:
        self.policies = policies
        self.name = name
        self.replicas = 1

    async def infer(self, profile: ModelProfile, observation: dict[str, Any],
                    options: dict[str, Any], rng: np.random.Generator) -> Inference:
        """Run the model's policy on a worker thread."""
        return await run_in_threadpool(call_policy, self.policies[profile.id], self.name,
                                       profile, observation, options, rng)

    def describe(self) -> dict[str, Any]:
        """Say that the policy runs in this process."""
        return {'backend': 'local'}
