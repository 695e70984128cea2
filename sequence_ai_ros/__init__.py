"""sequence_ai_ros: drive a robot from a cloud-served robot policy, smoothly and safely.

Importing this package loads only the client core (httpx); the ROS node, the local gateway
and the simulated arm live in subpackages that are imported only when used.
"""
