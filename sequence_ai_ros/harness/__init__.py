"""
Instruments for tests, benchmarks and the demo; the node and the client never import it.

  child_processes   children on a private ROS domain, logged, stopped politely then hard
  proc_stats        what /proc says: CPU time, machine busy, memory, threads, sockets, renice
  report            markdown tables
  scripted_robot    a robot over DDS: joint states, camera frames, a hold service
  service_calls     a ROS service call with a deadline; lifecycle changes that survive a lost reply
  stamped_actions   actions stamped with loop, request and step; the order check
  stamped_observer  a PolicyObserver noting every request's fate, for many loops on one gateway
"""
