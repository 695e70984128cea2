"""
PolicyObserver: a hook that sees every request a Policy sends, for instrumentation.

Tests and benchmarks account for each request (sent, answered, failed) and time it without
subclassing Policy: they pass an observer to it. Every method is called on the thread that
sends the request (a worker thread while a chunk plays), must be quick and must not raise.
"""

from ._types import Observation, Prediction


class PolicyObserver:
    """Notified of each POST /v1/act; the methods do nothing unless overridden."""

    def request_sent(self, observation: Observation) -> None:
        """Note that the request for `observation` is about to be sent."""

    def answer_received(self, observation: Observation, prediction: Prediction,
                        round_trip_s: float) -> None:
        """Note the answer to `observation`'s request, `round_trip_s` after it left."""

    def request_failed(self, observation: Observation, error: BaseException) -> None:
        """Note that `observation`'s request ended in `error` (raised to the driver next)."""


class ObserverList(PolicyObserver):
    """Tell each of several observers in turn; a Policy keeps one, run(record=) adds to it."""

    def __init__(self, *observers: PolicyObserver) -> None:
        self.observers = list(observers)

    def request_sent(self, observation: Observation) -> None:
        """Tell each observer."""
        for observer in tuple(self.observers):
            observer.request_sent(observation)

    def answer_received(self, observation: Observation, prediction: Prediction,
                        round_trip_s: float) -> None:
        """Tell each observer."""
        for observer in tuple(self.observers):
            observer.answer_received(observation, prediction, round_trip_s)

    def request_failed(self, observation: Observation, error: BaseException) -> None:
        """Tell each observer."""
        for observer in tuple(self.observers):
            observer.request_failed(observation, error)
