"""Start diagnostic_aggregator with this package's analyzers, where it is installed."""

# Usage:
#     ros2 launch sequence_ai_ros diagnostic_aggregator.launch.py
#     ros2 launch sequence_ai_ros policy.launch.py aggregator:=true    (the same, included)
#
# rqt_robot_monitor shows /diagnostics_agg, which only diagnostic_aggregator publishes; the
# node itself publishes /diagnostics (rqt_runtime_monitor shows that one raw). Where the
# package is missing (apt install ros-$ROS_DISTRO-diagnostic-aggregator) this logs one line
# and starts nothing: the rest of the launch goes on.
#
# Arguments:
#   analyzers_file  the analyzers (default config/diagnostic_analyzers.yaml)

from ament_index_python.packages import get_package_prefix, PackageNotFoundError
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'sequence_ai_ros'
AGGREGATOR = 'diagnostic_aggregator'
# The node name the analyzers file is written for (its top-level key), as in upstream's
# diagnostic_aggregator/example/example_analyzers.yaml.
NODE_NAME = 'analyzers'


def _aggregator(context):
    """Return the aggregator node, or a log line saying why there is none."""
    try:
        get_package_prefix(AGGREGATOR)
    except PackageNotFoundError:
        return [LogInfo(msg=f'{AGGREGATOR} is not installed: not starting it, so there is no '
                            f'/diagnostics_agg (apt install ros-<distro>-diagnostic-aggregator)')]
    return [Node(package=AGGREGATOR, executable='aggregator_node', name=NODE_NAME,
                 parameters=[LaunchConfiguration('analyzers_file')], output='screen')]


def generate_launch_description():
    """Declare the analyzers file; start the aggregator once it is known to be there."""
    return LaunchDescription([
        DeclareLaunchArgument(
            'analyzers_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare(PACKAGE), 'config', 'diagnostic_analyzers.yaml']),
            description='diagnostic_aggregator analyzers (parameter file)'),
        OpaqueFunction(function=_aggregator),
    ])
