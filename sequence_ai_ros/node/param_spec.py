"""
Parameter declarations for a node, written once as the fields of a frozen dataclass.

The idea is generate_parameter_library's (PickNikRobotics/generate_parameter_library, main,
README.md "Parameter definition" and "Built-In Validators"): each parameter is one entry with
its type, default_value, description, read_only and validation, and the declaration, the
typed struct, the checks and the documentation all come from that entry. Here the entry is a
dataclass field: its annotation is the type (what a type checker sees), :func:`param` holds the
rest in the field's metadata, and :func:`parameter_table` reads them back. As there, a
``bounds`` becomes the descriptor's range too (jinja_templates/python/declare_parameter), so
rclpy refuses an out-of-range value before any callback runs.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, MISSING
import math
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

__all__ = ['ConfigError', 'Spec', 'param', 'parameter_table', 'declare', 'read_values',
           'one_of', 'subset_of', 'not_empty', 'unique', 'fixed_size', 'element_bounds',
           'greater_than', 'finite_elements', 'strip_slashes']

Validator = Callable[[Any], 'str | None']
# The ROS type of each annotation a parameter field may have (the docs' type column).
ROS_TYPES: dict[Any, str] = {str: 'string', bool: 'bool', int: 'integer', float: 'double',
                             tuple[str, ...]: 'string_array', tuple[float, ...]: 'double_array',
                             tuple[int, int]: 'integer_array'}
_AT_CONFIGURE = 'read at configure: change it while the node is unconfigured'
# Humble turns an empty-list default into a byte array; a placeholder keeps the type STRING_ARRAY.
_UNSET = ['']


class ConfigError(ValueError):
    """A parameter value the node cannot run with; the message names the parameter."""


@dataclass(frozen=True)
class Spec:
    """One parameter: everything the declaration, the checks and the docs need."""

    name: str
    field: str
    ros_type: str
    default: Any
    description: str
    run_time: bool
    required: bool
    bounds: tuple[float, float] | None
    validators: tuple[Validator, ...]
    playback: str
    convert: Callable[[Any], Any] | None

    @property
    def ros_default(self) -> Any:
        """Return the value declared with (a list for an array)."""
        if isinstance(self.default, tuple):
            return list(self.default) or list(_UNSET)
        return self.default

    def descriptor(self) -> ParameterDescriptor:
        """Return a new descriptor: rclpy writes the name and type into the one it is given."""
        ranges: dict[str, Any] = {}
        if self.bounds is not None and self.ros_type == 'double':
            ranges['floating_point_range'] = [FloatingPointRange(
                from_value=float(self.bounds[0]), to_value=float(self.bounds[1]))]
        elif self.bounds is not None:
            ranges['integer_range'] = [IntegerRange(
                from_value=int(self.bounds[0]), to_value=int(self.bounds[1]), step=1)]
        # Not read_only: a configure-time parameter must stay settable while unconfigured, so a
        # node started with a bad value can be fixed without a restart; the node enforces it.
        return ParameterDescriptor(description=self.description, additional_constraints=''
                                   if self.run_time else _AT_CONFIGURE, **ranges)

    def problem(self, value: Any) -> str | None:
        """Return what the first failing validator says of `value` (None when all pass)."""
        for check in self.validators:
            why = check(value)
            if why:
                return why
        return None

    def rules(self) -> list[str]:
        """Return the range and the validators in words, for the documentation."""
        found = [f'{self.bounds[0]}..{self.bounds[1]}'] if self.bounds else []
        return found + [getattr(check, 'rule', check.__name__) for check in self.validators]


def param(default: Any, description: str, *, bounds: tuple[float, float] | None = None,
          validators: Sequence[Validator] = (), run_time: bool = False, required: bool = False,
          name: str = '', playback: str = '', convert: Callable[[Any], Any] | None = None) -> Any:
    """
    Declare a parameter as a dataclass field (its annotation is the type).

    ``name`` is the ROS name where it differs from the field's; ``run_time`` parameters may
    change at any time, the others only while the node is unconfigured; ``required`` ones
    have a default the node refuses; ``playback`` names the PlaybackOptions field it feeds.
    """
    info = {'description': description, 'bounds': bounds, 'validators': tuple(validators),
            'run_time': run_time, 'required': required, 'name': name, 'playback': playback,
            'convert': convert}
    return field(default=default, metadata={'param': info})


def parameter_table(config_class: type) -> dict[str, Spec]:
    """Return ROS name -> Spec for every field of `config_class`, checking each at import."""
    table: dict[str, Spec] = {}
    for item in fields(config_class):
        if 'param' not in item.metadata:
            continue
        info = item.metadata['param']
        if item.type not in ROS_TYPES or item.default is MISSING:
            raise TypeError(f'{config_class.__name__}.{item.name}: a parameter needs a default '
                            f'and one of the types {list(ROS_TYPES)}, not {item.type}')
        if not _fits(item.default, item.type):
            raise TypeError(f'{config_class.__name__}.{item.name}: default {item.default!r} '
                            f'is not a {item.type}')
        spec = Spec(field=item.name, ros_type=ROS_TYPES[item.type], default=item.default,
                    **dict(info, name=info['name'] or item.name))
        table[spec.name] = spec
    return table


def declare(node: Any, table: dict[str, Spec]) -> dict[str, str]:
    """
    Declare every parameter of `table`; return name -> what is wrong in the parameter file.

    A file value of the wrong type or out of range would make rclpy raise here and kill the
    process before it could say which lifecycle step failed: such a parameter is declared
    with its default instead, and reported for configure to refuse until it is set again.
    """
    problems: dict[str, str] = {}
    for name, spec in table.items():
        try:
            node.declare_parameter(name, spec.ros_default, spec.descriptor())
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            problems[name] = f'parameter {name}: {exc}'
            node.declare_parameter(name, spec.ros_default, spec.descriptor(),
                                   ignore_override=True)
    return problems


def read_values(node: Any, table: dict[str, Spec]) -> dict[str, Any]:
    """Return field -> the node's value, converted; ConfigError names the first bad one."""
    values: dict[str, Any] = {}
    for name, spec in table.items():
        value = _convert(node.get_parameter(name).value, spec)
        why = spec.problem(value)
        if why:
            raise ConfigError(f'parameter {name}: {why}')
        values[spec.field] = value
    return values


