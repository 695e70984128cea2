"""
The reference world: one arm and scene, drawn by the simulated arm, read by reference policies.

numpy only: importing it loads neither rclpy nor the client.

  arm_model  the Panda's joints, limits, kinematics and the table scene
"""
