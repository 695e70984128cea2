"""Run the whole loop on one ROS 2 machine: local gateway, simulated arm and the policy node."""

# Usage:
#     ros2 launch sequence_ai_ros demo.launch.py
#     ros2 launch sequence_ai_ros demo.launch.py model:=lingbot_va_5b start_warm:=false
#
# Watch it:
#     ros2 topic echo /sim_arm/task_distance    tool-to-target distance (m), falls as it reaches
#     ros2 topic echo /diagnostics              the node's health, latency, holds
#     ros2 run rqt_image_view rqt_image_view /camera/exterior/image_raw
#
# The gateway is this package's `sequence_ai_gateway`: the hosted wire contract with the
# catalogue's timing and reference policies, on 127.0.0.1 only. Started without keys (no
# --keys-file, no
# $SEQUENCE_AI_ROS_GATEWAY_KEYS in the environment) it runs with auth disabled and accepts
# every call. The node still wants a key to send: it keeps yours from $SEQUENCES_API_KEY, else it
# gets a placeholder (no key at all) that such a gateway accepts. If you set
# SEQUENCE_AI_ROS_GATEWAY_KEYS, put one of those keys in $SEQUENCES_API_KEY.
#
# Arguments:
#   model           config/<model>.yaml (default pi05_droid); params_file overrides it
#   namespace       namespace of the simulated arm and the policy node
#   time_scale      < 1 runs faster than real time: the gateway shrinks latency, cold start and
#                   control period by it and the sim arm speeds up to match (default 1.0)
#   start_warm      true: models answer at once; false: the first call waits out the ~100 s
#                   cold start (times time_scale), as a hosted model that has gone cold does
#   port            gateway port (default 8765)
#   protocol        the gateway's wire fronts: v1 (/v1/act), direct (connect + an HTTPS
#                   worker, the sequence-ai 0.51 protocol) or both (default both)
#   instruction     the task; '' keeps the parameter file's
#   policy_delay_s  start the policy node this long after the gateway: a refused connection
#                   would end its first episode (default 2.0 s)
#   aggregator      also start diagnostic_aggregator (/diagnostics_agg, for rqt_robot_monitor)
#                   where it is installed (default false)

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    IncludeLaunchDescription,
    RegisterEventHandler,
    SetEnvironmentVariable,
    TimerAction,
)
from launch.conditions import IfCondition, UnlessCondition
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import EnvironmentVariable, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import ExecutableInPackage, FindPackageShare

PACKAGE = 'sequence_ai_ros'
# Sent to the keyless local gateway when the user has no key: it accepts anything.
PLACEHOLDER_KEY = 'local-gateway-auth-disabled'


def _gateway(flags, condition):
    """Return the gateway process, and a handler that ends the demo if the gateway exits."""
    process = ExecuteProcess(
        cmd=[ExecutableInPackage('sequence_ai_gateway', PACKAGE),
             '--port', LaunchConfiguration('port'),
             '--time-scale', LaunchConfiguration('time_scale'),
             '--protocol', LaunchConfiguration('protocol'), *flags],
        name='gateway', output='screen', condition=condition)
    stop = RegisterEventHandler(OnProcessExit(target_action=process, on_exit=_end_demo))
    return [process, stop]


def _end_demo(event, context):
    """Shut the demo down when the gateway exits, unless launch is already shutting down."""
    # A second Shutdown (e.g. the gateway ending on Ctrl-C) reruns launch_ros's OnShutdown
    # handler, whose ROSAdapter.shutdown() then raises and launch exits 1 (launch_ros,
    # ros_adapters.py, get_ros_adapter; launch, launch_service.py, __on_shutdown).
    if context.is_shutdown:
        return None
    return [EmitEvent(event=Shutdown(reason='the gateway exited'))]


def generate_launch_description():
    """Declare the arguments; start the gateway and the sim arm, then the policy node."""
    warm = IfCondition(LaunchConfiguration('start_warm'))
    cold = UnlessCondition(LaunchConfiguration('start_warm'))
    sim_arm = Node(
        package=PACKAGE, executable='sequence_ai_sim_arm', name='sim_arm',
        namespace=LaunchConfiguration('namespace'),
        # Typed: '1' from the command line would otherwise arrive as an integer.
        parameters=[{'time_scale': ParameterValue(LaunchConfiguration('time_scale'),
                                                  value_type=float)},
                    # The controllers file a team copies; the gripper on a one-joint JTC.
                    PathJoinSubstitution([FindPackageShare(PACKAGE), 'config', 'ros2_control',
                                          'panda_controllers.yaml']),
                    {'gripper_controller': 'gripper_trajectory_controller'}],
        output='screen')
    policy = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare(PACKAGE), 'launch', 'policy.launch.py'])),
        launch_arguments={
            'model': LaunchConfiguration('model'),
            'params_file': LaunchConfiguration('params_file'),
            'namespace': LaunchConfiguration('namespace'),
            'base_url': ['http://127.0.0.1:', LaunchConfiguration('port')],
            'hold_service': 'sim_arm/hold',  # relative: the sim arm in the same namespace
            'instruction': LaunchConfiguration('instruction'),
            'autostart': 'true',
            'aggregator': LaunchConfiguration('aggregator'),
            'gripper_interface': 'trajectory',
            'gripper_controller': 'gripper_trajectory_controller',
        }.items())
    return LaunchDescription([
        DeclareLaunchArgument('model', default_value='pi05_droid',
                              description='which config/<model>.yaml to load'),
        DeclareLaunchArgument(
            'params_file',
            default_value=[PathJoinSubstitution(
                [FindPackageShare(PACKAGE), 'config', LaunchConfiguration('model')]), '.yaml'],
            description='parameter file for the policy node; overrides model'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of the sim arm and the policy node'),
        DeclareLaunchArgument('time_scale', default_value='1.0',
                              description='< 1 runs the gateway and the sim arm faster'),
        DeclareLaunchArgument('start_warm', default_value='true',
                              description='false: the first call waits out the cold start'),
        DeclareLaunchArgument('port', default_value='8765', description='gateway port'),
        DeclareLaunchArgument('protocol', default_value='both',
                              description="the gateway's wire fronts: v1, direct or both"),
        DeclareLaunchArgument('instruction', default_value='',
                              description="the task; '' keeps the parameter file's"),
        DeclareLaunchArgument('policy_delay_s', default_value='2.0',
                              description='seconds between starting the gateway and the node'),
        DeclareLaunchArgument('aggregator', default_value='false',
                              description='also start diagnostic_aggregator where installed'),
        SetEnvironmentVariable('SEQUENCES_API_KEY', EnvironmentVariable(
            'SEQUENCES_API_KEY', default_value=PLACEHOLDER_KEY)),
        *_gateway(['--start-warm'], warm),
        *_gateway([], cold),
        sim_arm,
        TimerAction(period=LaunchConfiguration('policy_delay_s'), actions=[policy]),
    ])
