"""A private rclpy context per test module, for tests that declare parameters in-process."""

import pytest
import rclpy

__all__ = ['context']


@pytest.fixture(scope='module')
def context():
    """Yield an initialised rclpy Context of the module's own, shut down after it."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    if ctx.ok():  # a test may have shut it down itself
        rclpy.shutdown(context=ctx)
