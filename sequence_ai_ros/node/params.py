"""
The policy node's parameters: declared once, typed, ranged, described, and checked together.

The API key is deliberately not a parameter (parameters are dumped by `ros2 param dump` and
written into bags): it comes from $SEQUENCES_API_KEY, the credentials file, or the file named
by `api_key_file`.
"""

from dataclasses import dataclass
import math
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from sequence_ai_ros.client.engine import BLENDS as SEAM_BLENDS
from sequence_ai_ros.client.engine import JOIN_MODES

from .arm_output import FORWARD_VELOCITY, OUTPUT_MODES
from .gripper import GRIPPER_INTERFACES

GRIPPER_ON_FAILURE = ('hold', 'continue')
CAMERA_TRANSPORTS = ('raw', 'compressed')
# Humble turns an empty-list default into a byte array; a placeholder keeps the type STRING_ARRAY.
_UNSET = ['']


class ConfigError(ValueError):
    """A parameter value the node cannot run with; the message names the parameter."""


@dataclass(frozen=True)
class NodeConfig:
    """Every setting the node reads at configure time."""

    model: str
    base_url: str
    api_key_file: str
    request_timeout_s: float
    request_retries: int
    retry_backoff_s: float
    ca_file: str
    configure_timeout_s: float
    joint_names: tuple[str, ...]
    gripper_joint: str
    camera_views: tuple[str, ...]
    camera_topics: tuple[str, ...]
    camera_transports: tuple[str, ...]
    image_size: tuple[int, int]
    jpeg_quality: int
    instruction: str
    control_rate_hz: float
    max_actions: int
    start_on_activate: bool
    prefetch: bool
    join_mode: str
    max_inflight: int
    smooth_seam: int
    seam_blend: str
    startup_timeout_s: float
    position_lower: tuple[float, ...]
    position_upper: tuple[float, ...]
    max_step_change: float
    max_gripper_step_change: float
    joint_state_timeout_s: float
    camera_timeout_s: float
    safety_gate_topic: str
    safety_gate_timeout_s: float
    hold_service: str
    hold_service_timeout_s: float
    diagnostics_period_s: float
    hardware_id: str
    output_mode: str
    controller_name: str
    plan_ahead_s: float
    check_controller: bool
    velocity_limits: tuple[float, ...]
    max_acceleration: float
    gripper_interface: str
    gripper_controller: str
    gripper_action_name: str
    gripper_open_position: float
    gripper_closed_position: float
    gripper_max_effort: float
    gripper_threshold: float
    gripper_min_change: float
    gripper_on_failure: str


def _floats(low: float, high: float) -> dict[str, Any]:
    return {'floating_point_range': [FloatingPointRange(from_value=low, to_value=high)]}


def _ints(low: int, high: int) -> dict[str, Any]:
    return {'integer_range': [IntegerRange(from_value=low, to_value=high, step=1)]}


