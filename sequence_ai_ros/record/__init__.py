"""
Episode recording: one MCAP file per episode, readable by ros2 bag, Foxglove and the report.

schemas       the topics, their ROS 2 types and definitions
cdr           messages as CDR bytes without rclpy (plain Python)
mcap_file     one episode's MCAP file
writer_thread the file written by a thread behind a bounded queue (drops counted)
size_cap      where files go; the oldest removed first past a total size
metadata      parameters and package version, never a key
episode       EpisodeRecorder: an episode's events into the writer
run_recording Policy.run(record=...)
reader        an episode file read back (also one cut short by a kill), or streamed
episode_data  what an episode holds once read (Recording): the report's, the demo's, the export's
recording     an episode file as the report's picture reads it
labels        an episode's label (success, notes): a sidecar beside its file

Importing this package needs nothing beyond the standard library; writing or reading a file
needs the mcap and mcap-ros2-support packages (dependency.py says so when they are missing).
"""
