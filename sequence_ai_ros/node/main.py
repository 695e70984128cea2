"""`policy_node` executable: spin one PolicyNode until SIGINT or SIGTERM, then exit 0."""

import os
import sys
import threading

from sequence_ai_ros import stop_signals


def main(args: list[str] | None = None) -> int:
    """Run the policy node; configure and activate it through the lifecycle services."""
    # Before rclpy loads (a second or more on a busy machine): a signal meanwhile is a request
    # to stop, honoured once the node is up, not a death by the signal.
    stop_signals.install()
    from sequence_ai_ros.runtime.spin import init, shutdown, spin_until_shutdown

    from .policy_node import PolicyNode
    init(args)
    node = PolicyNode()
    try:
        spin_until_shutdown(node)
    finally:
        # A second signal must not cut the hold short, nor the exit after it.
        stop_signals.ignore()
        node.shutdown_holding('shutdown')
        node.destroy_node()
        shutdown()
    _exit_now_if_requests_linger(0)
    return 0


def _exit_now_if_requests_linger(code: int) -> None:
    """
    Exit at once while an abandoned HTTP request still runs on a worker thread.

    The interpreter would otherwise join that thread at exit, i.e. wait for the gateway's
    answer, up to request_timeout_s, after the robot was told to hold: a launch file's
    SIGTERM would turn into its SIGKILL. Nothing is left to do: the hold is published, the
    connection closed, the node destroyed, the context shut down.
    """
    others = [t for t in threading.enumerate()
              if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not others:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == '__main__':
    sys.exit(main())
