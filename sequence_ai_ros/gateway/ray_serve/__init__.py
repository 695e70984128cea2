"""
The local gateway on Ray Serve: one ingress deployment holding the contract, policy replicas.

`sequence-ai-ros gateway --ray` (a local Ray on loopback) or `--ray-address ADDR` (an existing
cluster), `--replicas N` (`--max-replicas M` to autoscale from queue length). Needs
`pip install "sequence_ai_ros[ray]"`; nothing here is imported by the in-process gateway.
"""

import os

# A Ray started here takes the loopback address as its node's and binds its own ports (GCS,
# raylet, object manager, agents, workers) there, instead of resolving 127.0.0.1 to the
# machine's address. Ray reads this once, at `import ray` (ray 2.60, python/ray/_private/
# ray_constants.py ENABLE_RAY_CLUSTER; services.py get_node_ip_address), hence here, before any
# module of this package imports ray; Ray's own processes inherit it. A driver joining a
# cluster (--ray-address) finds its node by the node ids on this host
# (services.py get_node_to_connect_for_driver), so it is unaffected.
LOOPBACK_ENV = 'RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER'
os.environ.setdefault(LOOPBACK_ENV, '0')
