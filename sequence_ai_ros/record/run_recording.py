"""
Policy.run(record=...): one run's streams into an episode file, the node's format without ROS.

The callbacks run() reaches the robot through are wrapped to record what they are given; the
requests and answers come through a PolicyObserver. Imported only when a run records, so the
client stays httpx-only. The client imports this module, so this module does not import the
client: RecordingObserver has PolicyObserver's methods, and its class only for the type checker.
"""

from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TYPE_CHECKING

if TYPE_CHECKING:
    from sequence_ai_ros.client import Observation, Prediction
    from sequence_ai_ros.client import PolicyObserver as _Observer
else:
    Observation = Prediction = Any
    _Observer = object

from .episode import EpisodeRecorder, join_event
from .metadata import episode_metadata
from .size_cap import episode_path


class RecordingObserver(_Observer):
    """A PolicyObserver that records each request, answer and failure of a Policy."""

    def __init__(self, recorder: Callable[[], EpisodeRecorder | None]) -> None:
        self.recorder = recorder  # the episode's now (the node's changes between episodes)

    def request_sent(self, observation: Observation) -> None:
        """Record the observation as sent."""
        recorder = self.recorder()
        if recorder is not None:
            recorder.observation(observation)

    def answer_received(self, observation: Observation, prediction: Prediction,
                        round_trip_s: float) -> None:
        """Record the answer and its round trip."""
        recorder = self.recorder()
        if recorder is not None:
            recorder.answer(observation, prediction, round_trip_s)

    def request_failed(self, observation: Observation, error: BaseException) -> None:
        """Record the failure."""
        recorder = self.recorder()
        if recorder is not None:
            recorder.error(observation, error)


class RunRecording:
    """What one run() records; start() opens the file, finish() writes the outcome, closes."""

    def __init__(self, recorder: EpisodeRecorder) -> None:
        self.recorder = recorder
        self.observer = RecordingObserver(lambda: recorder)
        self.stream: Any = None
        self._joins: dict[str, int] = {}

    @classmethod
    def start(cls, record: Any, model: str, playback: Any, options: dict[str, Any],
              max_actions: int) -> 'RunRecording':
        """Open the episode file `record` names (a directory: a new file in it)."""
        path = Path(record)
        if path.is_dir():
            path = episode_path(path, model.rsplit('/', 1)[-1])
        metadata = episode_metadata(options, source='sequence_ai_ros.client run()', model=model,
                                    playback=asdict(playback), max_actions=max_actions)
        return cls(EpisodeRecorder.create(path, metadata))

    @property
    def path(self) -> Path:
        """Return the episode file's path."""
        return self.recorder.path

    def wrap(self, calls: Any) -> Any:
        """Return run()'s callbacks with act and hold recorded (a RunCallbacks)."""
        act, recorder = calls.act, self.recorder

        def recorded_act(values: list[float]) -> Any:
            recorder.action(values)
            return act(values)

        return replace(calls, act=recorded_act, on_hold=self._on_hold(calls.on_hold))

    def on_chunk(self, user: Any) -> Any:
        """Return an on_chunk that records each join, then calls the user's."""
        def recorded(prediction: Any) -> Any:
            stream = self.stream
            if stream is not None:
                engine = stream.engine
                self.recorder.join(join_event(engine, prediction, engine.stats.actions,
                                              self._joins))
                self._joins = dict(engine.stats.joins)
            return user(prediction) if user is not None else None
        return recorded

    def finish(self, outcome: Any) -> None:
        """Record the outcome and close the file (waiting for the writer, a few seconds)."""
        fields = asdict(outcome)
        reason = fields.get('reason', '')
        fields['outcome'] = 'completed' if reason == 'completed' else \
            'error' if str(reason).startswith('raised:') else 'stopped'
        self.recorder.outcome(fields)
        self.recorder.close()

    def _on_hold(self, user: Any) -> Any:
        def recorded(reason: str) -> Any:
            self.recorder.hold(reason)
            return user(reason) if user is not None else None
        return recorded
