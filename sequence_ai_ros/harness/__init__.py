"""
Instruments for tests, benchmarks, scripts and the demo; the node and the client never import it.

  child_processes   children on a private ROS domain, logged, stopped politely then hard
  fault_matrix      the rows of docs/RELIABILITY.md the fault tests record
  proc_stats        what /proc says: CPU time, machine busy, memory, threads, sockets, the
                    process tree; renice
  report            markdown tables
  robot             a robot over DDS for one namespace, the tests' and the benchmarks': joint
                    states, camera frames, commands heard, a hold service, the node's services
  ros_side          a private rclpy context and node, spun on a thread
  service_calls     a ROS service call with a deadline; lifecycle changes that survive a lost reply
  soak_report       the soak's table and its section of docs/RELIABILITY.md
  stamped_actions   actions stamped with loop, request and step; the order check
  stamped_observer  a PolicyObserver noting every request's fate, for many loops on one gateway
"""
