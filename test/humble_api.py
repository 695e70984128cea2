"""
The part of ROS 2 Humble's Python API this package calls (rclpy 3.3, launch 1.0, launch_ros 0.19).

Humble has no PyPI wheels, so test_humble_api.py checks the package's imports and keyword
arguments against this table instead of against a Humble install. An entry missing here fails
that test until someone has checked it against the humble branch and added it.

Read on the humble branches (ros2/rclpy, ros2/launch_ros): rclpy's CHANGELOG up to 3.3.15
(managed nodes and `rclpy.lifecycle` since 3.2.0, `Clock.sleep_until` since 3.2.0, parameters
declared by type since 3.0.0, SIGTERM handling and `rclpy.signals` since 3.1.0);
`rclpy/lifecycle/node.py` (the change_state service triggers any transition unchecked;
`_state_machine`, `_service_change_state`); `rcutils_logger.py` (`warning`, `warn`); launch_ros'
`LifecycleNode` action (`name` and `namespace` both required keywords).
"""

# module -> the names this package imports from it that exist on Humble.
HUMBLE_NAMES = {
    'rclpy': {'init', 'shutdown', 'try_shutdown', 'ok', 'create_node', 'spin', 'spin_once',
              'logging', 'executors', 'node', 'qos'},
    'rclpy.action': {'ActionClient', 'ActionServer', 'CancelResponse', 'GoalResponse'},
    'rclpy.action.server': {'GoalEvent', 'ServerGoalHandle'},
    # rclpy/client.py and rclpy/timer.py: the classes create_client and create_timer return.
    'rclpy.client': {'Client'},
    'rclpy.exceptions': {'InvalidParameterTypeException', 'InvalidParameterValueException',
                         'ParameterException'},
    'rclpy.executors': {'Executor', 'ExternalShutdownException', 'MultiThreadedExecutor',
                        'SingleThreadedExecutor'},
    'rclpy.lifecycle': {'LifecycleNode', 'LifecycleState', 'TransitionCallbackReturn'},
    'rclpy.logging': {'get_logger'},
    'rclpy.node': {'Node'},
    'rclpy.parameter': {'Parameter'},
    'rclpy.qos': {'QoSProfile', 'ReliabilityPolicy', 'qos_profile_sensor_data',
                  'qos_profile_system_default'},
    # Since Foxy (rclpy/serialization.py): the episode recorder serializes with it.
    'rclpy.serialization': {'serialize_message'},
    'rclpy.signals': {'SignalHandlerOptions'},
    'rclpy.task': {'Future'},
    'rclpy.timer': {'Timer'},
    'launch': {'LaunchDescription'},
    'launch.actions': {'DeclareLaunchArgument', 'EmitEvent', 'ExecuteProcess', 'GroupAction',
                       'IncludeLaunchDescription', 'LogInfo', 'OpaqueFunction',
                       'RegisterEventHandler', 'SetEnvironmentVariable', 'TimerAction'},
    'launch.conditions': {'IfCondition', 'UnlessCondition'},
    'launch.event_handlers': {'OnProcessExit'},
    'launch.events': {'Shutdown', 'matches_action'},
    'launch.launch_description_sources': {'PythonLaunchDescriptionSource'},
    'launch.substitutions': {'EnvironmentVariable', 'LaunchConfiguration',
                             'PathJoinSubstitution'},
    'launch_ros.actions': {'LifecycleNode', 'Node'},
    'launch_ros.event_handlers': {'OnStateTransition'},
    'launch_ros.events.lifecycle': {'ChangeState'},
    'launch_ros.parameter_descriptions': {'ParameterValue'},
    'launch_ros.substitutions': {'ExecutableInPackage', 'FindPackageShare'},
}

# What later distributions added: used only inside `try: ... except ImportError` (a fallback).
# (module, name); name None means the whole module.
NEWER_ONLY = {
    ('rclpy.experimental', 'EventsExecutor'): 'the EventsExecutor (rclpy 9, Kilted)',
    ('rclpy.experimental', None): 'rclpy.experimental (after Humble)',
    ('rclpy.event_handler', None): 'rclpy.event_handler (Iron; Humble has rclpy.qos_event)',
    ('rclpy.type_hash', None): 'type hashes (Iron)',
    ('rclpy.service_introspection', None): 'service introspection (Iron)',
    ('rclpy.subscription', 'MessageInfo'): 'subscription callbacks given the message info '
                                           '(Iron)',
}

_NODE = {'context', 'cli_args', 'namespace', 'use_global_arguments', 'enable_rosout',
         'start_parameter_services', 'parameter_overrides', 'allow_undeclared_parameters',
         'automatically_declare_parameters_from_overrides'}
_QOS = {'depth', 'history', 'reliability', 'durability', 'lifespan', 'deadline', 'liveliness',
        'liveliness_lease_duration', 'avoid_ros_namespace_conventions'}

