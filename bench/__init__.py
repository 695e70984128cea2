"""The benchmarks: thin scripts over sequence_ai_ros.harness, run as `python -m bench.<name>`."""
