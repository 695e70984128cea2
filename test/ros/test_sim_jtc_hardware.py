"""
The simulated arm's hardware loop: command interfaces claimed once, commands followed.

As ros2_control's resource manager: a joint's command interface belongs to one controller;
position commands are desired positions, velocity commands integrate, no command holds.
That rule is ros-controls/ros2_control's (hardware_interface resource manager); no stored
version of it was read, so it cites no lines. The trajectory controller's rules cite
`<path> @ <commit> (<branch>), lines A-B` as in sequence_ai_ros/sim/jtc_rules/__init__.py.
"""

from dataclasses import replace

import numpy as np
import pytest
from sequence_ai_ros.sim import jtc_rules
from sequence_ai_ros.sim.arm import ARM_JOINTS, GRIPPER_JOINT, SimArm
from sequence_ai_ros.sim.hardware import HardwareLoop
from sequence_ai_ros.sim.jtc_rules import Point, TrajectoryMsg
from sequence_ai_ros.sim.trajectory import TrajectoryExecutor
from sequence_ai_ros.world import arm_model

DT = 0.01


class Trajectories:
    """A position-interface controller around the JTC executor (what the JTC node wraps)."""

    command_interface = 'position'

    def __init__(self, joints, distro='jazzy'):
        params = replace(jtc_rules.defaults(distro), joints=tuple(joints),
                         command_interfaces=('position',),
                         state_interfaces=('position', 'velocity'))
        self.executor = TrajectoryExecutor(params, DT)
        self.claimed_joints = tuple(joints)

    def get_name(self):
        return f'jtc{list(self.claimed_joints)}'

    def update(self, now, position, velocity):
        return self.executor.update(now, position, velocity)

    def hold(self):
        self.executor.hold()


class Velocities:
    """A velocity-interface controller that commands what it is told (None: nothing)."""

    command_interface = 'velocity'

    def __init__(self, joints, value=None):
        self.claimed_joints = tuple(joints)
        self.value = value

    def update(self, now, position, velocity):
        return None if self.value is None else np.full(len(self.claimed_joints), self.value)


def run(loop, seconds, t0=0.0):
    t = t0
    for _ in range(round(seconds / DT)):
        loop.step(t, DT)
        t = round(t + DT, 9)
    return t


def test_two_controllers_claiming_one_joint_is_a_start_up_error():
    # ros2_control's resource manager refuses a second claim (no stored version read: no lines).
    arm = SimArm(arm_model.HOME)
    with pytest.raises(ValueError, match="'panda_joint7' is claimed by both"):
        HardwareLoop(arm, [Trajectories(ARM_JOINTS), Velocities(['panda_joint7', GRIPPER_JOINT])])
    with pytest.raises(ValueError, match="claims joint 'elbow'"):
        HardwareLoop(arm, [Trajectories(['elbow'])])


def test_position_commands_move_only_the_claimed_joints():
    # A message is taken at the next update and written to the position interfaces:
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 279-302 and 346-349; after the last point its positions stay
    # commanded (joint_trajectory_controller/src/trajectory.cpp @ 01936294 (branch
    # unverified), lines 153-166).
    arm = SimArm(arm_model.HOME)
    jtc, gripper = Trajectories(ARM_JOINTS), Trajectories([GRIPPER_JOINT])
    loop = HardwareLoop(arm, [jtc, gripper])
    t = run(loop, 0.05)
    goal = np.array(arm_model.HOME) + 0.1
    message = TrajectoryMsg(ARM_JOINTS, (Point(tuple(goal), time_from_start=0.5),))
    assert jtc.executor.receive(message, t) is None
    run(loop, 1.0, t)
    np.testing.assert_allclose(arm.position[:7], goal, atol=1e-9)
    assert arm.position[7] == pytest.approx(arm_model.FINGER_OPEN_M)


def test_a_velocity_command_integrates_and_none_holds():
    # The simulated hardware's own rule (sequence_ai_ros/sim/hardware.py): no upstream lines.
    arm = SimArm(arm_model.HOME)
    fingers = Velocities([GRIPPER_JOINT], value=-0.01)
    loop = HardwareLoop(arm, [Trajectories(ARM_JOINTS), fingers])
    run(loop, 1.0)
    assert arm.position[7] == pytest.approx(0.04 - 0.01)
    fingers.value = None
    run(loop, 0.5, 1.0)
    assert arm.position[7] == pytest.approx(0.03)
    assert arm.velocity[7] == 0.0
    np.testing.assert_allclose(arm.position[:7], arm_model.HOME)  # the JTC held its joints


def test_hold_makes_every_controller_hold_where_the_arm_is():
    # set_hold_position:
    # joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    # unverified), lines 2163-2173 (a one-point message, init_hold_position_msg, 2386-2410).
    arm = SimArm(arm_model.HOME)
    jtc = Trajectories(ARM_JOINTS)
    loop = HardwareLoop(arm, [jtc, Trajectories([GRIPPER_JOINT])])
    t = run(loop, 0.05)
    far = tuple(float(v) + 1.0 for v in arm_model.HOME)
    jtc.executor.receive(TrajectoryMsg(ARM_JOINTS, (Point(far, time_from_start=2.0),)), t)
    t = run(loop, 0.5, t)
    loop.hold()
    held = arm.position.copy()
    run(loop, 1.0, t)
    np.testing.assert_allclose(arm.position, held, atol=0.02)  # within one cycle of motion
    assert not np.any(arm.velocity)
    assert 0.1 < arm.position[0] - arm_model.HOME[0] < 0.5


def test_every_update_of_a_physics_step_is_sampled_at_its_time():
    # joint_states_every_update: the joint states a joint_state_broadcaster at the
    # controller_manager's rate publishes, each update's positions at its time.
    from sequence_ai_ros.sim.joint_limits import JointLimiter
    arm = SimArm(arm_model.HOME)
    lower, upper = arm.position_limits
    loop = HardwareLoop(arm, [Velocities(['panda_joint7'], 0.5)],
                        limiter=JointLimiter(lower, upper, 0.001))
    loop.step(1.0, 0.005)
    times = [t for t, _ in loop.samples]
    assert times == pytest.approx([0.996, 0.997, 0.998, 0.999, 1.0])
    joint7 = np.array([q[6] for _, q in loop.samples]) - arm_model.HOME[6]
    # GenericSystem integrates one update behind: the first moves by the old state (0).
    assert joint7 == pytest.approx([0.0, 0.0005, 0.001, 0.0015, 0.002])
    assert loop.samples[-1][1] == pytest.approx(arm.position)
    unlimited = HardwareLoop(SimArm(arm_model.HOME), [Velocities(['panda_joint7'], 0.5)])
    unlimited.step(1.0, 0.005)
    assert [t for t, _ in unlimited.samples] == [1.0]
