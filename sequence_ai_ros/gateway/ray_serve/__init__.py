"""
The local gateway on Ray Serve: one ingress deployment holding the contract, policy replicas.

`sequence-ai-ros gateway --ray` (a local Ray on loopback) or `--ray-address ADDR` (an existing
cluster), `--replicas N` (`--max-replicas M` to autoscale from queue length). Needs
`pip install "sequence_ai_ros[ray]"`; nothing here is imported by the in-process gateway.
"""
