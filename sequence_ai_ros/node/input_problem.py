"""Whether the node's inputs may drive the arm now: one episode tick's first question."""

from .inputs import InputCache
from .params import NodeConfig
from .safety import input_age_reason, is_stale

__all__ = ['input_problem']


def input_problem(inputs: InputCache, config: NodeConfig, now: float) -> tuple[str, bool]:
    """
    Return why the inputs cannot be used now ('' if they can), and whether it is only arriving.

    Missing or old messages are "arriving": the start of an episode may wait them out.
    """
    if inputs.joint_state_problem:
        return inputs.joint_state_problem, False
    for problem in inputs.frame_problems.values():
        if problem:
            return problem, False
    timeouts = inputs.timeouts(config.joint_state_timeout_s, config.camera_timeout_s)
    for topic, age in inputs.ages(now).items():
        timeout = timeouts[topic]
        dropped = inputs.dropped_since_accepted.get(topic, 0)
        why = f'; {dropped} since dropped, stamped older than the last accepted' \
            if dropped else ''
        stale = input_age_reason(topic, age, timeout, why)
        if stale:
            return stale, True
    if config.safety_gate_topic:
        gate_age = None if inputs.gate_time is None else now - inputs.gate_time
        if is_stale(gate_age, config.safety_gate_timeout_s):
            return f'safety gate {config.safety_gate_topic} silent (counts as closed)', False
        if not inputs.gate_open:
            return f'safety gate {config.safety_gate_topic} is closed', False
    return '', False
