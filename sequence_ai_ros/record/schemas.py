"""
What an episode file holds: its topics, their ROS 2 types and the types' definitions.

Every topic is under /sequence_ai/, never a controller's own topic: `ros2 bag play` of an
episode must not drive an arm. The definitions are the standard messages' fields without
comments (the `ros2msg` schema encoding, dependencies after `MSG:` lines), so a reader needs no
ROS installation: Foxglove and the mcap readers decode from them, rosbag2 plays by type name.
"""

NAMESPACE = '/sequence_ai'
# Each request's observation as sent: the frames exactly as encoded, one topic per view...
IMAGE_TOPIC = NAMESPACE + '/observation/image/{view}'
# ... and the rest of it (proprioception, instruction, send time) as JSON.
OBSERVATION = NAMESPACE + '/observation'
ANSWER = NAMESPACE + '/answer'      # each answer: chunk, round trip, server timing, RTC report
JOIN = NAMESPACE + '/join'          # each chunk joined into the plan: mode, delay, seam, RTC
ERROR = NAMESPACE + '/error'        # each failed request, the key redacted
ARM_COMMAND = NAMESPACE + '/command/arm'          # the exact arm message published
GRIPPER_COMMAND = NAMESPACE + '/command/gripper'  # the exact gripper message published
ACTION = NAMESPACE + '/command/action'  # plain Python: the action passed to act()
HOLD = NAMESPACE + '/hold'          # every hold and its reason
JOINT_STATES = NAMESPACE + '/joint_states'        # as received
OUTCOME = NAMESPACE + '/outcome'    # how the episode ended, with its figures
METADATA_NAME = 'sequence_ai'       # the MCAP metadata record: parameters, package version

STRING = 'std_msgs/msg/String'
COMPRESSED_IMAGE = 'sensor_msgs/msg/CompressedImage'
JOINT_STATE = 'sensor_msgs/msg/JointState'
JOINT_TRAJECTORY = 'trajectory_msgs/msg/JointTrajectory'
FLOAT64_ARRAY = 'std_msgs/msg/Float64MultiArray'

_HEADER = """MSG: std_msgs/Header
builtin_interfaces/Time stamp
string frame_id
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec"""

_SEPARATOR = '\n' + '=' * 80 + '\n'

DEFINITIONS = {
    STRING: 'string data',
    COMPRESSED_IMAGE: 'std_msgs/Header header\nstring format\nuint8[] data'
                      + _SEPARATOR + _HEADER,
    JOINT_STATE: 'std_msgs/Header header\nstring[] name\nfloat64[] position\n'
                 'float64[] velocity\nfloat64[] effort' + _SEPARATOR + _HEADER,
    JOINT_TRAJECTORY: 'std_msgs/Header header\nstring[] joint_names\n'
                      'JointTrajectoryPoint[] points' + _SEPARATOR + _HEADER + _SEPARATOR
                      + 'MSG: trajectory_msgs/JointTrajectoryPoint\nfloat64[] positions\n'
                      'float64[] velocities\nfloat64[] accelerations\nfloat64[] effort\n'
                      'builtin_interfaces/Duration time_from_start' + _SEPARATOR
                      + 'MSG: builtin_interfaces/Duration\nint32 sec\nuint32 nanosec',
    FLOAT64_ARRAY: 'MultiArrayLayout layout\nfloat64[] data' + _SEPARATOR
                   + 'MSG: std_msgs/MultiArrayLayout\nMultiArrayDimension[] dim\n'
                   'uint32 data_offset' + _SEPARATOR + 'MSG: std_msgs/MultiArrayDimension\n'
                   'string label\nuint32 size\nuint32 stride',
}


def image_topic(view: str) -> str:
    """Return the topic of one camera view's frames (a view name as a topic name token)."""
    token = ''.join(c if c.isalnum() or c == '_' else '_' for c in view) or 'view'
    return IMAGE_TOPIC.format(view=token if not token[0].isdigit() else f'v{token}')
