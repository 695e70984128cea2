"""What the command line and its executables are called (setup.py's console_scripts)."""

PROG = 'sequence-ai-ros'
# The executables ros2 run and the launch files name.
GATEWAY_EXECUTABLE = 'sequence_ai_gateway'
DEMO_MODULE = 'sequence_ai_ros.demo.runner'