# Callables imported from the table -> the keyword arguments Humble's signature takes.
HUMBLE_KEYWORDS = {
    ('rclpy.node', 'Node'): _NODE,  # enable_logger_service is Iron's
    ('rclpy.lifecycle', 'LifecycleNode'): _NODE | {'enable_communication_interface',
                                                   'callback_group'},
    ('rclpy.executors', 'SingleThreadedExecutor'): {'context'},
    ('rclpy.executors', 'MultiThreadedExecutor'): {'num_threads', 'context'},
    ('rclpy.qos', 'QoSProfile'): _QOS,
    ('rclpy.task', 'Future'): {'executor'},
    ('rclpy.parameter', 'Parameter'): {'name', 'type_', 'value'},
    ('rclpy.action', 'ActionClient'): {
        'callback_group', 'goal_service_qos_profile', 'result_service_qos_profile',
        'cancel_service_qos_profile', 'feedback_sub_qos_profile', 'status_sub_qos_profile'},
    ('rclpy.action', 'ActionServer'): {
        'execute_callback', 'callback_group', 'goal_callback', 'handle_accepted_callback',
        'cancel_callback', 'goal_service_qos_profile', 'result_service_qos_profile',
        'cancel_service_qos_profile', 'feedback_pub_qos_profile', 'status_pub_qos_profile',
        'result_timeout'},
}

# Methods called by name on a node, an executor or a client -> Humble's keyword arguments.
HUMBLE_METHOD_KEYWORDS = {
    'create_timer': {'callback_group', 'clock'},  # autostart is Jazzy's
    'create_publisher': {'callback_group', 'event_callbacks', 'qos_overriding_options',
                         'publisher_class'},
    'create_lifecycle_publisher': {'callback_group', 'event_callbacks',
                                   'qos_overriding_options'},
    'create_subscription': {'callback_group', 'event_callbacks', 'qos_overriding_options',
                            'raw'},
    'create_service': {'qos_profile', 'callback_group'},
    'create_client': {'qos_profile', 'callback_group'},
    'declare_parameter': {'name', 'value', 'descriptor', 'ignore_override'},
    'declare_parameters': {'namespace', 'parameters', 'ignore_override'},
    'spin_once': {'timeout_sec'},
    'spin_until_future_complete': {'future', 'timeout_sec'},
    'wait_for_service': {'timeout_sec'},
    'wait_for_server': {'timeout_sec'},
}

# rclpy.init's keywords on Humble.
HUMBLE_INIT_KEYWORDS = {'args', 'context', 'domain_id', 'signal_handler_options'}

# Keyword arguments Humble requires (optional later).
HUMBLE_REQUIRED_KEYWORDS = {
    ('launch_ros.actions', 'LifecycleNode'): {'name', 'namespace'},
}

# Message members the package and its tests read -> their Python type on (Humble, Jazzy and
# Kilted). Read on the humble branches: rcl_interfaces 1.2's Log.msg declares DEBUG..FATAL as
# `byte` (rclpy: one-byte bytes; `uint8` from rcl_interfaces 2.0, Jazzy) and `uint8 level`;
# common_interfaces' DiagnosticStatus has a `byte` level and constants on every distribution;
# action_msgs' GoalStatus an `int8` status, rcl_interfaces' parameter types and lifecycle_msgs'
# Transition ids `uint8`. A member whose two types differ is read only through a function
# that takes both (FIELD_READERS), never compared as it comes.
_LOG_LEVELS = ('DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL')
MESSAGE_MEMBER_TYPES = {
    **{('rcl_interfaces.msg', 'Log', n): (bytes, int) for n in _LOG_LEVELS},
    ('rcl_interfaces.msg', 'Log', 'level'): (int, int),
    **{('diagnostic_msgs.msg', 'DiagnosticStatus', n): (bytes, bytes)
       for n in ('level', 'OK', 'WARN', 'ERROR', 'STALE')},
    **{('action_msgs.msg', 'GoalStatus', n): (int, int)
       for n in ('status', 'STATUS_SUCCEEDED', 'STATUS_ABORTED', 'STATUS_CANCELED')},
    **{('rcl_interfaces.msg', 'ParameterType', f'PARAMETER_{n}'): (int, int)
       for n in ('NOT_SET', 'BOOL', 'INTEGER', 'DOUBLE', 'STRING', 'INTEGER_ARRAY',
                 'DOUBLE_ARRAY', 'STRING_ARRAY')},
    ('rcl_interfaces.msg', 'ParameterValue', 'type'): (int, int),
    ('rcl_interfaces.msg', 'ParameterDescriptor', 'type'): (int, int),
    **{('lifecycle_msgs.msg', 'Transition', f'TRANSITION_{n}'): (int, int)
       for n in ('CONFIGURE', 'CLEANUP', 'ACTIVATE', 'DEACTIVATE', 'ACTIVE_SHUTDOWN')},
}

# Messages with a member whose type differs -> (their field read through a function, the
# function): /rosout's level goes through sequence_ai_ros.runtime.log_level.
FIELD_READERS = {
    ('rcl_interfaces.msg', 'Log'): ('level', 'log_level'),
}
