"""
Tests with ROS in the test process: rclpy contexts, nodes, messages and DDS between them.

Rule: a file here imports rclpy or a ROS message package and starts none of the package's
programs (policy node, simulated arm, demo, launch files) as a process; a ROS peer the test
writes itself may run beside it.
"""
