"""
The kind of an action space, from its name: the one rule for the engine, node and gateway.

A model declares its space by name (`joint_position`, `joint_delta`, `joint_velocity`, ...).
What the numbers mean decides what may be done with them: only absolute targets may be blended
across a seam, deltas and rates are integrated, rates scale with the control period. A name
that matches no kind, or more than one (`joint_position_delta`), has no kind: guessing could
play rates as positions.
"""

ABSOLUTE, DELTA, VELOCITY = 'absolute', 'delta', 'velocity'
KINDS = (ABSOLUTE, DELTA, VELOCITY)
_MARKERS = {
    ABSOLUTE: ('absolute', 'position', 'joint_pos'),
    DELTA: ('delta',),
    VELOCITY: ('velocity', '_vel'),
}
# The joint spaces of the catalogue, one per kind at least.
JOINT_SPACES = ('joint_absolute', 'joint_position', 'joint_pos', 'joint_delta', 'joint_velocity')


def space_kind(action_space: str | None) -> str | None:
    """Return 'absolute', 'delta' or 'velocity' for `action_space`, or None if unclear."""
    name = (action_space or '').lower()
    kinds = [kind for kind, markers in _MARKERS.items() if any(m in name for m in markers)]
    return kinds[0] if len(kinds) == 1 else None


def joint_space_kind(action_space: str | None) -> str | None:
    """Return the kind of a joint space (the name starts with 'joint'), else None."""
    return space_kind(action_space) if (action_space or '').lower().startswith('joint') else None


def is_absolute_space(action_space: str | None) -> bool:
    """Return True when actions are absolute targets rather than increments or rates."""
    return space_kind(action_space) == ABSOLUTE


def is_velocity_space(action_space: str | None) -> bool:
    """Return True when actions are rates (per second) rather than positions or increments."""
    return space_kind(action_space) == VELOCITY
