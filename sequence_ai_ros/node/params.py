"""
The policy node's parameters, each declared once: a field of NodeConfig.

A field's annotation is its type, and :func:`param` gives its default, description, range,
validators and whether it may change at run time (see param_spec). From this one table come
the ROS declarations, the checks at configure, the NodeConfig the node runs with and the
parameter documentation. The playback parameters take their checks and, but for
startup_timeout_s, their defaults from PlaybackOptions, which the node hands to the stream as
``config.playback``. Each default is the one a robot should get with no parameter file: the
files in config/ give only what is model- or arm-specific.

The API key is deliberately not a parameter (parameters are dumped by `ros2 param dump` and
written into bags): it comes from $SEQUENCES_API_KEY, the credentials file, or the file named
by `api_key_file`.
"""

from dataclasses import dataclass, fields
from typing import Any

from sequence_ai_ros.client import BLENDS, JOIN_MODES, PlaybackOptions, PROTOCOLS
from sequence_ai_ros.contract.action_spaces import JOINT_SPACES

from .arm_output import OUTPUT_MODES
from .config_rules import CAMERA_TRANSPORTS, CROSS_CHECKS, derive, GRIPPER_ON_FAILURE
from .gripper import GRIPPER_INTERFACES
from .param_spec import (
    ConfigError,
    declare,
    element_bounds,
    finite_elements,
    fixed_size,
    greater_than,
    not_empty,
    one_of,
    param,
    parameter_table,
    read_values,
    Spec,
    strip_slashes,
    subset_of,
    unique,
)

__all__ = ['ConfigError', 'NodeConfig', 'PARAMETERS', 'CONFIGURE_PARAMETERS',
           'declare_parameters', 'read_config']

_PLAYBACK = PlaybackOptions()


def _playback(option: str, description: str, bounds: tuple[float, float] | None = None,
              rule: str = '', default: Any = None) -> Any:
    """Declare a parameter that feeds PlaybackOptions.<option>: its check, its default."""
    # `default` only where the node needs another default than a Python caller of run().
    def playback(value: Any) -> str | None:
        try:
            PlaybackOptions(**{option: value})
        except ValueError as exc:  # PlaybackOptions says '<option> <why>'
            return str(exc)[len(option) + 1:]
        return None
    playback.rule = rule or f'PlaybackOptions.{option}'  # type: ignore[attr-defined]
    value = getattr(_PLAYBACK, option) if default is None else default
    return param(value, description, bounds=bounds, validators=(playback,), playback=option)


