"""`python -m sequence_ai_ros.gateway`: the same as the `gateway` command."""

import sys

from .server import main

sys.exit(main())
