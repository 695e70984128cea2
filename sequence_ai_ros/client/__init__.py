"""The client core: plain Python over httpx, no ROS."""
