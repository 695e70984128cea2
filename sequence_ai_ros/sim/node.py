"""
The `sim_arm` process: a simulated DROID-like arm (a Panda and its hand) under ros2_control.

The `sim_arm` node owns the physics and the hardware loop; the controllers are their own
nodes in the same namespace (controllers.py: by default `joint_trajectory_controller` on the 7
arm joints and `gripper_trajectory_controller` on panda_finger_joint1, each with its own
`~/joint_trajectory` topic and upstream parameters, `controller_distro` choosing whose rules),
and so is `controller_manager` (controller_manager.py: its update rate, and on Kilted its
clamping of every command to the joints' limits).

Topics (relative, so namespaces and remaps apply):
  sub  <controller>/joint_trajectory                  trajectory_msgs/JointTrajectory
  pub  joint_states                                   sensor_msgs/JointState (finger in m)
  pub  camera/{exterior,wrist}/image_raw[/compressed] sensor_msgs/Image or CompressedImage
  pub  ~/task_distance                                std_msgs/Float64, ~10 Hz
Service ~/hold (std_srvs/Trigger): every controller holds where the arm is; the reply counts
holds.

All timing (stamps, trajectory start and sampling, the physics step) runs on the node clock,
the clock JTC uses and `header.stamp` is written in; with use_sim_time it follows /clock.
"""

from collections.abc import Sequence
import sys
from typing import Any

import numpy as np
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.exceptions import ParameterException
import rclpy.logging
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros import stop_signals
from sequence_ai_ros.runtime.spin import init, make_executor, shutdown, spin_until_shutdown
from sequence_ai_ros.sim import controllers, messages, params
from sequence_ai_ros.sim.arm import JOINT_NAMES, SimArm
from sequence_ai_ros.sim.controller_base import SimController
from sequence_ai_ros.sim.controller_manager import ControllerManagerNode
from sequence_ai_ros.sim.hardware import HardwareLoop
from sequence_ai_ros.sim.render import SceneRenderer
from sequence_ai_ros.world import arm_model
from std_msgs.msg import Float64, Header
from std_srvs.srv import Trigger

# A stalled tick (or a clock jump) must not turn into one huge leap.
MAX_STEP_S = 0.1
TASK_DISTANCE_RATE_HZ = 10.0
CAMERAS = ('exterior', 'wrist')


