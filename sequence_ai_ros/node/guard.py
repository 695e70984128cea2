"""
One guard for every entry from rclpy into the policy node.

An exception that escapes a callback is re-raised by the executor out of spin, and the process
ends: the robot is left with whatever it was last told, no outcome is published and nothing is
left to reconfigure. A node that dies is worse than a node that holds. So every timer,
subscription, service, parameter callback and lifecycle transition enters the node through
:meth:`CallbackGuard.wrap`: an exception there is counted, logged once per entry and kind (with
its traceback), reported on /diagnostics, and handed to the node's fault handler, which holds
if an episode runs; a service still answers, as a refusal.
"""

from collections.abc import Callable
import functools
import traceback
from typing import Any, TypeVar

from sequence_ai_ros.contract.key_masking import redact

__all__ = ['CallbackGuard', 'refuse_service']

F = TypeVar('F', bound=Callable[..., Any])


def refuse_service(reason: str) -> Callable[..., Any]:
    """Return a fallback that answers a service request as refused, with `reason` if it can."""
    def refuse(request: Any, response: Any, *_: Any) -> Any:
        for name, value in (('success', False), ('successful', False), ('message', reason),
                            ('reason', reason)):
            if hasattr(response, name):
                setattr(response, name, value)
        return response
    return refuse


class CallbackGuard:
    """Counts, logs once and hands on every exception that reaches it; never raises itself."""

    def __init__(self, logger: Callable[[], Any], on_fault: Callable[[str], None]) -> None:
        self._logger = logger
        self._on_fault = on_fault
        self._logged: set[tuple[str, str]] = set()
        self.faults = 0
        self.last_fault = ''
        self._handling = False

    def wrap(self, entry: str, callback: F, fallback: Callable[..., Any] | None = None) -> F:
        """
        Return `callback` guarded: an exception becomes a fault and `fallback(*args)`'s value.

        functools.wraps keeps the signature visible, which rclpy reads to decide whether a
        subscription or timer callback takes its extra info argument.
        """
        if getattr(callback, '__sequence_ai_guarded__', False):
            return callback

        @functools.wraps(callback)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return callback(*args, **kwargs)
            except Exception as exc:  # the whole point: nothing escapes into the executor
                self.fault(entry, exc)
                if fallback is None:
                    return None
                try:
                    return fallback(*args, **kwargs)
                except Exception as second:
                    self.fault(f'{entry} (refusal)', second)
                    return None

        guarded.__sequence_ai_guarded__ = True  # type: ignore[attr-defined]
        return guarded  # type: ignore[return-value]

    def clear(self) -> None:
        """Forget the last fault (the count stays): the operator has started anew."""
        self.last_fault = ''

    def fault(self, entry: str, exc: BaseException) -> None:
        """Record an exception caught at `entry`, log it once per kind, and hand it on."""
        reason = redact(f'{entry}: {type(exc).__name__}: {exc}')
        self.faults += 1
        self.last_fault = reason
        key = (entry, type(exc).__name__)
        if key not in self._logged:
            self._logged.add(key)
            trace = redact(''.join(traceback.format_exception(type(exc), exc,
                                                              exc.__traceback__)))
            self._log(f'internal error in {reason}; the node holds if an episode runs and '
                      f'stays up (reported on /diagnostics; later ones of this kind are '
                      f'counted, not logged)\n{trace}')
        if self._handling:  # a fault while handling a fault: counted, not handled again
            return
        self._handling = True
        try:
            self._on_fault(reason)
        except Exception as second:
            self.faults += 1
            self._log(f'internal error while holding after a fault: '
                      f'{redact(f"{type(second).__name__}: {second}")}')
        finally:
            self._handling = False

    def _log(self, text: str) -> None:
        try:
            self._logger().error(text)
        except Exception:  # a logger that refuses must not undo the guard
            pass
