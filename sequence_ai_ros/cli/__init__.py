"""
The `sequence-ai-ros` command: models, doctor, gateway, proxy and demo.

command builds the parser and runs a subcommand; models, doctor_command and proxy each add
their flags and run; extras runs the optional gateway and demo, or says what to install;
arguments holds the argument types; names the program's and executables' names.
"""

from sequence_ai_ros.cli.command import build_parser, main
from sequence_ai_ros.cli.extras import gateway_main
from sequence_ai_ros.cli.names import DEMO_MODULE, GATEWAY_EXECUTABLE, PROG

__all__ = ['build_parser', 'DEMO_MODULE', 'GATEWAY_EXECUTABLE', 'gateway_main', 'main', 'PROG']
