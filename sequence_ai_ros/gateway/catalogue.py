"""Model profiles: the catalogue data file, read into typed records, and their scaled views."""

import dataclasses
from dataclasses import dataclass
import json
from pathlib import Path
from typing import Any

DEFAULT_CATALOGUE = Path(__file__).with_name('catalogue.json')
ACTION_SPACES = ('joint_absolute', 'joint_position', 'joint_delta', 'joint_velocity')


@dataclass(frozen=True)
class ModelProfile:
    """
    One model as the gateway serves it; times are wall seconds at `time_scale`.

    A profile read from the catalogue has time_scale 1.0; `scaled(s)` gives the served view in
    which every duration is multiplied by s and the control rate divided by s (same steps).
    """

    id: str  # noqa: A003 (the catalogue's wire name; policy plug-ins read profile.id)
    name: str
    endpoint: str
    architecture: str
    description: str
    robot: str
    action_dim: int
    action_horizon: int
    control_hz: float
    action_space: str
    joint_count: int
    camera_views: tuple[str, ...]
    image_size: tuple[int, int]
    latency_median_s: float
    latency_sigma: float
    cold_start_s: float
    time_scale: float = 1.0

    @property
    def covers_seconds(self) -> float:
        """Duration of a full chunk at the served control rate."""
        return self.action_horizon / self.control_hz

    @property
    def native_hz(self) -> float:
        """Return the control rate in model time, whatever the scale."""
        return self.control_hz * self.time_scale

    def scaled(self, time_scale: float) -> 'ModelProfile':
        """Return the profile with every duration multiplied by time_scale (vs model time)."""
        ratio = time_scale / self.time_scale
        return dataclasses.replace(
            self,
            control_hz=self.control_hz / ratio,
            latency_median_s=self.latency_median_s * ratio,
            cold_start_s=self.cold_start_s * ratio,
            time_scale=time_scale,
        )

    def row(self) -> dict[str, Any]:
        """Return the GET /v1/models row: the published client's fields first, then the extras."""
        return {
            'id': self.id,
            'object': 'model',
            'endpoint': self.endpoint,
            'architecture': self.architecture,
            'robot': self.robot,
            'action_dim': self.action_dim,
            'action_horizon': self.action_horizon,
            'control_hz': self.control_hz,
            'camera_views': list(self.camera_views),
            'action_space': self.action_space,
            'covers_seconds': self.covers_seconds,
            'joint_count': self.joint_count,
            'image_size': list(self.image_size),
            'latency': {
                'distribution': 'lognormal',
                'median_s': round(self.latency_median_s, 6),
                'sigma': self.latency_sigma,
            },
            'cold_start_s': round(self.cold_start_s, 6),
            'time_scale': self.time_scale,
            'description': self.description,
        }


class Catalogue:
    """The served profiles, looked up by full id or bare name."""

    def __init__(self, profiles: list[ModelProfile]) -> None:
        self.profiles = list(profiles)
        self._by_id = {p.id: p for p in self.profiles}
        self._by_name = {p.name: p for p in self.profiles}

    def get(self, model: str) -> ModelProfile | None:
        """Return the profile for a full id or (as a convenience for curl users) a bare name."""
        return self._by_id.get(model) or self._by_name.get(model)

    def rows(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        """Catalogue rows, optionally only those of one endpoint."""
        return [p.row() for p in self.profiles if endpoint is None or p.endpoint == endpoint]


def load_catalogue(path: str | Path | None = None, time_scale: float = 1.0,
                   latency_median_s: float | None = None,
                   cold_start_s: float | None = None, any_space: bool = False) -> Catalogue:
    """
    Read the catalogue file and return its profiles scaled to `time_scale`.

    `latency_median_s` and `cold_start_s` (model seconds) override every profile's value.
    `any_space` admits action spaces the reference policy cannot plan in (e.g. end-effector
    models served by a --policy plug-in). Raises ValueError naming the model and field when
    the file is inconsistent.
    """
    data = json.loads(Path(path or DEFAULT_CATALOGUE).read_text(encoding='utf-8'))
    prefix = data.get('id_prefix', 'accounts/sequences/models/')
    profiles = []
    for entry in data['models']:
        profile = _profile(entry, prefix, any_space)
        if latency_median_s is not None:
            profile = dataclasses.replace(profile, latency_median_s=latency_median_s)
        if cold_start_s is not None:
            profile = dataclasses.replace(profile, cold_start_s=cold_start_s)
        profiles.append(profile.scaled(time_scale))
    return Catalogue(profiles)


def _profile(entry: dict[str, Any], prefix: str, any_space: bool) -> ModelProfile:
    name = entry['name']
    latency = entry['latency']
    profile = ModelProfile(
        id=prefix + name,
        name=name,
        endpoint=entry.get('endpoint', 'act'),
        architecture=entry['architecture'],
        description=entry.get('description', ''),
        robot=entry['robot'],
        action_dim=int(entry['action_dim']),
        action_horizon=int(entry['action_horizon']),
        control_hz=float(entry['control_hz']),
        action_space=entry['action_space'],
        joint_count=int(entry['joint_count']),
        camera_views=tuple(entry['camera_views']),
        image_size=(int(entry['image_size'][0]), int(entry['image_size'][1])),
        latency_median_s=float(latency['median_s']),
        latency_sigma=float(latency['sigma']),
        cold_start_s=float(entry['cold_start_s']),
    )
    if not profile.action_space or (profile.action_space not in ACTION_SPACES
                                    and not any_space):
        raise ValueError(f'{name}: action_space must be one of {ACTION_SPACES}')
    if profile.action_dim != profile.joint_count + 1:
        raise ValueError(f'{name}: action_dim must be joint_count + 1 (the gripper)')
    if latency.get('distribution', 'lognormal') != 'lognormal':
        raise ValueError(f'{name}: only lognormal latency is supported')
    return profile
