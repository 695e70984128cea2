"""Nodes made in the test's own process, spun by the `ros` fixture's executor."""

import contextlib


@contextlib.contextmanager
def spun_nodes(ros):
    """Yield `spin(node) -> node`, which adds a node to the executor; destroy them all after."""
    nodes = []

    def spin(node):
        ros.executor.add_node(node)
        nodes.append(node)
        return node
    yield spin
    for node in nodes:
        ros.executor.remove_node(node)
        node.destroy_node()
