"""The package's promises about itself: a ROS-free, httpx-only client core."""

import subprocess
import sys

HEAVY = ('rclpy', 'numpy', 'PIL', 'starlette', 'uvicorn', 'yaml')


def test_importing_the_package_loads_only_the_client_core():
    code = ('import sys, sequence_ai_ros as sai; '
            'sai.connect; sai.models; sai.Policy; sai.RunOutcome; '
            f'print(",".join(m for m in {HEAVY!r} if m in sys.modules))')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == '', f'importing sequence_ai_ros loaded {result.stdout}'


def test_the_public_api_has_the_seeds_names():
    import sequence_ai_ros as sai
    for name in ('connect', 'models', 'Policy', 'Observation', 'ImageFrame', 'Proprioception',
                 'ActionChunk', 'Prediction', 'RunOutcome', 'Model', 'SequencesError',
                 'AuthError', 'OutOfCredit', 'InvalidRequest', 'Unavailable', 'ChunkExhausted'):
        assert hasattr(sai, name), name
    assert issubclass(sai.Unavailable, sai.SequencesError)
