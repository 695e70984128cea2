"""`python -m sequence_ai_ros.gateway`: the same as the `gateway` command."""

import sys

from sequence_ai_ros import stop_signals

# Before the gateway's imports: a signal while they load is a request to stop, not a crash.
with stop_signals.stop_on_signals():
    from .server import main

    code = main()
sys.exit(code)
