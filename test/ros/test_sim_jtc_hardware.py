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


def limited_loop(controllers, step_period=None):
    """Return (arm, loop) under Kilted's controller_manager at 1 kHz (update by update)."""
    from sequence_ai_ros.sim.joint_limits import JointLimiter
    arm = SimArm(arm_model.HOME)
    lower, upper = arm.position_limits
    return arm, HardwareLoop(arm, controllers, limiter=JointLimiter(lower, upper, 0.001),
                             step_period=step_period)


def test_every_update_of_a_physics_step_is_sampled_at_its_time():
    # joint_states_every_update: the joint states a joint_state_broadcaster at the
    # controller_manager's rate publishes, each update's positions at its time.
    arm, loop = limited_loop([Velocities(['panda_joint7'], 0.5)])
    loop.step(1.0, 0.005)
    times = [t for t, _, _ in loop.samples]
    assert times == pytest.approx([0.996, 0.997, 0.998, 0.999, 1.0])
    joint7 = np.array([q[6] for _, q, _ in loop.samples]) - arm_model.HOME[6]
    # GenericSystem reads what the update before wrote, and integrates a velocity one read
    # behind: the first two reads move by the old state (0).
    assert joint7 == pytest.approx([0.0, 0.0, 0.0005, 0.001, 0.0015])
    assert [v[6] for _, _, v in loop.samples] == pytest.approx([0.0, 0.5, 0.5, 0.5, 0.5])
    assert loop.samples[-1][1] == pytest.approx(arm.position)
    unlimited = HardwareLoop(SimArm(arm_model.HOME), [Velocities(['panda_joint7'], 0.5)])
    unlimited.step(1.0, 0.005)
    assert [t for t, _, _ in unlimited.samples] == [1.0]


class Line:
    """A position controller writing HOME + rate x (now - t0) on joint 1, as a JTC would."""

    command_interface = 'position'
    claimed_joints = ('panda_joint1',)

    def __init__(self, rate, t0=0.0):
        self.rate, self.t0, self.times = rate, t0, []

    def update(self, now, position, velocity):
        self.times.append(now)
        return np.array([arm_model.HOME[0] + self.rate * (now - self.t0)])


def test_a_position_written_in_one_update_is_the_state_the_next_one_reads():
    # mock_components/GenericSystem::read with calculate_dynamics (ros-controls/ros2_control
    # hardware_interface/src/mock_components/generic_system.cpp; no stored version has a
    # commit, so no lines): the position state becomes the command, the velocity state its
    # change over the measured period; read comes before update in ros2_control_node's loop.
    line = Line(0.5, t0=0.995)
    arm, loop = limited_loop([line])
    loop.step(1.0, 0.005)
    assert line.times == pytest.approx([0.996, 0.997, 0.998, 0.999, 1.0])
    joint1 = [q[0] - arm_model.HOME[0] for _, q, _ in loop.samples]
    # Read at 0.996 finds nothing written; at 0.997 the command written at 0.996; ...
    assert joint1 == pytest.approx([0.0, 0.0005, 0.001, 0.0015, 0.002])
    assert [v[0] for _, _, v in loop.samples] == pytest.approx([0.0, 0.5, 0.5, 0.5, 0.5])


def test_a_late_physics_step_is_one_update_with_the_measured_period():
    # Kilted's ros2_control_node: a loop that wakes late ("Overrun detected!") runs one
    # update with the measured period and skips the missed cycles (next_iteration_time moves
    # on by whole periods); controller_manager/src/ros2_control_node.cpp, no commit stored.
    line = Line(0.5, t0=0.999)
    arm, loop = limited_loop([line], step_period=0.001)
    loop.step(1.0, 0.001)
    loop.step(1.004, 0.004)  # 3 ms late
    assert line.times == pytest.approx([1.0, 1.004])
    t, q, v = loop.samples[-1]
    assert t == pytest.approx(1.004)
    # The state read at 1.004 is what the update at 1.0 wrote, its velocity over 4 ms.
    assert q[0] - arm_model.HOME[0] == pytest.approx(0.0005)
    assert v[0] == pytest.approx(0.0005 / 0.004)
    # A physics step of its nominal length runs the updates it spans.
    line = Line(0.5)
    arm, loop = limited_loop([line], step_period=0.005)
    loop.step(1.0, 0.005)
    loop.step(1.007, 0.007)
    assert line.times == pytest.approx([0.996, 0.997, 0.998, 0.999, 1.0,
                                        1.003, 1.004, 1.005, 1.006, 1.007])
