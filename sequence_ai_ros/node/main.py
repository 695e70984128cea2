"""`policy_node` executable: spin one PolicyNode until interrupted."""

import sys

from sequence_ai_ros.spin import init, shutdown, spin_until_shutdown


def main(args: list[str] | None = None) -> int:
    """Run the policy node; configure and activate it through the lifecycle services."""
    from .policy_node import PolicyNode
    init(args)
    node = PolicyNode()
    try:
        spin_until_shutdown(node)
    finally:
        node.stop_episode('shutdown')
        node.destroy_node()
        shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
