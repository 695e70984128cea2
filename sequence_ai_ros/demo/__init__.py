"""`sequence-ai-ros demo`: the whole loop on a machine with nothing installed, in a picture."""

# runner    starts the local gateway, the simulated arm and the policy node, runs one episode
#           (and the same one with prefetch off), prints the outcome and writes the PNG
# arguments its flags; progress the status line; summary a run's record and the outcome table
# record    the demo's own ROS node: what the loop publishes, time-stamped on time.monotonic
# plot      the PNG: joints commanded and measured, chunk seams, underruns, latency, distance
# configs   finds config/<model>.yaml in a source checkout or an installed share directory