# name -> (default, description, at_configure, ranges). at_configure ones are read by configure
# and may change only while the node is unconfigured (the node enforces it, see
# CONFIGURE_PARAMETERS); a read_only descriptor would refuse even that, leaving a node started
# with a bad value no way to be fixed short of a restart.
PARAMETERS: dict[str, tuple[Any, str, bool, dict[str, Any]]] = {
    'model': ('', "catalogue model id, e.g. 'pi05-droid' (required)", True, {}),
    'base_url': ('', "gateway URL; '' = $SEQUENCES_BASE_URL, else the hosted gateway", True, {}),
    'api_key_file': ('', "file holding the API key; '' = $SEQUENCES_API_KEY, else the "
                     'credentials file. The key itself is never a parameter', True, {}),
    'request_timeout_s': (30.0, 'per-request HTTP timeout (s)', True, _floats(0.1, 600.0)),
    'request_retries': (2, 'transient request failures (lost connection, timeout, 5xx, malformed '
                        'answer) retried in a row while the plan in hand plays; the next one '
                        'ends the episode holding. 0 = the first ends it', True, _ints(0, 100)),
    'retry_backoff_s': (0.25, 'wait before the first retry (s), doubled for each retry after it',
                        True, _floats(0.0, 60.0)),
    'ca_file': ('', "PEM file of the CA that signs the gateway's TLS certificate (a private "
                "gateway); '' = the system CAs. Verification cannot be turned off", True, {}),
    'configure_timeout_s': (5.0, 'configure waits this long for joint_states to check the joint '
                            'names, and for the catalogue', True, _floats(0.1, 600.0)),
    'joint_names': (_UNSET, "the model's joint order, as named in joint_states (required)",
                    True, {}),
    'gripper_joint': ('', "joint_states name of the gripper (the action's last value); '' = "
                      'the model has no gripper value', True, {}),
    'camera_views': (_UNSET, "model camera views, e.g. ['exterior_1', 'wrist'] (required)",
                     True, {}),
    'camera_topics': (_UNSET, 'one image topic per camera view, same order', True, {}),
    'camera_transports': (_UNSET, "'raw' (sensor_msgs/Image) or 'compressed' (CompressedImage) "
                          "per camera view; [] or [''] = all raw", True, {}),
    'image_size': ([224, 224], 'width, height the model reads; frames are letterboxed to it',
                   True, {}),
    'jpeg_quality': (92, 'JPEG quality of re-encoded frames (below 85 the action error grows '
                     'by an order of magnitude)', True, _ints(85, 100)),
    'instruction': ('', 'the task in words; may change at run time (also the instruction topic)',
                    False, {}),
    'control_rate_hz': (0.0, "command rate (Hz); 0 = each chunk's own rate", True,
                        _floats(0.0, 1000.0)),
    'max_actions': (0, 'actions per episode (required, > 0: there is no unbounded mode)', True,
                    _ints(0, 10_000_000)),
    'start_on_activate': (True, 'start an episode when activated (else call ~/start_episode)',
                          True, {}),
    'prefetch': (True, 'request the next chunk while this one plays', True, {}),
    'join_mode': ('append', "'append' (play each chunk whole), 'aligned' (step i at capture "
                  "+ i/hz; late steps dropped) or 'rtc' (real-time chunking: each request "
                  'carries the steps that will play before its answer, which continues them)',
                  True, {}),
    'max_inflight': (2, 'requests in flight at most, used only when latency needs them', True,
                     _ints(1, 8)),
    'smooth_seam': (0, 'ramp this many steps of each new chunk out of the last command '
                    '(absolute action spaces only)', True, _ints(0, 1000)),
    'seam_blend': ('min_jerk', "'linear' or 'min_jerk' ramp for smooth_seam", True, {}),
    'startup_timeout_s': (0.0, 'wait this long for a warming model before the first action',
                          True, _floats(0.0, 3600.0)),
    'position_limits.lower': ([0.0], 'lower position limit per joint (rad), '
                              'joint_names order, then the gripper if any (required)', True, {}),
    'position_limits.upper': ([0.0], 'upper position limit per joint, same order (required)',
                              True, {}),
    'max_step_change': (0.2, 'largest change of any commanded position in one control step '
                        '(rad); larger ends the episode holding', True, _floats(1e-6, 10.0)),
    'max_gripper_step_change': (1.0, 'largest change of the gripper command in one step '
                                '(its range is 0..1, and most grippers open or close at once)',
                                True, _floats(1e-6, 10.0)),
    'joint_state_timeout_s': (0.5, 'joint_states older than this hold the arm', True,
                              _floats(0.001, 60.0)),
    'camera_timeout_s': (1.0, 'a camera frame older than this holds the arm', True,
                         _floats(0.001, 60.0)),
    'safety_gate_topic': ('', "std_msgs/Bool topic that must say true to move; '' = no gate",
                          True, {}),
    'safety_gate_timeout_s': (0.5, 'a gate message older than this counts as closed', True,
                              _floats(0.001, 60.0)),
    'hold_service': ('', "std_srvs/Trigger service called on every hold (e.g. the driver's); "
                     "'' = none", True, {}),
    'hold_service_timeout_s': (1.0, 'how long a hold call may take before it is reported',
                               True, _floats(0.01, 60.0)),
    'diagnostics_period_s': (1.0, 'period of /diagnostics', True, _floats(0.05, 60.0)),
    'hardware_id': ('', "hardware_id on /diagnostics; '' = the node's full name", True, {}),
    'output_mode': ('trajectory_stream', "how commands reach the arm's controller: "
                    "'trajectory_stream' (one positions-only JointTrajectory point per step on "
                    "<controller_name>/joint_trajectory), 'trajectory_plan' (the next "
                    'plan_ahead_s of the plan each step, ending at rest), '
                    "'forward_position' or 'forward_velocity' (Float64MultiArray on "
                    '<controller_name>/commands)', True, {}),
    'controller_name': ('joint_trajectory_controller', "the arm's ros2_control controller: "
                        'its topic and get_parameters service are relative to this name', True,
                        {}),
    'plan_ahead_s': (0.25, 'trajectory_plan: seconds of the checked plan sent ahead, the most '
                     'the controller moves the arm without a new message', True,
                     _floats(0.0, 10.0)),
    'check_controller': (True, 'ask the controller for its joints and settings at configure; a '
                         'mismatch fails configure, no answer is a warning', True, {}),
    'velocity_limits': ([0.0], 'forward_velocity: largest |velocity| per arm joint (rad/s), '
                        'joint_names order (required there)', True, {}),
    'max_acceleration': (0.0, 'forward_velocity: largest change of any commanded velocity per '
                         'second (rad/s^2, required there)', True, _floats(0.0, 1e6)),
    'gripper_interface': ('with_arm', "'with_arm' (a joint of the arm's command), 'action' "
                          '(control_msgs/GripperCommand), '
                          "'trajectory' (a one-joint JointTrajectory) or 'forward_position' "
                          '(Float64MultiArray) on gripper_controller', True, {}),
    'gripper_controller': ('gripper_action_controller', "the gripper's controller: "
                           '<name>/gripper_cmd, <name>/joint_trajectory or <name>/commands',
                           True, {}),
    'gripper_action_name': ('', "GripperCommand action name; '' = <gripper_controller>/"
                            "gripper_cmd (franka_gripper: 'franka_gripper/gripper_action')",
                            True, {}),
    'gripper_open_position': (0.0, "the gripper joint's position (joint_states units) for the "
                              "model's 0 = open, e.g. 0.04 for a Panda finger", True, {}),
    'gripper_closed_position': (1.0, "the gripper joint's position for the model's 1 = closed, "
                                'e.g. 0.0 for a Panda finger, 0.8 for a Robotiq 2F-85', True,
                                {}),
    'gripper_max_effort': (20.0, 'GripperCommand max_effort (N; 0 = the gripper decides)', True,
                           _floats(0.0, 10000.0)),
    'gripper_threshold': (-1.0, 'model values at or above this close the gripper, below open '
                          '(DROID policies are trained binary: 0.5); < 0 = continuous', True,
                          _floats(-1.0, 1.0)),
    'gripper_min_change': (0.05, 'a new gripper goal is sent when the target moves at least '
                           'this much (model units 0..1)', True, _floats(0.0, 1.0)),
    'gripper_on_failure': ('hold', "a rejected or aborted gripper goal: 'hold' ends the "
                           "episode holding, 'continue' goes on (an error on /diagnostics "
                           'either way)', True, {}),
}


