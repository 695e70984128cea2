"""
Tests that need no ROS and no wall clock: engine, gateway, contract, the pure node parts.

Rule: a file here imports neither rclpy nor a ROS message package (it runs where ROS is not
installed), starts no process but the local gateway (with the fake openpi server behind it)
and short `python` children that check the package's own command line and imports, and plays
no episode in real time (the client's runs at control rate are test/realtime's).
"""
