"""
Wait for one message, one service answer or an action server inside a callback (a transition).

A short-lived node on its own executor takes the message, so the caller's executor is never
spun from inside one of its own callbacks. (rclpy's wait_for_message has no QoS argument on
Humble, and a reliable subscription never hears a best-effort sensor publisher.)
"""

import time
from typing import Any

import rclpy
from rclpy.client import Client
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile


def _probe_node(node: Node, suffix: str) -> Node:
    return rclpy.create_node(f'{node.get_name()}_{suffix}', namespace=node.get_namespace(),
                             context=node.context, start_parameter_services=False,
                             enable_rosout=False)


def _spin_until(probe: Node, done: Any, timeout_s: float) -> None:
    executor = SingleThreadedExecutor(context=probe.context)
    executor.add_node(probe)
    try:
        deadline = time.monotonic() + timeout_s
        while not done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=min(0.05, max(0.0, deadline - time.monotonic())))
    finally:
        executor.remove_node(probe)
        executor.shutdown()


def wait_for_message(node: Node, msg_type: Any, topic: str, timeout_s: float,
                     qos: QoSProfile = qos_profile_sensor_data) -> Any:
    """Return the first message on the fully resolved `topic` within `timeout_s`, or None."""
    probe = _probe_node(node, 'probe')
    received: list[Any] = []
    probe.create_subscription(msg_type, topic, received.append, qos)
    try:
        _spin_until(probe, lambda: bool(received), timeout_s)
    finally:
        probe.destroy_node()
    return received[0] if received else None


def call_service_once(node: Node, srv_type: Any, name: str, request: Any,
                      timeout_s: float) -> Any:
    """Return the response of service `name` (resolved as `node` would) or None in time."""
    probe = _probe_node(node, 'ask')
    client: Client[Any, Any] = probe.create_client(srv_type, name)
    try:
        deadline = time.monotonic() + timeout_s
        if not client.wait_for_service(timeout_sec=timeout_s):
            return None
        future = client.call_async(request)
        _spin_until(probe, future.done, max(0.0, deadline - time.monotonic()))
        return future.result() if future.done() else None
    finally:
        probe.destroy_node()


def action_server_types(node: Node, name: str, timeout_s: float) -> list[str]:
    """
    Return the action types served on the fully resolved action `name`, waiting up to timeout_s.

    Only an action server publishes `<name>/_action/feedback`, its type `<action>_FeedbackMessage`
    (rclpy 3.3 has get_publishers_info_by_topic; this node's own client never publishes it).
    """
    topic = f'{name}/_action/feedback'
    suffix = '_FeedbackMessage'
    deadline = time.monotonic() + timeout_s
    while True:
        found = sorted({info.topic_type for info in node.get_publishers_info_by_topic(topic)})
        if found or time.monotonic() >= deadline:
            return [t[:-len(suffix)] if t.endswith(suffix) else t for t in found]
        time.sleep(0.05)
