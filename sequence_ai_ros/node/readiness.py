"""
Configure's side of the direct protocol: which protocol is in use, and a worker ready to act.

Configure settles the protocol (`auto` asks for the direct one first) and, on the direct
protocol, waits within startup_timeout_s for the worker to serve this session, saying on
/diagnostics and in the log what it waits for (ETA, status, stage, place in line): activate
must not be the moment a cold worker starts.
"""

from collections.abc import Callable

from rclpy.node import Node
import sequence_ai_ros as sai

from .configure_checks import untrusted_gateway
from .params import NodeConfig

__all__ = ['describe_readiness', 'settle_protocol', 'wait_ready']


def settle_protocol(node: Node, policy: sai.Policy, config: NodeConfig) -> str:
    """Connect as `protocol` says and log which protocol the node uses; return it."""
    try:
        protocol = policy.resolve_protocol()
    except sai.CertificateError as exc:
        raise untrusted_gateway(exc, config) from exc
    asked = '' if config.protocol == protocol else f' (protocol {config.protocol})'
    node.get_logger().info(f'{config.model}: using the {protocol} protocol{asked}')
    return protocol


def describe_readiness(answer: sai.Readiness) -> str:
    """Say what a ready answer says, in one line ('ready', or what is waited for)."""
    if answer.ready:
        return 'ready'
    parts = [f'status {answer.status or "?"}']
    if answer.stage:
        parts.append(f'stage {answer.stage}')
    if answer.queue_position is not None:
        parts.append(f'place in line {answer.queue_position}')
    if answer.eta_s is not None:
        parts.append(f'ETA ~{answer.eta_s:.0f} s')
    return 'waiting: ' + ', '.join(parts)


def wait_ready(node: Node, policy: sai.Policy, config: NodeConfig,
               report: Callable[[str, float | None], None]) -> float:
    """
    Wait (direct protocol) until the worker serves this session; return the seconds waited.

    `report(text, eta_s)` is told of every answer that is not ready, then 'ready'. Past
    startup_timeout_s the client raises Unavailable (warming), which fails configure.
    """
    if policy.protocol != 'direct':
        return 0.0
    last = ['']

    def on_wait(answer: sai.Readiness) -> None:
        text = describe_readiness(answer)
        if text != last[0]:  # one log line per change, not per poll
            node.get_logger().info(f'{config.model}: {text}')
            last[0] = text
        report(text, answer.eta_s)

    waited = policy.wait_until_ready(config.startup_timeout_s, on_wait=on_wait, poll_s=1.0)
    if waited > 0.05:
        node.get_logger().info(f'{config.model}: ready after {waited:.1f} s')
    report('ready', None)
    return waited
