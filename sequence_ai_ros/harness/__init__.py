"""
Instruments for tests, benchmarks and the demo; the node and the client never import it.

  service_calls    a ROS service call with a deadline; lifecycle changes that survive a lost reply
  stamped_actions  actions stamped with loop, request and step; the order check
  stamped_policy   a Policy noting every request's fate, for many loops on one gateway
"""
