"""
The caller's own side of DDS: a private rclpy context and one node, spun on a thread.

For tests, benchmarks, scripts and the demo, which play a robot or watch a node from their own
process: they create entities on `node` (or add nodes of their own to `executor`) and wait on
them from their own thread.
"""

import os
import threading
from typing import Any

import rclpy
from rclpy.executors import SingleThreadedExecutor
from sequence_ai_ros.harness.child_processes import localhost_discovery


def init_context(domain_id: int | None = None) -> Any:
    """
    Return a started rclpy context that leaves Ctrl-C alone.

    On `domain_id` if given, with discovery on loopback as ros_environment gives the children
    there (DDS reads it when the context starts); else on this process's ROS_DOMAIN_ID.
    """
    context = rclpy.Context()
    domain: dict[str, Any] = {}
    if domain_id is not None:
        os.environ.update(localhost_discovery())
        domain = {'domain_id': domain_id}
    try:  # the caller's Ctrl-C handling stays its own (rclpy >= Iron)
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO, **domain)
    except ImportError:
        rclpy.init(context=context, **domain)
    return context


class RosSide:
    """An rclpy context, a node `node_name` in it, and a thread spinning its executor."""

    def __init__(self, node_name: str = 'test_side', domain_id: int | None = None) -> None:
        self.context = init_context(domain_id)
        self.node = rclpy.create_node(node_name, context=self.context)
        # Not the MultiThreadedExecutor: in rclpy 9.1 it queues a handler for an entity on
        # every wait while earlier ones are pending (thousands seen), then scans that list
        # under the GIL on every spin: this process stalled for 0.3-1.2 s, its joint states
        # with it, and a node under test rightly held. Every callback here is short.
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._running = True
        self._thread = threading.Thread(target=self._spin, name=node_name, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        # A callback that raises must not end the spinning for every later one.
        while self._running and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001
                print(f'{self.node.get_name()} callback raised: {type(exc).__name__}: {exc}')

    def close(self) -> None:
        """Stop spinning, destroy the node and shut the context down."""
        self._running = False
        self._thread.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)
