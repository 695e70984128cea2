"""Start the policy node for one arm, configured and activated through its lifecycle."""

# Usage:
#     ros2 launch sequence_ai_ros policy.launch.py model:=pi05_droid
#     ros2 launch sequence_ai_ros policy.launch.py model:=cosmos3_edge_policy_droid \
#         namespace:=left command_topic:=/left/arm_controller/joint_trajectory
#
# Arguments (`ros2 launch sequence_ai_ros policy.launch.py --show-args` lists them):
#   model               config/<model>.yaml to load (pi05_droid, cosmos3_edge_policy_droid,
#                       lingbot_va_5b, lingbot_vla_v2_6b)
#   params_file         another parameter file instead (a copy you edited for your arm)
#   namespace           namespace of the node; its relative topics move with it
#   command_topic       where the JointTrajectory commands go (your controller's topic)
#   joint_states_topic  where the joint states come from
#   base_url            gateway URL; '' keeps the file's (then $SEQUENCES_BASE_URL, then hosted)
#   hold_service        std_srvs/Trigger called on every hold; '' keeps the file's
#   instruction         the task in words; '' keeps the file's
#   output_mode         trajectory_plan, trajectory_stream, forward_position, forward_velocity;
#                       '' keeps the file's (README, "Which controller")
#   controller_name     the arm's controller (its topic and get_parameters); '' keeps the file's
#   gripper_interface   action, trajectory, forward_position or with_arm; '' keeps the file's
#   gripper_controller  the gripper's controller; '' keeps the file's
#   gripper_action_name the GripperCommand action, e.g. franka_gripper/gripper_action
#   autostart           configure and activate at once (false: use `ros2 lifecycle set`)
#   aggregator          also start diagnostic_aggregator (/diagnostics_agg, for
#                       rqt_robot_monitor) where it is installed (default false)
# "'' keeps the file's" is the node's default where the file gives none (the shipped files
# give only what is model- or arm-specific: output_mode is trajectory_plan, gripper_interface
# action unless a file or an argument says otherwise).
#
# The API key is never an argument: the node reads $SEQUENCES_API_KEY, the credentials file or
# the file named by the api_key_file parameter.

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    IncludeLaunchDescription,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.conditions import IfCondition
from launch.events import matches_action
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare
from lifecycle_msgs.msg import Transition

PACKAGE = 'sequence_ai_ros'
# The node publishes here (relative, so a namespace moves it); remapped to command_topic.
COMMAND_TOPIC = 'joint_trajectory_controller/joint_trajectory'
# String parameters that an argument overrides only when given: an empty launch argument
# would otherwise replace the file's value (and launch_ros cannot even type an empty string).
# Arguments that override the parameter file where given ('' keeps the file's), with what
# each sets where its name alone does not say.
OVERRIDES = {
    'base_url': 'gateway URL',
    'hold_service': 'std_srvs/Trigger service called on every hold',
    'instruction': 'the task in words',
    **{name: name for name in ('output_mode', 'controller_name', 'gripper_interface',
                               'gripper_controller', 'gripper_action_name')},
}


def _policy_node(context):
    """Return the node and its configure/activate events, with the overrides that were given."""
    overrides = {}
    for name in OVERRIDES:
        if LaunchConfiguration(name).perform(context):
            # Typed as a string, so an instruction like 'yes' or 'a: b' is not read as YAML.
            overrides[name] = ParameterValue(LaunchConfiguration(name), value_type=str)
    node = LifecycleNode(
        package=PACKAGE, executable='sequence_ai_policy_node', name='policy_node',
        namespace=LaunchConfiguration('namespace'),
        parameters=[LaunchConfiguration('params_file'), *([overrides] if overrides else [])],
        remappings=[(COMMAND_TOPIC, LaunchConfiguration('command_topic')),
                    ('joint_states', LaunchConfiguration('joint_states_topic'))],
        output='screen')
    autostart = IfCondition(LaunchConfiguration('autostart'))
    configure = EmitEvent(
        event=ChangeState(lifecycle_node_matcher=matches_action(node),
                          transition_id=Transition.TRANSITION_CONFIGURE),
        condition=autostart)
    # Activate after a successful configure only (start_state 'configuring'): matching any
    # arrival in 'inactive' would also re-activate a node an operator has just deactivated.
    activate = RegisterEventHandler(
        OnStateTransition(
            target_lifecycle_node=node, start_state='configuring', goal_state='inactive',
            entities=[EmitEvent(event=ChangeState(
                lifecycle_node_matcher=matches_action(node),
                transition_id=Transition.TRANSITION_ACTIVATE))]),
        condition=autostart)
    return [activate, node, configure]


def generate_launch_description():
    """Declare the arguments, then build the node once their values are known."""
    # <share>/config/<model> + '.yaml': Humble's PathJoinSubstitution takes no nested lists.
    default_params = [PathJoinSubstitution(
        [FindPackageShare(PACKAGE), 'config', LaunchConfiguration('model')]), '.yaml']
    return LaunchDescription([
        DeclareLaunchArgument(
            'model', default_value='pi05_droid',
            description='which config/<model>.yaml to load (underscores, no .yaml)'),
        DeclareLaunchArgument(
            'params_file', default_value=default_params,
            description='parameter file for the node; overrides model'),
        DeclareLaunchArgument('namespace', default_value='', description='node namespace'),
        DeclareLaunchArgument(
            'command_topic', default_value=COMMAND_TOPIC,
            description='JointTrajectory command topic (relative names follow the namespace)'),
        DeclareLaunchArgument(
            'joint_states_topic', default_value='joint_states',
            description='sensor_msgs/JointState topic of the arm'),
        *(DeclareLaunchArgument(name, default_value='',
                                description=f"{what}; '' keeps the parameter file's")
          for name, what in OVERRIDES.items()),
        DeclareLaunchArgument(
            'autostart', default_value='true',
            description='configure and activate the node at once'),
        DeclareLaunchArgument(
            'aggregator', default_value='false',
            description='also start diagnostic_aggregator (/diagnostics_agg) where installed'),
        OpaqueFunction(function=_policy_node),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution(
                [FindPackageShare(PACKAGE), 'launch', 'diagnostic_aggregator.launch.py'])),
            condition=IfCondition(LaunchConfiguration('aggregator'))),
    ])
