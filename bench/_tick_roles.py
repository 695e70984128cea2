"""
The control-tick bench's child processes: the recorder and the bare rclpy timer.

Run by bench.bench_control_tick as `python -m bench._tick_roles recorder OUT TOPIC...` and
`python -m bench._tick_roles bare TOPIC RATE`; each runs until a signal.
"""

import argparse
import sys
import time
from typing import Any

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sequence_ai_ros.demo.analysis import is_hold
from sequence_ai_ros.node.arm_output import stream_trajectory
from sequence_ai_ros.runtime.spin import init, shutdown, spin_until_shutdown
from sequence_ai_ros.world import arm_model
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

TOPIC = 'joint_trajectory_controller/joint_trajectory'
NAMES = list(arm_model.JOINT_NAMES) + [arm_model.GRIPPER_JOINT]


def reliable_qos(depth: int = 100) -> QoSProfile:
    """Return the recorder's and the bare timer's QoS: reliable, `depth` deep."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)


def run_recorder(topics: list[str], out: str) -> int:
    """
    Stamp every JointTrajectory on `topics` (and chunk events) into `out`, until a signal.

    Lines: `<topic index> <monotonic s> <1 if hold>` and `c<topic index> <monotonic s>`.
    """
    init()
    node = rclpy.create_node('tick_recorder')
    handle = open(out, 'w', buffering=1)

    def on_command(msg: Any, index: int) -> None:
        now = time.monotonic()
        # A stream step gives positions only: no velocities is not a hold.
        hold = not msg.points or is_hold(tuple(msg.points[0].velocities))
        handle.write(f'{index} {now:.9f} {int(hold)}\n')

    def on_chunk(msg: Any, index: int) -> None:
        handle.write(f'c{index} {time.monotonic():.9f}\n')

    for i, topic in enumerate(topics):
        node.create_subscription(JointTrajectory, topic,
                                 lambda msg, i=i: on_command(msg, i), reliable_qos())
        ns = topic.rsplit('/' + TOPIC, 1)[0]
        node.create_subscription(String, f'{ns}/policy_node/chunks',
                                 lambda msg, i=i: on_chunk(msg, i), reliable_qos())
    try:
        spin_until_shutdown(node)
    finally:
        handle.close()
        node.destroy_node()
        shutdown()
    return 0


def run_bare(topic: str, rate: float) -> int:
    """Publish the node's kind of one-point JointTrajectory at `rate` from a bare timer."""
    init()
    node = rclpy.create_node('bare_tick')
    pub = node.create_publisher(JointTrajectory, topic, reliable_qos(10))
    home = [float(v) for v in arm_model.HOME] + [0.0]
    step = [0]

    def tick() -> None:
        step[0] += 1
        wiggle = 1e-4 * (step[0] % 100)
        pub.publish(stream_trajectory(NAMES, [p + wiggle for p in home], 1.0 / rate))

    node.create_timer(1.0 / rate, tick)
    try:
        spin_until_shutdown(node)
    finally:
        node.destroy_node()
        shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one role until a signal."""
    parser = argparse.ArgumentParser(description='control-tick bench child (bench_control_tick)')
    roles = parser.add_subparsers(dest='role', required=True)
    recorder = roles.add_parser('recorder')
    recorder.add_argument('out')
    recorder.add_argument('topics', nargs='+')
    bare = roles.add_parser('bare')
    bare.add_argument('topic')
    bare.add_argument('rate', type=float)
    args = parser.parse_args(argv)
    if args.role == 'recorder':
        return run_recorder(args.topics, args.out)
    return run_bare(args.topic, args.rate)


if __name__ == '__main__':
    sys.exit(main())
