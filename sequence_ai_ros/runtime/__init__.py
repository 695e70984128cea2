"""
The ROS 2 runtime the node and the simulated arm share: init, the executor, signals, spinning.

  spin  init/shutdown, the executor choice, a spin loop that reports callback exceptions and
        keeps spinning
"""
