"""The wire types as plain dataclasses; field names are the wire names."""

from dataclasses import dataclass, field
import math
from typing import Any

from ._errors import MalformedResponse

# A chunk longer than this is not a plan, it is a fault (or an attack on memory).
MAX_CHUNK_STEPS = 10_000
MAX_ACTION_DIM = 256


@dataclass
class ImageFrame:
    """One camera frame: `view` is one of the model's camera_views, `data` base64 JPEG or PNG."""

    view: str
    data: str
    timestamp_ms: int | None = None

    def __repr__(self) -> str:
        return f'ImageFrame(view={self.view!r}, {len(self.data)} base64 chars)'


@dataclass
class Proprioception:
    """Where the robot is. Only joint_positions is required; None means 'not reported'."""

    joint_positions: list[float]
    joint_velocities: list[float] | None = None
    end_effector_pose: list[float] | None = None
    gripper: float | None = None


@dataclass
class Observation:
    """One moment as the robot sees it: frames, joints and the task."""

    images: list[ImageFrame]
    proprioception: Proprioception
    instruction: str

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON object for `observation`; None fields are dropped, not sent as null."""
        proprio = {k: v for k, v in vars(self.proprioception).items() if v is not None}
        images = []
        for frame in self.images:
            image: dict[str, Any] = {'view': frame.view, 'data': frame.data}
            if frame.timestamp_ms is not None:
                image['timestamp_ms'] = frame.timestamp_ms
            images.append(image)
        return {'images': images, 'proprioception': proprio, 'instruction': self.instruction}


def _finite_floats(values: Any, where: str) -> list[float]:
    if not isinstance(values, (list, tuple)):
        raise MalformedResponse(
            f'{where}: expected a list of numbers, got {type(values).__name__}')
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise MalformedResponse(f'{where}: expected numbers, got {type(v).__name__}')
        if not math.isfinite(v):
            raise MalformedResponse(f'{where}: non-finite value {v!r}')
        out.append(float(v))
    return out


def _field(body: dict[str, Any], name: str, kind: type, where: str) -> Any:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise MalformedResponse(f'{where}.{name}: expected {kind.__name__}, got {value!r:.40}')
    return value


@dataclass
class ActionChunk:
    """
    A block of future actions. Model output, not a safe robot command: validate before acting.

    Step 0 is the action for the moment the observation was taken; step i is i / hz later.
    """

    steps: list[list[float]]
    robot: str
    action_space: str
    action_dim: int
    control_frequency_hz: float
    covers_seconds: float

    def __len__(self) -> int:
        return len(self.steps)

    @classmethod
    def from_wire(cls, body: Any) -> 'ActionChunk':
        """
        Build and check a chunk; steps may be `{"index", "values"}` objects or flat lists.

        Anything that would put a wrong number on its way to the motors raises MalformedResponse:
        no steps, too many, a step of the wrong length, non-finite values, a rate that is not
        a positive number.
        """
        where = 'action_chunk'
        if not isinstance(body, dict):
            raise MalformedResponse(f'{where}: expected an object')
        raw_steps = body.get('steps')
        if not isinstance(raw_steps, list) or not raw_steps:
            raise MalformedResponse(f'{where}.steps: expected a non-empty list')
        if len(raw_steps) > MAX_CHUNK_STEPS:
            raise MalformedResponse(f'{where}.steps: {len(raw_steps)} steps is over the limit')
        dim = _field(body, 'action_dim', int, where)
        if not 0 < dim <= MAX_ACTION_DIM:
            raise MalformedResponse(f'{where}.action_dim: {dim} is out of range')
        hz = float(_field(body, 'control_frequency_hz',
                          (int, float), where))  # type: ignore[arg-type]
        if not (math.isfinite(hz) and hz > 0):
            raise MalformedResponse(f'{where}.control_frequency_hz: {hz} is not a positive rate')
        steps = []
        for i, step in enumerate(raw_steps):
            values = step.get('values') if isinstance(step, dict) else step
            values = _finite_floats(values, f'{where}.steps[{i}]')
            if len(values) != dim:
                raise MalformedResponse(
                    f'{where}.steps[{i}]: {len(values)} values, action_dim is {dim}')
            steps.append(values)
        covers = body.get('covers_seconds', len(steps) / hz)
        return cls(
            steps=steps,
            robot=str(body.get('robot', '')),
            action_space=_field(body, 'action_space', str, where),
            action_dim=dim,
            control_frequency_hz=hz,
            covers_seconds=float(covers) if isinstance(covers, (int, float)) else len(steps) / hz,
        )


@dataclass
class Prediction:
    """
    One /v1/act answer with the gateway's accounting: perf (server timings), usage, warnings.

    `rtc` is the server's account of the real-time-chunking prefix it used (the local
    gateway's `{"prefix_steps", "inference_delay_steps", "execution_horizon"}`), None when
    the answer has none: the request carried no prefix, or the server ignored it.
    """

    id: str  # noqa: A003 (the wire name; renaming it would break the public API)
    model: str
    action_chunk: ActionChunk
    perf: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    rtc: dict[str, Any] | None = None

    @classmethod
    def from_wire(cls, body: Any) -> 'Prediction':
        """Build from a 200 body; a body that is not a usable answer raises MalformedResponse."""
        if not isinstance(body, dict):
            raise MalformedResponse('response: expected a JSON object')
        chunk = ActionChunk.from_wire(body.get('action_chunk'))
        perf = body.get('perf')
        usage = body.get('usage')
        warnings = body.get('warnings')
        rtc = body.get('rtc')
        return cls(
            id=str(body.get('id', '')),
            model=str(body.get('model', '')),
            action_chunk=chunk,
            perf=perf if isinstance(perf, dict) else {},
            usage=usage if isinstance(usage, dict) else {},
            warnings=[str(w) for w in warnings] if isinstance(warnings, list) else [],
            rtc=rtc if isinstance(rtc, dict) else None,
        )


@dataclass
class Model:
    """One catalogue entry from GET /v1/models; the untouched row is kept in `raw`."""

    id: str  # noqa: A003 (the wire name; renaming it would break the public API)
    endpoint: str
    architecture: str
    robot: str | None = None
    action_dim: int | None = None
    action_horizon: int | None = None
    control_hz: float | None = None
    camera_views: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def short_id(self) -> str:
        """`pi05-droid` rather than `accounts/sequences/models/pi05-droid`."""
        return self.id.rsplit('/', 1)[-1]

    @classmethod
    def from_wire(cls, row: dict[str, Any]) -> 'Model':
        """Lift the fields a request needs; everything else stays in `raw`."""
        return cls(
            id=str(row['id']),
            endpoint=str(row.get('endpoint', '')),
            architecture=str(row.get('architecture', '')),
            robot=row.get('robot'),
            action_dim=row.get('action_dim'),
            action_horizon=row.get('action_horizon'),
            control_hz=row.get('control_hz'),
            camera_views=tuple(row.get('camera_views') or ()),
            raw=row,
        )
