"""The sim_arm as a real process, and a probe node that talks to it over DDS."""

from pathlib import Path
import signal
import tempfile
import time

import numpy as np
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage, Image, JointState
from sequence_ai_ros.harness.child_processes import child_env, ChildProcess
from std_msgs.msg import Float64
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

REPO = Path(__file__).resolve().parents[1]


class SimProcess(ChildProcess):
    """`python -m sequence_ai_ros.sim.node` in a namespace, its output kept in a file."""

    def __init__(self, namespace, *params, params_file=None, ros_args=()):
        args = ['--ros-args']
        if namespace != '/':
            args += ['-r', f'__ns:={namespace}']
        if params_file:
            args += ['--params-file', str(params_file)]
        for param in params:
            args += ['-p', param]
        args += list(ros_args)
        self._dir = tempfile.TemporaryDirectory(prefix='sim_arm_')
        self._final_output = None
        super().__init__('sim_arm', 'sequence_ai_ros.sim.node', args,
                         child_env(PYTHONUNBUFFERED='1', RCUTILS_LOGGING_BUFFERED_STREAM='0'),
                         Path(self._dir.name) / 'sim_arm.log', cwd=REPO)

    def output(self):
        """Return everything the process has printed so far (kept once it is stopped)."""
        if self._final_output is not None:
            return self._final_output
        return self.log_path.read_text(errors='replace')

    def stop(self, sig=signal.SIGINT):
        """Stop the process (SIGINT by default, SIGKILL after 10 s); return its code and output."""
        code = super().stop(10.0, sig)
        if self._final_output is None:
            self._final_output = self.output()
            self._dir.cleanup()
        return code, self._final_output


class Probe:
    """A node in its own context that records what one sim publishes and calls its services."""

    def __init__(self, context, namespace, compressed=False):
        ns = '' if namespace == '/' else namespace
        self.ns = ns
        self.node = rclpy.create_node(f'probe{ns.replace("/", "_")}', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.joint_states = []
        self.distances = []
        self.frames = {'exterior': [], 'wrist': []}
        self.node.create_subscription(JointState, f'{ns}/joint_states',
                                      self.joint_states.append, 100)
        self.node.create_subscription(Float64, f'{ns}/sim_arm/task_distance',
                                      lambda m: self.distances.append(m.data), 10)
        kind, suffix = (CompressedImage, '/compressed') if compressed else (Image, '')
        for view, frames in self.frames.items():
            self.node.create_subscription(kind, f'{ns}/camera/{view}/image_raw{suffix}',
                                          frames.append, qos_profile_sensor_data)
        self.trajectory_pub = self.trajectory_publisher('joint_trajectory_controller')
        self.hold = self.node.create_client(Trigger, f'{ns}/sim_arm/hold')
        self.set_params = self.node.create_client(SetParameters, f'{ns}/sim_arm/set_parameters')

    def trajectory_publisher(self, controller):
        """Publish to `<controller>/joint_trajectory` in the sim's namespace (reliable)."""
        return self.node.create_publisher(
            JointTrajectory, f'{self.ns}/{controller}/joint_trajectory', 10)

    def spin_for(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.01)

    def wait_for(self, predicate, timeout, what):
        assert self.wait_until(predicate, timeout), f'timed out waiting for {what}'

    def wait_until(self, predicate, timeout):
        """Spin until `predicate()` is true (True) or `timeout` seconds have passed (False)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            self.executor.spin_once(timeout_sec=0.05)
        return True

    def call(self, client, request, timeout=5.0):
        assert client.wait_for_service(timeout_sec=timeout)
        future = client.call_async(request)
        self.wait_for(future.done, timeout, 'service reply')
        return future.result()

    def get_parameters(self, node_name, *names, attempts=3):
        """
        Return {name: ParameterValue} from `/<ns>/<node_name>/get_parameters`.

        Asked again if no reply comes in 5 s: a new client's request can be answered before the
        server has discovered where to send the answer (seen on a busy machine), and asking
        twice changes nothing.
        """
        client = self.node.create_client(GetParameters, f'{self.ns}/{node_name}/get_parameters')
        try:
            assert client.wait_for_service(timeout_sec=10.0), f'no {node_name}/get_parameters'
            for _ in range(attempts):
                future = client.call_async(GetParameters.Request(names=list(names)))
                if self.wait_until(future.done, 5.0):
                    return dict(zip(names, future.result().values))
                client.remove_pending_request(future)
        finally:
            self.node.destroy_client(client)
        raise AssertionError(f'{node_name}/get_parameters: no reply in {attempts} tries of 5 s')

    def set_target(self, values):
        value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                               double_array_value=list(values))
        request = SetParameters.Request(parameters=[Parameter(name='target_xy', value=value)])
        return self.call(self.set_params, request).results[0]

    def now(self):
        return self.node.get_clock().now().nanoseconds * 1e-9

    def latest(self, *names):
        state = self.joint_states[-1]
        return np.array([state.position[list(state.name).index(n)] for n in names])

    def destroy(self):
        self.executor.shutdown()
        self.node.destroy_node()


def stamp(msg):
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
