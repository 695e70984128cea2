"""Fixtures that start the local gateway as a real process (filled in with the gateway)."""
