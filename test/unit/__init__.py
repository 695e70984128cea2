"""
Tests that need no ROS: the client, the engine, the gateway, the contract, the pure node parts.

Rule: a file here imports neither rclpy nor a ROS message package (it runs where ROS is not
installed) and starts no process but the local gateway (with the fake openpi server behind it)
and short `python` children that check the package's own command line and imports.
"""
