"""Shared test set-up: each run gets its own ROS domain so parallel runs never cross-talk."""

import os
import random

# Before any rclpy import: DDS reads these when the first context is created.
os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 100)))
os.environ['ROS_LOCALHOST_ONLY'] = '1'  # Humble
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'  # Jazzy and later

from fixtures_gateway import *  # noqa: E402,F401,F403
