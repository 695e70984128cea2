"""Build and install sequence_ai_ros as an ament_python package (colcon) or a plain pip package."""

from glob import glob
import os

from setuptools import find_packages, setup

PACKAGE = 'sequence_ai_ros'


def share(subdir: str, pattern: str) -> tuple[str, list[str]]:
    """Return a data_files entry installing subdir/pattern under share/<package>/subdir."""
    return (os.path.join('share', PACKAGE, subdir), sorted(glob(os.path.join(subdir, pattern))))


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench', 'bench.*']),
    package_data={'sequence_ai_ros.gateway': ['*.json']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
        share('launch', '*.launch.py'),
        share('config', '*.yaml'),
        share('config/ros2_control', '*.yaml'),
    ],
    python_requires='>=3.10',
    # The client core: httpx 0.21.3 passes its tests, older than any Ubuntu 22.04 ships.
    install_requires=['setuptools', 'httpx>=0.21'],
    extras_require={
        # The policy node and the sim arm (rclpy and messages: ROS, or PyPI's ros-* wheels).
        'ros': ['numpy', 'pillow'],
        # Optional: the local gateway and the demo's picture; the node needs neither.
        'gateway': ['starlette', 'uvicorn', 'numpy', 'pillow', 'msgpack', 'websockets>=15',
                    'cryptography'],
        'demo': ['matplotlib', 'starlette', 'uvicorn', 'numpy', 'pillow', 'msgpack',
                 'cryptography'],
        # Optional: episode recording (MCAP files) and `sequence-ai-ros report` (with 'demo').
        # mcap-ros2-support is a rosdep key (pip) on Humble, Jazzy and Kilted; it brings mcap.
        'record': ['mcap>=1.6', 'mcap-ros2-support>=0.6'],
        # Optional: `sequence-ai-ros export --format lerobot` (with 'record'): parquet and video.
        'dataset': ['pyarrow>=21', 'av>=12', 'numpy', 'pillow'],
        # Optional: the gateway on Ray Serve (`gateway --ray`), replicas of the policy.
        'ray': ['ray[serve]', 'starlette', 'uvicorn', 'numpy', 'pillow'],
        'test': ['pytest', 'ruff', 'mypy', 'vermin'],
    },
    zip_safe=False,
    maintainer='sequence_ai_ros maintainers',
    maintainer_email='maintainers@sequence-ai-ros.invalid',
    description='Drive a ROS 2 arm from a cloud-served robot policy, smoothly and safely.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            # Prefixed: a pip install puts these on a venv's PATH beside other packages' tools.
            'sequence_ai_policy_node = sequence_ai_ros.node.main:main',
            'sequence_ai_sim_arm = sequence_ai_ros.sim.main:main',
            'sequence_ai_gateway = sequence_ai_ros.cli:gateway_main',
            'sequence-ai-ros = sequence_ai_ros.cli:main',
        ],
    },
)
