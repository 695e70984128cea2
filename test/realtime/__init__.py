"""
Tests of the client played at control rate against the local gateway: a wall clock, no ROS.

Rule: as test/unit's (no rclpy, no ROS message package, no process but the local gateway, the
fault proxy and the fake openpi server), but a file here runs episodes in real time (chunks
played action by action, faults injected mid-run, underruns and holds timed), so it takes
seconds per test and a minute in all; test/unit keeps what answers at once.
"""
