"""
Wait for one message inside a callback, e.g. a lifecycle transition, without re-entering.

A short-lived node on its own executor takes the message, so the caller's executor is never
spun from inside one of its own callbacks. (rclpy's wait_for_message has no QoS argument on
Humble, and a reliable subscription never hears a best-effort sensor publisher.)
"""

import time
from typing import Any

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile


def wait_for_message(node: Node, msg_type: Any, topic: str, timeout_s: float,
                     qos: QoSProfile = qos_profile_sensor_data) -> Any:
    """Return the first message on the fully resolved `topic` within `timeout_s`, or None."""
    probe = rclpy.create_node(f'{node.get_name()}_probe', namespace=node.get_namespace(),
                              context=node.context, start_parameter_services=False,
                              enable_rosout=False)
    received: list[Any] = []
    probe.create_subscription(msg_type, topic, received.append, qos)
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(probe)
    try:
        deadline = time.monotonic() + timeout_s
        while not received and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=min(0.05, max(0.0, deadline - time.monotonic())))
    finally:
        executor.remove_node(probe)
        executor.shutdown()
        probe.destroy_node()
    return received[0] if received else None