class SimArmNode(Node):
    """Runs the arm's controllers on a simulated arm and publishes its joints and cameras."""

    def __init__(self, argv: Sequence[str] | None = None, **kwargs: Any) -> None:
        super().__init__('sim_arm', **kwargs)
        settings = params.declare(self)
        self._arm = SimArm(settings.initial_positions, self.get_parameter('time_scale').value)
        options = controllers.controller_node_options(self, sys.argv if argv is None else argv)
        manager = ControllerManagerNode(settings.controller_distro, *self._arm.position_limits,
                                        **options)
        self.controller_manager: ControllerManagerNode | None = manager
        self.controllers: list[SimController] = []
        # Only a limiter reads when each forward command arrived (joint_limits.schedule).
        self.timed_arrivals = manager.limiter is not None
        try:
            self.controllers = controllers.build(
                settings.arm_controller, settings.gripper_controller,
                settings.controller_distro, 1.0 / settings.joint_state_rate_hz,
                self.timed_arrivals, **options)
            self._hardware = HardwareLoop(self._arm, self.controllers,
                                          limiter=manager.limiter, on_clamp=manager.log_clamp)
        except ValueError:
            self.destroy_controllers()
            raise
        self._renderer = SceneRenderer(settings.image_width, settings.image_height)
        self._target = np.array(self.get_parameter('target_xy').value, dtype=float)
        if params.check_target(self._target):
            raise ValueError(params.check_target(self._target))
        self._holds = 0
        self._last_tick = self._now()
        self._every_update = settings.joint_states_every_update
        self._last_sample = self._arm.position.copy()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        if settings.random_target_seed >= 0:
            rng = np.random.default_rng(settings.random_target_seed)
            xy = [rng.uniform(*arm_model.TARGET_X), rng.uniform(*arm_model.TARGET_Y)]
            self.set_parameters([Parameter('target_xy', value=xy)])

        self._compressed = settings.image_transport == 'compressed'
        suffix, image_type = ('/compressed', CompressedImage) if self._compressed \
            else ('', Image)
        # A second of every update's states: a slow reader (a recorder on a busy machine) must
        # not lose the samples a jerk is measured on.
        self._joint_pub = self.create_publisher(JointState, 'joint_states',
                                                1000 if self._every_update else 10)
        self._camera_pubs = {
            name: self.create_publisher(image_type, f'camera/{name}/image_raw{suffix}',
                                        qos_profile_sensor_data)
            for name in CAMERAS}
        self._distance_pub = self.create_publisher(Float64, '~/task_distance', 10)
        self.create_service(Trigger, '~/hold', self._on_hold)
        self.create_timer(1.0 / settings.joint_state_rate_hz, self._on_tick)
        self.create_timer(1.0 / settings.camera_rate_hz, self._on_camera)
        self.create_timer(1.0 / TASK_DISTANCE_RATE_HZ, self._on_distance)
        self.get_logger().info(
            f'simulated arm up: {settings.image_transport} {settings.image_width}x'
            f'{settings.image_height} cameras, target {self._target.round(3).tolist()}, '
            f'{settings.controller_distro} controllers {settings.arm_controller} and '
            f'{settings.gripper_controller}')

    def destroy_controllers(self) -> None:
        """Destroy the controller nodes and the controller_manager's (not sim_arm itself)."""
        for controller in self.controllers:
            if isinstance(controller, Node):
                controller.destroy_node()
        self.controllers = []
        if self.controller_manager is not None:
            self.controller_manager.destroy_node()
            self.controller_manager = None

    @property
    def hold_count(self) -> int:
        """How many times ~/hold has been called."""
        return self._holds

    def task_distance(self) -> float:
        """Metres from the tool centre to the hover point above the target."""
        hover = np.array([self._target[0], self._target[1], arm_model.HOVER_Z])
        return float(np.linalg.norm(self._arm.tool_position() - hover))

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_tick(self) -> None:
        stamp = self.get_clock().now()
        now = stamp.nanoseconds * 1e-9
        dt = min(max(now - self._last_tick, 0.0), MAX_STEP_S)
        self._last_tick = now
        self._hardware.step(now, dt)
        if not self._every_update or len(self._hardware.samples) < 2:
            self._joint_pub.publish(messages.joint_state_msg(
                stamp.to_msg(), JOINT_NAMES, self._arm.position, self._arm.velocity))
            self._last_sample = self._arm.position.copy()
            return
        period = dt / len(self._hardware.samples)
        for at, position in self._hardware.samples:
            velocity = (position - self._last_sample) / period
            self._last_sample = position
            self._joint_pub.publish(messages.joint_state_msg(
                messages.stamp_at(at), JOINT_NAMES, position, velocity))

    def _on_hold(self, request: Trigger.Request, response: Trigger.Response
                 ) -> Trigger.Response:
        self._hardware.hold()
        self._holds += 1
        response.success = True
        response.message = f'holding; holds: {self._holds}'
        self.get_logger().info(f'hold requested ({self._holds} so far)')
        return response

    def _on_camera(self) -> None:
        stamp = self.get_clock().now().to_msg()
        encode = messages.compressed_msg if self._compressed else messages.image_msg
        q = self._arm.arm_position
        for name, render in (('exterior', self._renderer.exterior),
                             ('wrist', self._renderer.wrist)):
            header = Header(stamp=stamp, frame_id=f'{name}_camera')
            self._camera_pubs[name].publish(encode(header, render(q, self._target)))

    def _on_distance(self) -> None:
        self._distance_pub.publish(Float64(data=self.task_distance()))

    def _on_set_parameters(self, changed: list[Parameter]) -> SetParametersResult:
        # Humble has no post-set callback: validate everything, then apply.
        for p in changed:
            if p.name == 'target_xy' and params.check_target(p.value):
                return SetParametersResult(successful=False, reason=params.check_target(p.value))
        for p in changed:
            if p.name == 'target_xy':
                self._target = np.array(p.value, dtype=float)
            elif p.name == 'time_scale':
                self._arm.time_scale = float(p.value)
        return SetParametersResult(successful=True)


def main(args: list[str] | None = None) -> None:
    """Run the node until SIGINT/SIGTERM, then shut down without a traceback and exit 0."""
    init(args)
    logger = rclpy.logging.get_logger('sim_arm')
    try:
        node = SimArmNode(args)
    except (ValueError, ParameterException) as err:
        logger.fatal(f'cannot start: {err}')
        shutdown()
        sys.exit(2)
    single = controllers.needs_single_threaded(
        node.get_parameter('arm_controller').value,
        node.get_parameter('gripper_controller').value, node.timed_arrivals)
    executor = make_executor(node, 'single' if single else None)
    for controller in node.controllers:
        if isinstance(controller, Node):
            executor.add_node(controller)
    if node.controller_manager is not None:
        executor.add_node(node.controller_manager)
    try:
        spin_until_shutdown(executor)
    finally:
        # A terminal's Ctrl-C and launch's forwarded SIGINT both arrive: the second must not
        # cut the shutdown short, nor the exit (the process would die with -2).
        stop_signals.ignore()
        summary = f'final task distance {node.task_distance():.3f} m, holds {node.hold_count}'
        # Logged after destroy_node: a signal may have taken the rosout publisher already.
        node.destroy_controllers()
        node.destroy_node()
        logger.info(summary)
        shutdown()


if __name__ == '__main__':
    main()
