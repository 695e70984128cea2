"""`sim_arm` executable: the simulated arm (node.py) until SIGINT or SIGTERM, then exit 0."""

from sequence_ai_ros import stop_signals


def main(args: list[str] | None = None) -> None:
    """Run the simulated arm; see node.py for its topics, services and parameters."""
    # Before rclpy and the simulation load (a second or more on a busy machine): a signal
    # meanwhile is a request to stop, honoured once the node is up, not a death by the signal.
    stop_signals.install()
    from .node import main as run_node

    run_node(args)


if __name__ == '__main__':
    main()
