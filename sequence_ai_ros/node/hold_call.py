"""
The hold service call: made on every hold, retried until the service is there, reported if late.

The node publishes its hold command itself; the service (e.g. a driver's brake) is the second
line. A service not yet discovered at the instant of a hold is normal on a busy DDS graph, so
the call waits for it up to ``hold_service_timeout_s`` rather than being dropped.
"""

from collections.abc import Callable
import time
from typing import Any

from std_srvs.srv import Trigger

POLL_S = 0.02


class HoldServiceCall:
    """Calls a std_srvs/Trigger hold service for a node, one call at a time."""

    def __init__(self, node: Any, client: Any, timeout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._node = node
        self._client = client
        self._timeout_s = timeout_s
        self._clock = clock
        self._timer: Any = None
        self._waiting_since: float | None = None  # a hold asked for, the service not there yet
        self._future: Any = None
        self._sent_at = 0.0
        self.calls = 0
        self.failures = 0
        self.problem = ''

    @property
    def service_name(self) -> str:
        """Return the full service name, as `ros2 service list` shows it."""
        name = str(self._client.srv_name)
        resolve = getattr(self._node, 'resolve_service_name', None)  # kept defensive for old rclpy
        try:
            return resolve(name) if resolve is not None else name
        except Exception:
            return name

    def request(self) -> None:
        """Call the service now, or as soon as it is available within the timeout."""
        if self._future is not None and not self._future.done():
            return  # the hold in progress covers this one
        if self._waiting_since is None:
            self._waiting_since = self._clock()
        self._poll()

    def close(self) -> None:
        """Stop polling; a call in flight is left to the service."""
        self._stop_timer()
        self._waiting_since = None
        self._future = None

    def _poll(self) -> None:
        now = self._clock()
        if self._future is not None:
            self._check_answer(now)
        if self._waiting_since is not None and self._future is None:
            if self._client.service_is_ready():
                self._future = self._client.call_async(Trigger.Request())
                self._sent_at = now
                self._waiting_since = None
                self.calls += 1
            elif now - self._waiting_since > self._timeout_s:
                self._fail(f'hold service {self.service_name} is not available '
                           f'(waited {self._timeout_s:g} s)')
                self._waiting_since = None
        if self._waiting_since is None and self._future is None:
            self._stop_timer()
        elif self._timer is None:
            self._timer = self._node.create_timer(POLL_S, self._poll)

    def _check_answer(self, now: float) -> None:
        future = self._future
        if future.done():
            self._future = None
            error = future.exception()
            result = None if error is not None else future.result()
            if error is not None:
                self._fail(f'hold service {self.service_name} failed: {error}')
            elif result is not None and not result.success:
                self._fail(f'hold service {self.service_name} refused: {result.message}')
            else:
                self.problem = ''
        elif now - self._sent_at > self._timeout_s:
            self._future = None  # given up on: the next hold calls again
            self._fail(f'hold service {self.service_name} has not answered in '
                       f'{self._timeout_s:g} s')

    def _fail(self, problem: str) -> None:
        self.failures += 1
        self.problem = problem
        self._node.get_logger().error(problem)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
