"""
Episode recordings made for the dataset tests, as the node and run(record=) write them.

Written through the recorder itself (EpisodeRecorder on its writer thread, a clock of the
test's own) so that every stamp is known: each command's time, each camera frame's stamp, the
joint states'. The pictures are the simulated arm's camera, rendered and encoded as the node
sends them, a different pose for each request. Runs on the project's venv (test/unit imports
it; test/dataset runs it as `python recordings.py OUT_DIR` and reads the JSON it prints).
"""

import base64
from dataclasses import dataclass, field
import io
import json
from pathlib import Path
import sys

TEST_DIR = Path(__file__).resolve().parents[1]
if str(TEST_DIR) not in sys.path:
    sys.path.insert(0, str(TEST_DIR))

from observations import frame_b64  # noqa: E402
from sequence_ai_ros.client import ImageFrame, Observation, Proprioception  # noqa: E402
from sequence_ai_ros.record import cdr  # noqa: E402
from sequence_ai_ros.record.episode import EpisodeRecorder  # noqa: E402
from sequence_ai_ros.record.metadata import episode_metadata  # noqa: E402
from sequence_ai_ros.record.schemas import (  # noqa: E402
    ARM_COMMAND,
    GRIPPER_COMMAND,
    JOINT_STATE,
    JOINT_STATES,
    JOINT_TRAJECTORY,
)
from sequence_ai_ros.world import arm_model  # noqa: E402

ARM = [f'panda_joint{i}' for i in range(1, 8)]
FINGERS = ['panda_finger_joint1']
VIEWS = ('exterior_1', 'wrist')
START_NS = 1_800_000_000_000_000_000
NS = 1_000_000_000
OPEN = 0.04  # the finger's open position; closed is 0 (the model's 0 and 1)
CLOSE_AT = 20  # the node episodes close the gripper from this command on
STATE_OFFSET_NS = 7_000_000  # joint states at 100 Hz, from 7 ms before the first tick


@dataclass
class Written:
    """What a recording holds, as the test wrote it (times in seconds since the epoch)."""

    path: str
    rate_hz: float
    command_times: list[float] = field(default_factory=list)
    actions: list[list[float]] = field(default_factory=list)
    holds: int = 0
    image_stamps: list[float] = field(default_factory=list)   # one per request, every view
    image_steps: list[int] = field(default_factory=list)  # the pose each request's pictures show
    instruction: str = ''


def pose(step: int) -> list[float]:
    """Return the arm's joints at a command: HOME moving slowly, so each picture differs."""
    return [q + 0.02 * step * (1 + j % 3) for j, q in enumerate(arm_model.HOME)]


class _Clock:
    """The recorder's clock, set by the test."""

    def __init__(self, start_ns: int) -> None:
        self.now = start_ns

    def __call__(self) -> int:
        return self.now


