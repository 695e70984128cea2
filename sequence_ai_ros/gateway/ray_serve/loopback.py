"""
Keeping each Serve replica's own gRPC server on a loopback node's address.

Serve 2.60 starts an inter-deployment gRPC server in every replica on all interfaces, whatever
the node's address (ray-project/ray, python/ray/serve/_private/replica.py `_on_initialized`:
`add_port_to_grpc_server(self._server, "[::]:0")`), although handles reach replicas as Ray
actor calls unless RAY_SERVE_USE_GRPC_BY_DEFAULT=1 (serve/_private/constants.py). On a node
whose address is loopback (a Ray started by `--ray`), a replica rebinds that server there while
its deployment's class is built, which Serve does before `_on_initialized`; on a cluster's node
it is left as Serve makes it.
"""

import ipaddress
import logging
from typing import Any

LOG = logging.getLogger(__name__)
ALL_INTERFACES = '[::]:0'


def keep_replica_server_on_node() -> bool:
    """On a loopback node, make this replica's gRPC server bind there; True if it will."""
    import ray
    from ray.serve._private import replica

    node_ip = ray.util.get_node_ip_address()
    if not ipaddress.ip_address(node_ip).is_loopback:
        return False
    bind = getattr(replica, 'add_port_to_grpc_server', None)
    if bind is None:
        LOG.warning('Serve no longer binds its replica server as ray 2.60 did; it may listen '
                    'beyond %s', node_ip)
        return False
    if getattr(bind, 'node_ip', None) == node_ip:
        return True

    def on_node(server: Any, address: str) -> int:
        return int(bind(server, f'{node_ip}:0' if address == ALL_INTERFACES else address))

    on_node.node_ip = node_ip  # type: ignore[attr-defined]
    replica.add_port_to_grpc_server = on_node
    return True
