"""
Calling a ROS service with a deadline, and changing a lifecycle state that survives a lost reply.

For callers whose node is spun by another thread (the demo's recorder, tests, benchmarks):
they wait on the future here without spinning themselves.
"""

import time
from typing import Any

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState

# The state a successful transition ends in, to recover the answer of a lost reply.
TRANSITION_GOALS = {
    Transition.TRANSITION_CONFIGURE: 'inactive',
    Transition.TRANSITION_ACTIVATE: 'active',
    Transition.TRANSITION_DEACTIVATE: 'inactive',
    Transition.TRANSITION_CLEANUP: 'unconfigured',
}
# A service shows up before its reply reader has matched ours: a request sent at once can
# lose its answer.
_MATCH_GRACE_S = 0.3


def call_service(client: Any, request: Any, timeout_s: float) -> Any:
    """Send `request` and return the response; TimeoutError if the service never answers."""
    if not client.service_is_ready():
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise TimeoutError(f'{client.srv_name} not available')
        time.sleep(_MATCH_GRACE_S)
    future = client.call_async(request)
    deadline = time.monotonic() + timeout_s
    while not future.done():
        if time.monotonic() > deadline:
            raise TimeoutError(f'{client.srv_name} did not answer')
        time.sleep(0.01)
    return future.result()


def lifecycle_state(get_client: Any, timeout_s: float) -> str:
    """Return a lifecycle node's state label, or '' if it does not answer."""
    try:
        return str(call_service(get_client, GetState.Request(), timeout_s).current_state.label)
    except TimeoutError:
        return ''


def change_state(change_client: Any, get_client: Any, transition_id: int,
                 timeout_s: float) -> bool:
    """
    Request a lifecycle transition and return whether it took.

    A DDS service can drop the reply of a request sent before its reply reader matched; then
    the node's state says whether the transition happened.
    """
    request = ChangeState.Request()
    request.transition = Transition(id=transition_id)
    try:
        return bool(call_service(change_client, request, timeout_s).success)
    except TimeoutError:
        goal = TRANSITION_GOALS.get(transition_id)
        return goal is not None and lifecycle_state(get_client, 5.0) == goal
