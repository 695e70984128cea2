"""
A direct act's answer -> the same Prediction the v1 protocol gives, or a clear refusal.

The answer's `outputs` are the deployment's own: a robot-arm preset chunk (steps, action_space,
rate...), or bare rows (`{"actions": [[...], ...]}` or a list of rows). The rate and the rows
that stay valid come from connect; the action space from the chunk, else from
connect(action_space=). Neither means a refusal naming `action_space`: velocities played as
positions is the mistake this refuses to make by guessing.
"""

from typing import Any

from ._direct_wire import WorkerRoute
from ._errors import ActionSpaceUnknown, MalformedResponse
from ._types import ActionChunk, Prediction


def _preset_chunk(outputs: Any) -> dict[str, Any] | None:
    if isinstance(outputs, dict) and isinstance(outputs.get('action_chunk'), dict):
        return dict(outputs['action_chunk'])
    if isinstance(outputs, dict) and 'steps' in outputs:
        return dict(outputs)
    return None


def chunk_from_outputs(outputs: Any, route: WorkerRoute,
                       action_space: str | None) -> ActionChunk:
    """Build the chunk an answer's outputs stand for, checked as a v1 chunk is."""
    body = _preset_chunk(outputs)
    if body is not None:
        stated = body.get('action_space')
        if isinstance(stated, str) and stated:
            if action_space is not None and action_space != stated:
                raise ActionSpaceUnknown(
                    f'the deployment answers {stated!r} actions but connect(action_space='
                    f'{action_space!r}) says otherwise; nothing was played')
        elif action_space is None:
            raise ActionSpaceUnknown(_no_space_message())
        else:
            body['action_space'] = action_space
    else:
        rows = outputs.get('actions') if isinstance(outputs, dict) else outputs
        if not (isinstance(rows, list) and rows and isinstance(rows[0], list)):
            raise MalformedResponse('act answer: outputs are neither a chunk nor rows of '
                                    'actions (a list of lists, or {"actions": [...]})')
        if action_space is None:
            raise ActionSpaceUnknown(_no_space_message())
        body = {'steps': rows, 'action_space': action_space, 'action_dim': len(rows[0])}
    if body.get('control_frequency_hz') is None:
        if route.hz is None:
            raise MalformedResponse('act answer: no control_frequency_hz, and connect gave no hz')
        body['control_frequency_hz'] = route.hz
    # Rows past action_chunk_valid_len are the deployment's own "do not play".
    return cut_to(ActionChunk.from_wire(body), route.valid_len)


def cut_to(chunk: ActionChunk, rows: int | None) -> ActionChunk:
    """Keep the first `rows` steps of `chunk` (all when None or more than it has)."""
    if rows is not None and 0 < rows < len(chunk.steps):
        chunk.steps = chunk.steps[:rows]
        chunk.covers_seconds = rows / chunk.control_frequency_hz
    return chunk


def _no_space_message() -> str:
    return ('the deployment does not say its action space (no preset chunk in its answer): '
            'pass connect(..., action_space="joint_velocity" | "joint_position" | '
            '"joint_delta" ...) as the deployment was trained; nothing was played')


def prediction_from_act(body: dict[str, Any], route: WorkerRoute, model: str,
                        action_space: str | None, horizon: int | None = None) -> Prediction:
    """Build the Prediction of one direct act answer, of at most `horizon` steps if given."""
    outputs = body.get('outputs')
    chunk = cut_to(chunk_from_outputs(outputs, route, action_space), horizon)
    perf, usage, warnings = body.get('perf'), body.get('usage'), body.get('warnings')
    rtc = outputs.get('rtc') if isinstance(outputs, dict) else None
    return Prediction(
        id=str(body.get('request_id') or ''), model=model, action_chunk=chunk,
        perf=perf if isinstance(perf, dict) else {},
        usage=usage if isinstance(usage, dict) else {},
        warnings=[str(w) for w in warnings] if isinstance(warnings, list) else [],
        rtc=rtc if isinstance(rtc, dict) else body.get('rtc') if isinstance(body.get('rtc'), dict)
        else None)
