"""`python -m sequence_ai_ros.cli`: the `sequence-ai-ros` command."""

import sys

from sequence_ai_ros.cli.command import main

sys.exit(main())
