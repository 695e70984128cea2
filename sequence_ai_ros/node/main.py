"""`policy_node` executable: spin one PolicyNode until SIGINT or SIGTERM, then exit 0."""

import sys

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
    # An abandoned HTTP request may still run on a worker thread: the interpreter would join
    # it at exit, i.e. wait for the gateway's answer, up to request_timeout_s, after the robot
    # was told to hold, and a launch file's SIGTERM would turn into its SIGKILL. Nothing is left
    # to do: the hold is published, the connection closed, the node destroyed.
    stop_signals.exit_now_if_threads_linger(0)
    return 0


if __name__ == '__main__':
    sys.exit(main())
