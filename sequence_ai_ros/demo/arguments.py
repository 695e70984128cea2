"""The demo's command-line flags and the defaults they name."""

import argparse
from pathlib import Path

from sequence_ai_ros.cli.arguments import positive, positive_int, seconds
from sequence_ai_ros.client import JOIN_MODES
from sequence_ai_ros.gateway.catalogue import load_catalogue
from sequence_ai_ros.gateway.config import SCENARIOS

from .controllers import ARM_CONTROLLERS, DEFAULT_DISTRO, DISTROS, GRIPPER_CONTROLLERS

DEFAULT_MODEL = 'pi05-droid'
PROTOCOLS = ('both', 'direct', 'v1')  # the gateway's --protocol
DEFAULT_TIME_SCALE = 0.25
DEFAULT_OUT = 'demo-out/demo.png'
# Model seconds of motion when --actions is not given: enough to reach the target from home
# and settle there, short enough that the whole demo takes well under two minutes.
EPISODE_MODEL_S = 20.0


def build_parser(prog: str = 'sequence-ai-ros demo') -> argparse.ArgumentParser:
    """Return the demo's command-line flags."""
    names = [p.name for p in load_catalogue().profiles]
    parser = argparse.ArgumentParser(
        prog=prog, description='Run the whole loop on this machine: the local gateway, a '
        'simulated arm and the policy node; print the outcome and draw it, next to the same '
        'run with prefetch off.')
    add = parser.add_argument
    add('--model', choices=names, default=DEFAULT_MODEL, help='catalogue model (default '
        '%(default)s)')
    add('--scenario', choices=SCENARIOS, default='steady', help='gateway latency scenario '
        '(default %(default)s)')
    add('--join', choices=JOIN_MODES, default=None,
        help="how chunks are joined (default: the model's config file)")
    add('--time-scale', type=positive, default=DEFAULT_TIME_SCALE, metavar='S',
        help='wall seconds per model second for the gateway and the arm (default %(default)s)')
    add('--actions', type=positive_int, default=None, metavar='N',
        help=f'actions per episode (default: {EPISODE_MODEL_S:g} s of model time)')
    add('--out', type=Path, default=Path(DEFAULT_OUT), metavar='PNG',
        help='where to write the picture (default %(default)s)')
    add('--no-compare', dest='compare', action='store_false',
        help='skip the second run with prefetch off')
    add('--protocol', choices=PROTOCOLS, default='both',
        help="what the local gateway serves: the service's direct protocol, v1 (/v1/act) or "
        "both (default %(default)s; the node's protocol auto takes direct where served)")
    add('--warm', action='store_true', help='start with the model warm (no cold start)')
    add('--cold-start-s', type=seconds, default=None, metavar='SECONDS',
        help="model seconds of the cold start (default: the catalogue's)")
    add('--output-mode', choices=list(ARM_CONTROLLERS), default=None,
        help="the node's output_mode, and the simulated controller that receives it "
        "(default: the model's config file)")
    add('--gripper', choices=list(GRIPPER_CONTROLLERS), default=None,
        help="the gripper's interface (default: action where control_msgs is installed, "
        'else trajectory)')
    add('--distro', choices=DISTROS, default=DEFAULT_DISTRO,
        help='whose upstream rules and defaults the simulated controllers follow '
        '(default %(default)s)')
    return parser