CONFIGURE_PARAMETERS = frozenset(name for name, spec in PARAMETERS.items() if spec[2])
_AT_CONFIGURE = 'read at configure: change it while the node is unconfigured'


def declare_parameters(node: Node) -> dict[str, str]:
    """
    Declare every parameter once (in the constructor, in every lifecycle state).

    A value from a parameter file of the wrong type or out of range would make rclpy raise
    here and kill the process before it could say which lifecycle step failed. Such a
    parameter is declared with its default instead, and returned as name -> what is wrong:
    give it to :func:`read_config`, which refuses to configure until it is set again.
    """
    problems: dict[str, str] = {}
    for name, (default, _, _, _) in PARAMETERS.items():
        try:
            node.declare_parameter(name, default, _descriptor(name))
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            problems[name] = f'parameter {name}: {exc}'
            node.declare_parameter(name, default, _descriptor(name), ignore_override=True)
    return problems


def _descriptor(name: str) -> ParameterDescriptor:
    # A fresh one per declaration: rclpy writes the name and type into the one it is given.
    _, text, at_configure, ranges = PARAMETERS[name]
    return ParameterDescriptor(description=text,
                               additional_constraints=_AT_CONFIGURE if at_configure else '',
                               **ranges)


def _strings(values: Any) -> tuple[str, ...]:
    return tuple(v for v in values if v)


