"""
The `sequence-ai-ros` command: models, doctor, gateway, proxy and demo.

command builds the parser and runs a subcommand; models, doctor_command and proxy each add
their flags and run; extras runs the optional gateway and demo, or says what to install;
arguments holds the argument types; names the program's and executables' names.

The names below load on first use (PEP 562): an executable's entry point imports this package
before it can install its signal handlers, so importing it costs next to nothing.
"""

from importlib import import_module
from typing import Any

__all__ = ['build_parser', 'DEMO_MODULE', 'GATEWAY_EXECUTABLE', 'gateway_main', 'main', 'PROG']
_HOMES = {'build_parser': 'command', 'main': 'command', 'gateway_main': 'extras',
          'DEMO_MODULE': 'names', 'GATEWAY_EXECUTABLE': 'names', 'PROG': 'names'}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(import_module(f'{__name__}.{_HOMES[name]}'), name)


def __dir__() -> list[str]:
    return sorted(__all__)
