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


def run_without(modules, call):
    """Run `call` (Python source) in a child where `modules` cannot be imported."""
    code = (f'import sys\nfor name in {modules!r}:\n    sys.modules[name] = None\n'
            f'from sequence_ai_ros import cli\n{call}')
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60)


def test_the_gateway_executable_without_its_extras_says_what_to_install():
    # What `ros2 launch sequence_ai_ros demo.launch.py` runs, on a robot set up for the node.
    result = run_without(['starlette', 'uvicorn'],
                         "sys.argv = ['sequence_ai_gateway', '--help']; "
                         'sys.exit(cli.gateway_main())')
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(
        'sequence_ai_gateway: needs starlette, uvicorn, not installed here')
    assert 'pip install "sequence_ai_ros[gateway]"' in result.stderr
    assert 'Traceback' not in result.stderr and result.stdout == ''


def test_the_demo_without_matplotlib_says_what_to_install():
    result = run_without(['matplotlib'], "sys.exit(cli.main(['demo', '--no-compare']))")
    assert result.returncode == 2, result.stderr
    assert 'sequence-ai-ros demo: needs matplotlib' in result.stderr
    assert 'pip install "sequence_ai_ros[gateway,demo]"' in result.stderr
    assert 'Traceback' not in result.stderr


def test_the_gateway_and_the_demo_are_extras_and_the_core_needs_only_httpx():
    from importlib.metadata import requires
    requirements = requires('sequence_ai_ros') or []
    core = {r.split('>')[0].split(';')[0].strip() for r in requirements if 'extra ==' not in r}
    assert core == {'setuptools', 'httpx'}, requirements

    def extra(name):
        return {r.split(';')[0].strip().lower() for r in requirements
                if f'extra == "{name}"' in r}
    assert {'starlette', 'uvicorn'} <= extra('gateway')
    assert {'matplotlib', 'starlette', 'uvicorn'} <= extra('demo')
    assert not {'starlette', 'uvicorn', 'matplotlib'} & extra('ros')
