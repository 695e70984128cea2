"""
Tests of whole systems and of the whole tree: what takes processes, time or the entire checkout.

Rule: a file here starts the package's programs as processes (a policy node with its gateway and
robot, the simulated arm, the demo, launch files), several processes (Ray, signals, loads, the
soak, fuzzing), the ROS tools (ros2 CLI, colcon, rosdep), or reads the whole tree (docs, layout,
lints, the child-environment and Humble API checks).
"""