def read_config(node: Node, problems: dict[str, str] | None = None) -> NodeConfig:
    """
    Read and check every parameter; ConfigError names the first that is wrong.

    `problems` are those :func:`declare_parameters` found in the parameter file and nobody has
    set since; all of them are reported at once, so that one round of fixes is enough.
    """
    if problems:
        raise ConfigError('; '.join(problems[name] for name in sorted(problems)))
    get = {name: node.get_parameter(name).value for name in PARAMETERS}
    joints = _strings(get['joint_names'])
    views = _strings(get['camera_views'])
    topics = _strings(get['camera_topics'])
    transports = _strings(get['camera_transports']) or ('raw',) * len(views)
    size = tuple(int(v) for v in get['image_size'])
    gripper = get['gripper_joint']
    dims = len(joints) + (1 if gripper else 0)

    def require(ok: bool, name: str, why: str) -> None:
        if not ok:
            raise ConfigError(f'parameter {name}: {why}')

    require(bool(get['model']), 'model', "is required, e.g. 'pi05-droid'")
    require(bool(joints), 'joint_names', 'is required: the joint names in model order')
    require(len(set(joints)) == len(joints), 'joint_names', 'has a duplicate name')
    require(gripper not in joints, 'gripper_joint', 'is also listed in joint_names')
    require(bool(views), 'camera_views', 'is required: the model camera views')
    require(len(topics) == len(views), 'camera_topics',
            f'needs one topic per camera view ({len(views)}), got {len(topics)}')
    require(len(transports) == len(views), 'camera_transports',
            f'needs one entry per camera view ({len(views)}), got {len(transports)}')
    require(all(t in CAMERA_TRANSPORTS for t in transports), 'camera_transports',
            f'entries must be one of {CAMERA_TRANSPORTS}')
    require(len(size) == 2 and all(8 <= v <= 4096 for v in size), 'image_size',
            'needs [width, height], each 8..4096')
    require(get['max_actions'] > 0, 'max_actions', 'is required and must be > 0')
    require(get['join_mode'] in JOIN_MODES, 'join_mode', f'must be one of {JOIN_MODES}')
    require(get['seam_blend'] in SEAM_BLENDS, 'seam_blend', f'must be one of {SEAM_BLENDS}')
    lower = tuple(float(v) for v in get['position_limits.lower'])
    upper = tuple(float(v) for v in get['position_limits.upper'])
    for name, limits in (('position_limits.lower', lower), ('position_limits.upper', upper)):
        require(len(limits) == dims, name,
                f'needs {dims} values (joint_names then the gripper), got {len(limits)}')
        require(all(math.isfinite(v) for v in limits), name, 'must be finite')
    require(all(lo < hi for lo, hi in zip(lower, upper)), 'position_limits',
            'each lower limit must be below its upper limit')
    mode, grip = get['output_mode'], get['gripper_interface']
    require(mode in OUTPUT_MODES, 'output_mode', f'must be one of {OUTPUT_MODES}')
    require(grip in GRIPPER_INTERFACES, 'gripper_interface',
            f'must be one of {GRIPPER_INTERFACES}')
    require(get['gripper_on_failure'] in GRIPPER_ON_FAILURE, 'gripper_on_failure',
            f'must be one of {GRIPPER_ON_FAILURE}')
    require(get['gripper_open_position'] != get['gripper_closed_position'],
            'gripper_closed_position', 'must differ from gripper_open_position')
    require(bool(get['controller_name'].strip('/')), 'controller_name', 'must not be empty')
    require(not (grip == 'with_arm' and mode == FORWARD_VELOCITY and gripper),
            'gripper_interface', "'with_arm' cannot put the gripper's position among velocity "
            'commands: give the gripper its own interface')
    velocity_limits = tuple(float(v) for v in get['velocity_limits'])
    if mode == FORWARD_VELOCITY:
        require(len(velocity_limits) == len(joints) and
                all(math.isfinite(v) and v > 0 for v in velocity_limits), 'velocity_limits',
                f'needs {len(joints)} positive values (rad/s) for forward_velocity')
        require(get['max_acceleration'] > 0, 'max_acceleration',
                'is required (> 0, rad/s^2) for forward_velocity')
    return NodeConfig(
        model=get['model'], base_url=get['base_url'], api_key_file=get['api_key_file'],
        request_timeout_s=get['request_timeout_s'], request_retries=get['request_retries'],
        retry_backoff_s=get['retry_backoff_s'], ca_file=get['ca_file'],
        configure_timeout_s=get['configure_timeout_s'], joint_names=joints, gripper_joint=gripper,
        camera_views=views, camera_topics=topics, camera_transports=transports,
        image_size=(size[0], size[1]), jpeg_quality=get['jpeg_quality'],
        instruction=get['instruction'], control_rate_hz=get['control_rate_hz'],
        max_actions=get['max_actions'], start_on_activate=get['start_on_activate'],
        prefetch=get['prefetch'], join_mode=get['join_mode'], max_inflight=get['max_inflight'],
        smooth_seam=get['smooth_seam'], seam_blend=get['seam_blend'],
        startup_timeout_s=get['startup_timeout_s'], position_lower=lower,
        position_upper=upper, max_step_change=get['max_step_change'],
        max_gripper_step_change=get['max_gripper_step_change'],
        joint_state_timeout_s=get['joint_state_timeout_s'],
        camera_timeout_s=get['camera_timeout_s'], safety_gate_topic=get['safety_gate_topic'],
        safety_gate_timeout_s=get['safety_gate_timeout_s'], hold_service=get['hold_service'],
        hold_service_timeout_s=get['hold_service_timeout_s'],
        diagnostics_period_s=get['diagnostics_period_s'],
        hardware_id=get['hardware_id'] or node.get_fully_qualified_name(),
        output_mode=mode, controller_name=get['controller_name'].strip('/'),
        plan_ahead_s=get['plan_ahead_s'], check_controller=get['check_controller'],
        velocity_limits=velocity_limits, max_acceleration=get['max_acceleration'],
        gripper_interface=grip, gripper_controller=get['gripper_controller'].strip('/'),
        gripper_action_name=get['gripper_action_name'].strip('/'),
        gripper_open_position=get['gripper_open_position'],
        gripper_closed_position=get['gripper_closed_position'],
        gripper_max_effort=get['gripper_max_effort'],
        gripper_threshold=get['gripper_threshold'],
        gripper_min_change=get['gripper_min_change'],
        gripper_on_failure=get['gripper_on_failure'])