def _convert(value: Any, spec: Spec) -> Any:
    if spec.convert is not None:
        return spec.convert(value)
    if spec.ros_type == 'string_array':
        return tuple(v for v in value if v)
    if spec.ros_type == 'double_array':
        return tuple(float(v) for v in value)
    if spec.ros_type == 'integer_array':
        return tuple(int(v) for v in value)
    return value


def _fits(value: Any, annotation: Any) -> bool:
    if annotation in (str, bool, int, float):
        return type(value) is annotation
    element = annotation.__args__[0]
    return isinstance(value, tuple) and all(type(v) is element for v in value)


# -- validators: each returns None when the value is good, else what is wrong ------------------

def _rule(text: str, check: Validator) -> Validator:
    check.rule = text  # type: ignore[attr-defined]
    return check


def one_of(choices: Sequence[str]) -> Validator:
    """Check that the value is one of `choices`."""
    def one_of(value: Any) -> str | None:
        return None if value in choices else f'must be one of {tuple(choices)}'
    return _rule(f'one of {list(choices)}', one_of)


def subset_of(choices: Sequence[str]) -> Validator:
    """Check that every element is one of `choices`."""
    def subset_of(value: Any) -> str | None:
        return None if all(v in choices for v in value) else \
            f'entries must be one of {tuple(choices)}'
    return _rule(f'each one of {list(choices)}', subset_of)


def not_empty(why: str = '') -> Validator:
    """Check that the string or array is not empty; `why` says what it is for."""
    def not_empty(value: Any) -> str | None:
        return None if len(value) else f'is required{why}'
    return _rule('not empty', not_empty)


def unique(value: Any) -> str | None:
    """Check that no element is there twice."""
    return None if len(set(value)) == len(value) else 'has a duplicate name'


def fixed_size(size: int, what: str) -> Validator:
    """Check that the array has exactly `size` elements (`what` names them)."""
    def fixed_size(value: Any) -> str | None:
        return None if len(value) == size else f'needs {what}, got {len(value)} values'
    return _rule(f'{size} values', fixed_size)


def element_bounds(low: float, high: float) -> Validator:
    """Check that every element is within low..high (inclusive)."""
    def element_bounds(value: Any) -> str | None:
        return None if all(low <= v <= high for v in value) else f'each must be {low}..{high}'
    return _rule(f'each {low}..{high}', element_bounds)


def greater_than(low: float, why: str = '') -> Validator:
    """Check that the value is above `low`."""
    def greater_than(value: Any) -> str | None:
        return None if value > low else f'{why}must be > {low}'
    return _rule(f'> {low}', greater_than)


def finite_elements(value: Any) -> str | None:
    """Check that every element is a finite number."""
    return None if all(math.isfinite(v) for v in value) else 'must be finite'


finite_elements.rule = 'finite'  # type: ignore[attr-defined]


def strip_slashes(value: Any) -> str:
    """Return a name without leading or trailing slashes (a relative ROS name)."""
    return str(value).strip('/')
