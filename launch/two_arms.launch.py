"""Start two policy nodes, /left and /right, each with its own model, topics and connection."""

# Usage:
#     ros2 launch sequence_ai_ros two_arms.launch.py \
#         left_model:=pi05_droid right_model:=lingbot_va_5b
#
# Each side is policy.launch.py in its own namespace: its own node, Policy (one kept-alive
# connection), chunk buffer, episode and /diagnostics hardware_id. Relative topics resolve under
# the namespace: /left/joint_states, /left/camera/wrist/image_raw,
# /left/joint_trajectory_controller/joint_trajectory, and the same under /right.
#
# Arguments, per side (left_..., right_...):
#   <side>_model               config/<model>.yaml for that arm (default pi05_droid)
#   <side>_params_file         a parameter file of your own instead
#   <side>_namespace           the node's namespace (default: the side's name)
#   <side>_command_topic       that arm's controller topic
#   <side>_joint_states_topic  that arm's joint states
#   <side>_hold_service        std_srvs/Trigger called on that arm's holds ('' keeps the file's)
# and shared: base_url, instruction, autostart (as in policy.launch.py), and aggregator: one
# diagnostic_aggregator for both (where installed).
#
# A two-arm cell often publishes one /joint_states with prefixed names (left_panda_joint1, ...):
# then copy the model's YAML per arm, set joint_names and gripper_joint to that arm's names,
# pass it as <side>_params_file and remap <side>_joint_states_topic:=/joint_states.

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'sequence_ai_ros'
SIDES = ('left', 'right')
COMMAND_TOPIC = 'joint_trajectory_controller/joint_trajectory'
SHARED = ('base_url', 'instruction', 'autostart')


def _side_arguments(side):
    """Declare the arguments of one side."""
    model = LaunchConfiguration(f'{side}_model')
    return [
        DeclareLaunchArgument(f'{side}_model', default_value='pi05_droid',
                              description=f'config/<model>.yaml for the {side} arm'),
        DeclareLaunchArgument(
            f'{side}_params_file',
            # <share>/config/<model> + '.yaml' (Humble's PathJoinSubstitution: no nested lists)
            default_value=[PathJoinSubstitution(
                [FindPackageShare(PACKAGE), 'config', model]), '.yaml'],
            description=f'parameter file for the {side} node; overrides {side}_model'),
        DeclareLaunchArgument(f'{side}_namespace', default_value=side,
                              description=f'namespace of the {side} node'),
        DeclareLaunchArgument(f'{side}_command_topic', default_value=COMMAND_TOPIC,
                              description=f'JointTrajectory topic of the {side} controller'),
        DeclareLaunchArgument(f'{side}_joint_states_topic', default_value='joint_states',
                              description=f'joint states of the {side} arm'),
        DeclareLaunchArgument(f'{side}_hold_service', default_value='',
                              description=f"hold service of the {side} arm; '' keeps the file's"),
    ]


def _side(side):
    """Include policy.launch.py for one side, scoped so its arguments stay its own."""
    policy = PathJoinSubstitution([FindPackageShare(PACKAGE), 'launch', 'policy.launch.py'])
    arguments = {name: LaunchConfiguration(f'{side}_{name}') for name in (
        'model', 'params_file', 'namespace', 'command_topic', 'joint_states_topic',
        'hold_service')}
    arguments.update({name: LaunchConfiguration(name) for name in SHARED})
    arguments['aggregator'] = 'false'  # one aggregator for both sides, started below
    # GroupAction scopes launch configurations: without it the first include's settings
    # (params_file, namespace, ...) would still be set when the second one is read.
    return GroupAction([IncludeLaunchDescription(
        PythonLaunchDescriptionSource(policy), launch_arguments=arguments.items())])


def generate_launch_description():
    """Declare both sides' arguments and include the policy launch file once per side."""
    shared = [
        DeclareLaunchArgument('base_url', default_value='',
                              description="gateway URL for both nodes; '' keeps the files'"),
        DeclareLaunchArgument('instruction', default_value='',
                              description="the task for both arms; '' keeps the files'"),
        DeclareLaunchArgument('autostart', default_value='true',
                              description='configure and activate both nodes at once'),
        DeclareLaunchArgument('aggregator', default_value='false',
                              description='also start diagnostic_aggregator where installed'),
    ]
    sides = [entity for side in SIDES for entity in _side_arguments(side)]
    aggregator = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution(
            [FindPackageShare(PACKAGE), 'launch', 'diagnostic_aggregator.launch.py'])),
        condition=IfCondition(LaunchConfiguration('aggregator')))
    return LaunchDescription([*shared, *sides, *(_side(side) for side in SIDES), aggregator])
