"""
The ROS 2 runtime the node and the simulated arm share: init, the executor, signals, spinning.

  spin  init/shutdown, the executor choice, a spin loop that reports callback exceptions and
        keeps spinning
  log_level  a /rosout message's level as an int on every distribution (Humble's constants are
        bytes)
"""