@dataclass(frozen=True)
class NodeConfig:
    """Every setting the node reads at configure time, one field per parameter."""

    model: str = param('', "catalogue model id, e.g. 'pi05-droid' (required)", required=True,
                       validators=(not_empty(", e.g. 'pi05-droid'"),))
    base_url: str = param('', "gateway URL; '' = $SEQUENCES_BASE_URL, else the hosted gateway")
    # auto: the service's current protocol where the gateway speaks it, else POST /v1/act
    protocol: str = param('auto', "'auto' (the direct protocol when the gateway serves it, "
                          "else /v1/act), 'direct' or 'v1'", validators=(one_of(PROTOCOLS),))
    action_space: str = param(
        '', "what the model's actions are ('joint_velocity', 'joint_position', ...); '' = what "
        'the deployment states (its catalogue entry or its answers). Required where it states '
        'none; a stated space that differs fails configure',
        validators=(one_of(('',) + JOINT_SPACES),))
    api_key_file: str = param('', "file holding the API key; '' = $SEQUENCES_API_KEY, else the "
                              'credentials file. The key itself is never a parameter')
    # 10: calls take ~1 s, a warming model answers at once; a mute gateway holds (retries+1) x it
    request_timeout_s: float = param(10.0, 'per-request HTTP timeout (s)', bounds=(0.1, 600.0))
    request_retries: int = _playback(
        'request_retries', 'transient request failures (lost connection, timeout, 5xx, malformed '
        'answer) retried in a row while the plan in hand plays; the next one ends the episode '
        'holding. 0 = the first ends it', (0, 100))
    retry_backoff_s: float = _playback(
        'retry_backoff_s', 'wait before the first retry (s), doubled for each retry after it',
        (0.0, 60.0))
    ca_file: str = param('', "PEM file of the CA that signs the gateway's TLS certificate (a "
                         "private gateway); '' = the system CAs. Verification cannot be turned "
                         'off')
    # 10: one launch starts driver, controllers and node together; waited only while missing
    configure_timeout_s: float = param(10.0, 'configure waits this long for joint_states to '
                                       'check the joint names, and for the catalogue',
                                       bounds=(0.1, 600.0))
    joint_names: tuple[str, ...] = param(
        (), "the model's joint order, as named in joint_states (required)", required=True,
        validators=(not_empty(': the joint names in model order'), unique))
    gripper_joint: str = param('', "joint_states name of the gripper (the action's last "
                               "value); '' = the model has no gripper value")
    camera_views: tuple[str, ...] = param(
        (), "model camera views, e.g. ['exterior_1', 'wrist'] (required)", required=True,
        validators=(not_empty(': the model camera views'),))
    camera_topics: tuple[str, ...] = param((), 'one image topic per camera view, same order')
    camera_transports: tuple[str, ...] = param(
        (), "'raw' (sensor_msgs/Image) or 'compressed' (CompressedImage) per camera view; [] "
        "or [''] = all raw", validators=(subset_of(CAMERA_TRANSPORTS),))
    image_size: tuple[int, int] = param(
        (224, 224), 'width, height the model reads; frames are letterboxed to it',
        validators=(fixed_size(2, '[width, height]'), element_bounds(8, 4096)))
    jpeg_quality: int = param(92, 'JPEG quality of re-encoded frames (below 85 the action '
                              'error grows by an order of magnitude)', bounds=(85, 100))
    instruction: str = param('', 'the task in words; may change at run time (also the '
                             'instruction topic)', run_time=True)
    control_rate_hz: float = param(0.0, "command rate (Hz); 0 = each chunk's own rate",
                                   bounds=(0.0, 1000.0))
    max_actions: int = param(0, 'actions per episode (required, > 0: there is no unbounded '
                             'mode)', bounds=(0, 10_000_000), required=True,
                             validators=(greater_than(0, 'is required and '),))
    start_on_activate: bool = param(True, 'start an episode when activated (else call '
                                    '~/start_episode)')
    prefetch: bool = _playback('prefetch', 'request the next chunk while this one plays')
    join_mode: str = _playback(
        'join_mode', "'append' (play each chunk whole), 'aligned' (step i at capture + i/hz; late "
        "steps dropped) or 'rtc' (real-time chunking: each request carries the steps that will "
        'play before its answer, which continues them)', rule=f'one of {list(JOIN_MODES)}')
    max_inflight: int = _playback('max_inflight', 'requests in flight at most, used only when '
                                  'latency needs them', (1, 8))
    smooth_seam: int = _playback('smooth_seam', 'ramp this many steps of each new chunk out of '
                                 'the last command (absolute action spaces only)', (0, 1000))
    seam_blend: str = _playback('seam_blend', "'linear' or 'min_jerk' ramp for smooth_seam",
                                rule=f'one of {list(BLENDS)}')
    # 180: the first episode outlasts a hosted cold start (~100 s) instead of failing at once
    startup_timeout_s: float = _playback('startup_timeout_s', 'wait this long for a warming '
                                         'model before the first action', (0.0, 3600.0),
                                         default=180.0)
    position_lower: tuple[float, ...] = param(
        (0.0,), 'lower position limit per joint (rad), joint_names order, then the gripper if '
        'any (required)', name='position_limits.lower', required=True,
        validators=(finite_elements,))
    position_upper: tuple[float, ...] = param(
        (0.0,), 'upper position limit per joint, same order (required)', required=True,
        name='position_limits.upper', validators=(finite_elements,))
    max_step_change: float = param(0.2, 'largest change of any commanded position in one '
                                   'control step (rad); larger ends the episode holding',
                                   bounds=(1e-6, 10.0))
    max_gripper_step_change: float = param(
        1.0, 'largest change of the gripper command in one step (its range is 0..1, and most '
        'grippers open or close at once)', bounds=(1e-6, 10.0))
    joint_state_timeout_s: float = param(0.5, 'joint_states older than this hold the arm',
                                         bounds=(0.001, 60.0))
    camera_timeout_s: float = param(1.0, 'a camera frame older than this holds the arm',
                                    bounds=(0.001, 60.0))
    safety_gate_topic: str = param('', "std_msgs/Bool topic that must say true to move; '' = "
                                   'no gate')
    safety_gate_timeout_s: float = param(0.5, 'a gate message older than this counts as '
                                         'closed', bounds=(0.001, 60.0))
    hold_service: str = param('', 'std_srvs/Trigger service called on every hold (e.g. the '
                              "driver's); '' = none")
    hold_service_timeout_s: float = param(1.0, 'how long a hold call may take before it is '
                                          'reported', bounds=(0.01, 60.0))
    diagnostics_period_s: float = param(1.0, 'period of /diagnostics', bounds=(0.05, 60.0))
    hardware_id: str = param('', "hardware_id on /diagnostics; '' = the node's full name")
    # trajectory_plan: the smoothest against a stock JTC; a late tick does not stall the arm
    output_mode: str = param(
        'trajectory_plan', "how commands reach the arm's controller: 'trajectory_stream' "
        '(one positions-only JointTrajectory point per step on <controller_name>/'
        "joint_trajectory), 'trajectory_plan' (the next plan_ahead_s of the plan each step, "
        "ending at rest), 'forward_position' or 'forward_velocity' (Float64MultiArray on "
        '<controller_name>/commands)', validators=(one_of(OUTPUT_MODES),))
    controller_name: str = param(
        'joint_trajectory_controller', "the arm's ros2_control controller: its topic and "
        'get_parameters service are relative to this name', convert=strip_slashes,
        validators=(not_empty(": the arm's controller"),))
    plan_ahead_s: float = param(0.25, 'trajectory_plan: seconds of the checked plan sent '
                                'ahead, the most the controller moves the arm without a new '
                                'message', bounds=(0.0, 10.0))
    forward_output_rate_hz: float = param(
        500.0, 'forward_position: publish each step as a straight line from the last value, '
        'one value per 1/rate s, reaching it one control period after it is sent (never past '
        'it); 0 = each step at once, which a forward controller writes in one update (a '
        'controller_manager that enforces limits clamps it)', bounds=(0.0, 1000.0))
    check_controller: bool = param(True, 'ask the controller for its joints and settings at '
                                   'configure; a mismatch fails configure, no answer is a '
                                   'warning')
    velocity_limits: tuple[float, ...] = param(
        (0.0,), 'forward_velocity: largest |velocity| per arm joint (rad/s), joint_names order '
        '(required there)')
    max_acceleration: float = param(0.0, 'forward_velocity: largest change of any commanded '
                                    'velocity per second (rad/s^2, required there)',
                                    bounds=(0.0, 1e6))
    # action: a real arm's gripper is its own action server; a stock JTC refuses its joint
    gripper_interface: str = param(
        'action', "'with_arm' (a joint of the arm's command), 'action' (control_msgs "
        'GripperCommand or ParallelGripperCommand, whichever the server serves), '
        "'trajectory' (a one-joint JointTrajectory) or 'forward_position' "
        '(Float64MultiArray) on gripper_controller',
        validators=(one_of(GRIPPER_INTERFACES),))
    gripper_controller: str = param('gripper_action_controller', "the gripper's controller: "
                                    '<name>/gripper_cmd, <name>/joint_trajectory or '
                                    '<name>/commands', convert=strip_slashes)
    gripper_action_name: str = param('', "the gripper action's name; '' = "
                                     "<gripper_controller>/gripper_cmd (franka_gripper: '"
                                     "'franka_gripper/gripper_action')", convert=strip_slashes)
    gripper_open_position: float = param(0.0, "the gripper joint's position (joint_states "
                                         "units) for the model's 0 = open, e.g. 0.04 for a "
                                         'Panda finger')
    gripper_closed_position: float = param(1.0, "the gripper joint's position for the model's "
                                           '1 = closed, e.g. 0.0 for a Panda finger, 0.8 for '
                                           'a Robotiq 2F-85')
    gripper_max_effort: float = param(20.0, 'GripperCommand max_effort, ParallelGripperCommand '
                                      "effort (N; 0 = the gripper's own)",
                                      bounds=(0.0, 10000.0))
    gripper_threshold: float = param(-1.0, 'model values at or above this close the gripper, '
                                     'below open (DROID policies are trained binary: 0.5); < 0 '
                                     '= continuous', bounds=(-1.0, 1.0))
    gripper_min_change: float = param(0.05, 'a new gripper goal is sent when the target moves '
                                      'at least this much (model units 0..1)',
                                      bounds=(0.0, 1.0))
    gripper_on_failure: str = param(
        'hold', "a rejected or aborted gripper goal: 'hold' ends the episode holding, "
        "'continue' goes on (an error on /diagnostics either way)",
        validators=(one_of(GRIPPER_ON_FAILURE),))
    record: bool = param(True, 'record each episode to an MCAP file in record_dir (what was '
                         'sent, answered and commanded; ros2 bag and Foxglove open it); it '
                         'stays off, saying why, where it cannot write')
    record_dir: str = param('', "directory of the episode files; '' = "
                            '$ROS_HOME/sequence_ai/episodes (~/.ros/sequence_ai/episodes)')
    label_notes: str = param('', 'the notes ~/label_episode gives the last episode with its '
                             'success flag (std_srvs/SetBool carries no text)', run_time=True)
    record_max_mb: float = param(2048.0, 'total size of record_dir kept (MB): the oldest '
                                 'episodes are removed first', bounds=(1.0, 1e7))

    @property
    def playback(self) -> PlaybackOptions:
        """Return how the stream plays chunks, from the playback parameters."""
        return PlaybackOptions(**{spec.playback: getattr(self, spec.field)
                                  for spec in PARAMETERS.values() if spec.playback})


