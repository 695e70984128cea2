"""
Refuse an invalid lifecycle transition instead of letting rclpy raise it out of the service.

rclpy 3.3 (Humble) and 7.1 (Jazzy) trigger the requested transition unchecked, and the state
machine's RCLError ("Transition is not registered", e.g. `cleanup` while active) escapes the
~/change_state service and ends the process; rclpy 9 (Kilted) answers success=false. Here the
request is checked against the transitions available from the current state first, so every
distribution answers a refusal, and the node says which transitions were possible.
"""

from typing import Any

from .guard import CallbackGuard, refuse_service

__all__ = ['guard_change_state']


def guard_change_state(node: Any, guard: CallbackGuard) -> None:
    """Wrap `node`'s ~/change_state service callback (if rclpy exposes it) in the check."""
    service = getattr(node, '_service_change_state', None)
    machine = getattr(node, '_state_machine', None)
    if service is None or machine is None:
        return
    original = service.callback

    def change_state(request: Any, response: Any) -> Any:
        available = {label: transition_id for transition_id, label, *_ in
                     machine.available_transitions}
        wanted = request.transition.label or None
        if wanted is None:
            valid = request.transition.id in set(available.values())
            wanted = str(request.transition.id)
        else:
            valid = wanted in available
        if not valid:
            state = machine.current_state[1]
            node.get_logger().warning(
                f'lifecycle transition {wanted!r} refused: not possible from {state!r} '
                f'(possible: {", ".join(sorted(available)) or "none"})')
            response.success = False
            return response
        return original(request, response)

    service.callback = guard.wrap('service change_state', change_state,
                                  refuse_service('internal error'))
