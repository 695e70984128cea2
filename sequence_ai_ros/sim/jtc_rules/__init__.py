"""
What a stock joint_trajectory_controller (JTC) accepts, per ROS distro, ROS-free.

Ported from ros-controls/ros2_controllers (humble, jazzy, kilted). Each rule cites
`<path> @ <commit> (<branch>), lines A-B` in a file version the source index stores; it
keeps many versions per file but exposes few commits, none of them shown to be on the
jazzy or kilted branch, so the versions below are the closest it serves:

- joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
  unverified): the version whose validate_trajectory_msg (lines 1995-2140) these checks
  follow, check for check and in order. It has speed scaling (#1191, Kilted) and the PID
  anti-windup (#1759), so it is on the Kilted-or-later master line, but also parameters no
  release notes read here mention (positions_upsampling, allow_trajectory_replacement,
  constraints.decelerate_on_cancel): it may be a pull-request branch.
- joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master, 4.x:
  package.xml in the same commit reads 4.5.0; humble is 2.x, iron 3.x, Jazzy ships 4.x),
  the branch-checked cross-reference: validate_trajectory_msg lines 1340-1470 has the same
  checks except that the end time sums every point's time (lines 1361-1380, before #1090),
  "Empty trajectory received." comes after the joint and end-time checks (lines 1396-1400),
  effort is refused with the humble words (lines 1461-1467), a point with no fields is
  refused without a message (lines 1433-1452), and update samples at `time` (lines
  176-179, before #1306).
- joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml @ 02aa3725
  (branch unverified; speed_scaling and antiwindup_strategy: Kilted-or-later): names,
  defaults, validators, read_only.
- joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble: 2.x releases after
  Iron's 3.x exist only on humble; top entry 2.51.0, 2025-12-01) for what humble has:
  allow_nonzero_velocity_at_trajectory_end (2.24.0 #705, line 216; default left true:
  2.30.0 backports only the renames of #834, line 178), effort refused (2.24.0 #699, line
  215), cmd_timeout (2.30.0 #609, line 184), empty trajectories refused (2.33.0 #902, line
  147), end time from the last point (2.36.0 #1090, line 125); no sampling one cycle ahead
  (no #1306 entry; 2.38.0 has only #1297, line 98).
- doc/release_notes/Jazzy.rst @ 3a1b0db1 (branch unverified), line 19: #834, default false
  from Jazzy on; line 32: #902. No Kilted release notes are stored (doc/release_notes/ holds
  Iron.rst and Jazzy.rst); speed scaling and anti-windup change nothing that is accepted.

params: the parameters (names, per-distro defaults, validators, on_activate's cmd_timeout,
when update samples); trajectory_msg: what validate_trajectory_msg refuses, and the sim's own
refusals. Both are offered here, as one set of rules.
"""

from sequence_ai_ros.sim.jtc_rules.params import (
    check_configuration,
    COMMAND_INTERFACE_TYPES,
    DEFAULT_DISTRO,
    defaults,
    DISTROS,
    effective_cmd_timeout,
    INTERPOLATION_METHODS,
    JtcParams,
    READ_ONLY,
    ROS_NAMES,
    samples_next_cycle,
    STATE_INTERFACE_TYPES,
    with_values,
)
from sequence_ai_ros.sim.jtc_rules.trajectory_msg import (
    effort_reason,
    FLOAT_EPSILON,
    Point,
    sim_checks,
    TrajectoryMsg,
    validate_trajectory,
)

__all__ = [
    'check_configuration', 'COMMAND_INTERFACE_TYPES', 'DEFAULT_DISTRO', 'defaults', 'DISTROS',
    'effective_cmd_timeout', 'effort_reason', 'FLOAT_EPSILON', 'INTERPOLATION_METHODS',
    'JtcParams', 'Point', 'READ_ONLY', 'ROS_NAMES', 'samples_next_cycle', 'sim_checks',
    'STATE_INTERFACE_TYPES', 'TrajectoryMsg', 'validate_trajectory', 'with_values',
]