PARAMETERS: dict[str, Spec] = parameter_table(NodeConfig)
CONFIGURE_PARAMETERS = frozenset(name for name, spec in PARAMETERS.items() if not spec.run_time)
if {f.name for f in fields(NodeConfig)} != {spec.field for spec in PARAMETERS.values()}:
    raise TypeError('every NodeConfig field must be declared with param()')


def declare_parameters(node: Any) -> dict[str, str]:
    """
    Declare every parameter once (in the constructor, in every lifecycle state).

    Returns name -> what is wrong with its value in the parameter file (declared with its
    default instead): give it to :func:`read_config`, which refuses to configure until it is
    set again.
    """
    return declare(node, PARAMETERS)


def read_config(node: Any, problems: dict[str, str] | None = None) -> NodeConfig:
    """
    Read and check every parameter; ConfigError names the first that is wrong.

    `problems` are those :func:`declare_parameters` found in the parameter file and nobody has
    set since; all of them are reported at once, so that one round of fixes is enough.
    """
    if problems:
        raise ConfigError('; '.join(problems[name] for name in sorted(problems)))
    config = derive(NodeConfig(**read_values(node, PARAMETERS)),
                    node.get_fully_qualified_name())
    for check in CROSS_CHECKS:
        found = check(config)
        if found:
            raise ConfigError(f'parameter {found[0]}: {found[1]}')
    return config
