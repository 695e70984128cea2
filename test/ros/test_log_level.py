"""
A /rosout level read as an int on every distribution, and the demo's rejection count with it.

Humble declares rcl_interfaces/msg/Log's constants as `byte` (rclpy gives b'(' for ERROR) and
later distributions as `uint8`: `humble_log_constants` gives this distribution's Log Humble's
constants, so a comparison with Log.ERROR fails here as it did on the sourced Humble.
"""

from types import SimpleNamespace

import pytest
from rcl_interfaces.msg import Log
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_harness import wait_until
from sequence_ai_ros.demo.record import Recorder
from sequence_ai_ros.runtime import log_level as levels
from sequence_ai_ros.runtime.log_level import ERROR, log_level

NAMES = ('DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL')


@pytest.fixture
def humble_log_constants(monkeypatch):
    """Make Log.DEBUG..Log.FATAL one-byte bytes, as Humble's rclpy generates them."""
    constants = type(Log)._Metaclass_Log__constants
    for name in NAMES:
        monkeypatch.setitem(constants, name, bytes([constants[name]]))


def test_a_level_reads_as_an_int_from_humbles_bytes_and_later_ints():
    assert log_level(b'(') == log_level(40) == ERROR
    assert log_level(Log(level=30)) == levels.WARN
    assert log_level(SimpleNamespace(level=b'\x32')) == levels.FATAL
    with pytest.raises(ValueError, match='one byte'):
        log_level(b'')


def test_the_int_constants_are_this_distributions_and_humbles(humble_log_constants):
    assert {type(getattr(Log, n)) for n in NAMES} == {bytes}
    assert [log_level(getattr(Log, n)) for n in NAMES] == \
        [getattr(levels, n) for n in NAMES] == [10, 20, 30, 40, 50]


@pytest.mark.parametrize('humble', [False, True], ids=['this distribution', 'humble'])
def test_the_demo_counts_a_controllers_error_on_rosout(ros, request, humble):
    if humble:
        request.getfixturevalue('humble_log_constants')
    namespace = f'/log_level_{int(humble)}'
    recorder = Recorder(ros, namespace)
    rosout = ros.node.create_publisher(
        Log, '/rosout', QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    logger = f'{namespace.strip("/")}.arm_controller'
    try:
        assert wait_until(lambda: rosout.get_subscription_count() > 0, 10)
        rosout.publish(Log(level=levels.INFO, name=logger, msg='configured'))
        rosout.publish(Log(level=levels.FATAL, name='elsewhere.arm_controller', msg='not ours'))
        rosout.publish(Log(level=ERROR, name=logger, msg='goal rejected'))  # in order: last
        assert wait_until(lambda: recorder.data.controller_errors, 10)
        assert recorder.data.controller_errors == [(logger, 'goal rejected')]
    finally:
        ros.node.destroy_publisher(rosout)
        recorder.close()