def client_episode(path: Path, *, commands: int = 30, rate_hz: float = 15.0,
                   per_request: int = 10, instruction: str = 'reach the red disc',
                   start_ns: int = START_NS, late_request: int | None = None,
                   outcome: str = 'completed') -> Written:
    """
    Write a run(record=...) episode: an observation every `per_request` commands, actions.

    The request numbered `late_request` (0-based) is not sent: its commands see the previous
    request's picture, twice as old as the rest.
    """
    clock = _Clock(start_ns)
    recorder = EpisodeRecorder.create(path, episode_metadata(
        {}, source='sequence_ai_ros.client run()', model='accounts/x/models/pi05-droid'))
    recorder._clock = clock
    written = Written(str(path), rate_hz, instruction=instruction)
    period_ns = int(NS / rate_hz)
    for step in range(commands):
        clock.now = start_ns + step * period_ns
        if step % per_request == 0 and step // per_request != late_request:
            recorder.observation(_observation(pose(step), instruction, clock.now))
            written.image_stamps.append(clock.now / NS)
            written.image_steps.append(step)
            if step == 0:
                recorder.json('/sequence_ai/answer', {
                    'request': 1, 'model': 'accounts/x/models/pi05-droid', 'steps': 15,
                    'control_frequency_hz': rate_hz, 'action_space': 'joint_position',
                    'action_dim': 8})
        clock.now += period_ns // 2  # the command goes half a tick after the picture
        action = pose(step) + [0.0]
        recorder.action(action)
        written.command_times.append(clock.now / NS)
        written.actions.append(action)
    clock.now += period_ns
    recorder.outcome({'outcome': outcome, 'reason': outcome, 'actions': commands,
                      'underruns': 0, 'chunks': commands // 15})
    assert recorder.close(10.0) and recorder.dropped == 0
    return written


def node_episode(path: Path, *, commands: int = 30, rate_hz: float = 15.0,
                 per_request: int = 10, hold_after: int | None = None,
                 instruction: str = 'put the cup away', start_ns: int = START_NS,
                 images_out_of_order: bool = False) -> Written:
    """
    Write a policy node episode: /joint_states at 100 Hz, arm messages, gripper goals, holds.

    `hold_after`: a hold (zero velocities) after that many commands, for two ticks. With
    `images_out_of_order` each request's frames are recorded after the next commands (the
    writer's order), stamped when they were taken.
    """
    clock = _Clock(start_ns)
    recorder = EpisodeRecorder.create(path, episode_metadata(
        {'joint_names': ARM, 'model': 'pi05_droid', 'gripper_open_position': OPEN,
         'gripper_closed_position': 0.0}, source='policy_node',
        model='accounts/x/models/pi05-droid'))
    recorder._clock = clock
    written = Written(str(path), rate_hz, instruction=instruction)
    period_ns = int(NS / rate_hz)
    trajectory = cdr.encoder(JOINT_TRAJECTORY)
    pending: list[tuple[int, list[float]]] = []
    step, tick, end_ns = 0, 0, start_ns + int((commands + 3) * period_ns)
    # Joint states stamped 3 ms off the 10 ms grid: never within float rounding of a command.
    state_ns = start_ns - STATE_OFFSET_NS
    while step < commands:
        clock.now = start_ns + tick * period_ns
        while state_ns <= clock.now:  # joint states up to now, stamped when measured
            q = pose((state_ns - start_ns) / period_ns)
            recorder.writer.put(JOINT_STATES, JOINT_STATE,
                                cdr.joint_state(state_ns, ARM + FINGERS, q + [OPEN]), state_ns)
            state_ns += NS // 100
        if step % per_request == 0 and not pending:
            pending.append((clock.now, pose(step)))
            written.image_stamps.append(clock.now / NS)
            written.image_steps.append(step)
        if pending and (not images_out_of_order or step % per_request == 2):
            taken, q = pending.pop()
            _stamped_observation(recorder, clock, q, instruction, taken)
        holding = hold_after is not None and hold_after <= step and tick - step < 2 and \
            tick >= hold_after
        velocities = [0.0] * 7 if holding else [0.1] * 7
        positions = pose(step)
        recorder.message(ARM_COMMAND, JOINT_TRAJECTORY, {
            'header': cdr.header(clock.now), 'joint_names': ARM,
            'points': [{'positions': positions, 'velocities': velocities, 'accelerations': [],
                        'effort': [], 'time_from_start': {'sec': 0, 'nanosec': 0}}]},
            encode=trajectory)
        if holding:
            recorder.hold('underrun: no chunk in time', positions)
            written.holds += 1
        else:
            closing = step >= CLOSE_AT
            if step in (0, CLOSE_AT):  # the node sends a goal when the target changes
                recorder.json(GRIPPER_COMMAND, {
                    'goal': 'control_msgs/action/ParallelGripperCommand_Goal',
                    'name': FINGERS, 'position': [0.0 if closing else OPEN]})
            written.command_times.append(clock.now / NS)
            written.actions.append(positions + [1.0 if closing else 0.0])  # the model's units
            step += 1
        tick += 1
    clock.now = min(end_ns, start_ns + tick * period_ns)
    recorder.outcome({'outcome': 'completed', 'reason': 'completed', 'actions': commands,
                      'underruns': 1 if hold_after is not None else 0})
    assert recorder.close(10.0) and recorder.dropped == 0
    return written


def _stamped_observation(recorder: EpisodeRecorder, clock: _Clock, q: list[float],
                         instruction: str, taken_ns: int) -> None:
    now = clock.now
    recorder.observation(_observation(q, instruction, taken_ns))
    clock.now = now


def _observation(q: list[float], instruction: str, taken_ns: int) -> Observation:
    return Observation(
        images=[ImageFrame(view=v, data=frame_b64(q, view=v), timestamp_ms=taken_ns // 1_000_000)
                for v in VIEWS],
        proprioception=Proprioception(joint_positions=list(q), gripper=0.0),
        instruction=instruction)


def picture_at(written: Written, frame: int, view: str) -> bytes:
    """Return the JPEG a frame should show: the newest picture stamped at or before its command."""
    t = written.command_times[frame]
    request = max(i for i, stamp in enumerate(written.image_stamps) if stamp <= t + 1e-9)
    return base64.b64decode(frame_b64(pose(written.image_steps[request]), view=view))


def gateway_episodes(out: Path, count: int = 2, actions: int = 45) -> list[str]:
    """Record `count` real run(record=...) episodes against the local gateway into `out`."""
    from observations import observation
    import sequence_ai_ros as sai
    from sequence_ai_ros.gateway.process import GatewayProcess

    key = 'seq_dataset_tests_key_00000000002'
    paths = []
    with GatewayProcess(['--time-scale', '0.2', '--start-warm'], keys={key: 100000}) as gateway:
        for number in range(count):
            path = out / f'run_{number}.mcap'
            with sai.connect('pi05-droid', api_key=key, base_url=gateway.base_url) as policy:
                _run(policy, observation, path, actions)
            paths.append(str(path))
    return paths


def _run(policy, observation, path: Path, actions: int) -> None:
    q = list(arm_model.HOME)

    def act(action: list[float]) -> None:  # pi05-droid's joint velocities, at 15 Hz
        q[:] = [p + v / 15.0 for p, v in zip(q, action[:7])]

    policy.run(lambda: observation(q=q), act, max_actions=actions,
               validate=lambda action: True, record=path)


def main(out: Path, with_gateway: bool) -> None:
    """
    Write what test/dataset exports, and print it as JSON.

    node/: two node episodes (the first labelled a failure); client/: three run(record=)
    episodes (the first labelled a success, the second with a late picture); gateway/: real
    runs against the local gateway; expected/: the pictures some frames must show (PNG).
    """
    from PIL import Image
    from sequence_ai_ros.record.labels import label_episode

    out.mkdir(parents=True, exist_ok=True)
    written = {
        'node_a': node_episode(out / 'node' / 'a.mcap', commands=40, hold_after=12),
        'node_b': node_episode(out / 'node' / 'b.mcap', commands=25, images_out_of_order=True,
                               start_ns=START_NS + 60 * NS),
        'client_a': client_episode(out / 'client' / 'a.mcap', commands=45),
        'client_b': client_episode(out / 'client' / 'b.mcap', commands=30,
                                   instruction='open the drawer', per_request=5,
                                   late_request=2, start_ns=START_NS + 60 * NS),
        'client_c': client_episode(out / 'client' / 'c.mcap', commands=20, outcome='stopped',
                                   start_ns=START_NS + 120 * NS),
    }
    label_episode(out / 'node' / 'a.mcap', False, 'bumped the cup')
    label_episode(out / 'client' / 'a.mcap', True, 'clean')
    expected = {}
    (out / 'expected').mkdir(exist_ok=True)
    for name, frames in (('node_b', (0, 5, 12, 24)), ('client_b', (3, 12, 13, 29))):
        for frame in frames:
            for view in VIEWS:
                png = out / 'expected' / f'{name}_{frame}_{view}.png'
                picture = Image.open(io.BytesIO(picture_at(written[name], frame, view)))
                picture.convert('RGB').save(png)
                expected[f'{name}/{frame}/{view}'] = str(png)
    runs = gateway_episodes(out / 'gateway') if with_gateway else []
    print(json.dumps({'written': {k: vars(w) for k, w in written.items()},
                      'expected': expected, 'gateway': runs}))


if __name__ == '__main__':
    main(Path(sys.argv[1]), '--gateway' in sys.argv[2:])
