"""
The parameter reference, written from the parameter table (docs/PARAMETERS.md).

`python -m sequence_ai_ros.node.param_docs > docs/PARAMETERS.md` writes it again after a
parameter changes; a test fails while the file and the table disagree.
"""

from .config_rules import CROSS_CHECKS
from .param_spec import Spec
from .params import PARAMETERS

HEADER = """# Parameters of the policy node

Written from the node's parameter table (`sequence_ai_ros/node/params.py`) by
`python -m sequence_ai_ros.node.param_docs`; `ros2 param describe` shows the same descriptions.
*configure* parameters are read at configure and may change only while the node is
unconfigured; *run time* ones may change at any time.

| parameter | type | default | when | checks | description |
|---|---|---|---|---|---|
"""


def default_text(spec: Spec) -> str:
    """Return the default as a parameter file would write it."""
    value = spec.ros_default
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return '[' + ', '.join(f"'{v}'" if isinstance(v, str) else str(v) for v in value) + ']'
    return str(value)


def _row(spec: Spec) -> str:
    rules = ', '.join(spec.rules() + (['required'] if spec.required else []))
    cells = (f'`{spec.name}`', spec.ros_type, f'`{default_text(spec)}`',
             'run time' if spec.run_time else 'configure', rules,
             spec.description.replace('|', '\\|'))
    return '| ' + ' | '.join(cells) + ' |\n'


def markdown() -> str:
    """Return the whole reference."""
    across = ''.join(f'- {" ".join((check.__doc__ or check.__name__).split())}\n'
                     for check in CROSS_CHECKS)
    return (HEADER + ''.join(_row(spec) for spec in PARAMETERS.values()) +
            '\nChecked across parameters at configure:\n\n' + across)


if __name__ == '__main__':
    print(markdown(), end='')
