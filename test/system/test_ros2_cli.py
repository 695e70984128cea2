"""
The commands of docs/OPERATING.md, typed as an operator types them, against a `ros2 launch` node.

`ros2 lifecycle`, `ros2 param`, `ros2 topic echo /diagnostics` and `ros2 service call` are
ros2cli's own verbs from the shared wheelhouse, run as separate processes against
policy.launch.py with autostart:=false, the way an operator brings a robot up by hand. Where
ros2cli is not installed each test skips naming what is missing. As typed, the verbs use the
ros2 daemon (the first one starts it; it keeps the graph, so later verbs need no discovery
of their own: with --no-daemon each waits only 0.5 s, too little on a loaded machine); the
session ends by stopping it. A verb run right after a change may need a second try
(ros2_tools.ros2 retries).
"""

import re
import subprocess

import pytest
from ros2_tools import (
    CLI,
    colcon_install,
    ends_cleanly_on_ctrl_c,
    LAUNCH,
    overlay_env,
    PACKAGE,
    PLACEHOLDER_KEY,
    require,
    ros2,
    SCALE,
    sim_arm,
    start,
    UP_S,
)

NODE = '/op/policy_node'


@pytest.fixture(scope='module')
def operated(tmp_path_factory):
    """policy.launch.py autostart:=false model:=lingbot_va_5b in /op, with its sim arm."""
    require(*LAUNCH, *CLI)
    from sequence_ai_ros.gateway.process import GatewayProcess
    install = colcon_install(tmp_path_factory.mktemp('ws'))
    cwd = tmp_path_factory.mktemp('cli')
    env = overlay_env(install, cwd / 'ros_log')
    env['SEQUENCES_API_KEY'] = PLACEHOLDER_KEY
    started = []
    with GatewayProcess(['--time-scale', SCALE, '--start-warm']) as gateway:
        try:
            sim_arm(started, env, cwd, 'op')
            launch = start(started, [
                'launch', PACKAGE, 'policy.launch.py', 'namespace:=op', 'autostart:=false',
                'model:=lingbot_va_5b', f'base_url:={gateway.base_url}',
                'hold_service:=sim_arm/hold'], env, cwd)
            launch.wait_for('process started', UP_S)
            yield {'env': env, 'cwd': cwd, 'launch': launch}
        finally:
            for proc in reversed(started):
                proc.close()
            subprocess.run(['ros2', 'daemon', 'stop'], env=env, cwd=cwd, capture_output=True,
                           timeout=60)


def run(operated, *args, expect, tries=5):
    """Type `ros2 <args>`; return its output once it matches the regex `expect`."""
    return ros2(list(args), operated['env'], operated['cwd'], expect, tries=tries)


# One operator session, in order: each test is the next command (pytest keeps file order).

def test_lifecycle_get_shows_unconfigured(operated):
    run(operated, 'lifecycle', 'get', NODE, expect='unconfigured')


def test_param_describe_shows_type_description_and_range(operated):
    out = run(operated, 'param', 'describe', NODE, 'max_actions',
              expect='Type: integer')
    assert 'there is no unbounded mode' in out, out
    assert 'Min value: 0' in out and 'Max value: 10000000' in out, out


def test_param_get_shows_the_model_argument_applied(operated):
    run(operated, 'param', 'get', NODE, 'model', expect='lingbot-va-5b')


def test_param_set_changes_configure_time_parameters_while_unconfigured(operated):
    run(operated, 'param', 'set', NODE, 'max_actions', '600',
        expect='Set parameter successful')
    run(operated, 'param', 'set', NODE, 'start_on_activate', 'false',
        expect='Set parameter successful')
    run(operated, 'param', 'get', NODE, 'max_actions', expect='Integer value is: 600')


def test_lifecycle_set_configure_then_activate(operated):
    run(operated, 'lifecycle', 'set', NODE, 'configure',
        expect='Transitioning successful')
    run(operated, 'lifecycle', 'set', NODE, 'activate',
        expect='Transitioning successful')
    run(operated, 'lifecycle', 'get', NODE, expect='active')


def test_param_set_refuses_a_configure_time_parameter_once_configured(operated):
    out = run(operated, 'param', 'set', NODE, 'max_actions', '99',
              expect='Setting parameter failed')
    assert 'max_actions' in out, out


def test_topic_echo_diagnostics_shows_the_node_s_four_statuses(operated):
    out = run(operated, 'topic', 'echo', '/diagnostics', '--once',
              expect='policy_node: episode')
    for part in ('gateway', 'buffer', 'inputs', 'episode'):
        assert f'policy_node: {part}' in out, out
    assert f'hardware_id: {NODE}' in out, out
    # start_on_activate is false: active, and idle until asked.
    assert 'idle: no episode' in out, out


def test_service_call_start_episode_runs_one(operated):
    out = run(operated, 'service', 'call', f'{NODE}/start_episode', 'std_srvs/srv/Trigger',
              expect='success=True')
    assert 'episode started' in out, out
    # The episode status on /diagnostics keeps its outcome once the episode has ended.
    out = run(operated, 'topic', 'echo', '/diagnostics', '--once',
              expect=r'key: outcome\s+value: completed', tries=15)
    assert re.search(r"key: actions\s+value: '?600'?", out), out


def test_param_set_instruction_at_run_time(operated):
    run(operated, 'param', 'set', NODE, 'instruction', 'stack the two cubes',
        expect='Set parameter successful')
    run(operated, 'param', 'get', NODE, 'instruction', expect='stack the two cubes')


def test_lifecycle_set_deactivate_then_ctrl_c_ends_cleanly(operated):
    run(operated, 'lifecycle', 'set', NODE, 'deactivate',
        expect='Transitioning successful')
    run(operated, 'lifecycle', 'get', NODE, expect='inactive')
    ends_cleanly_on_ctrl_c(operated['launch'])
    run(operated, 'daemon', 'stop', expect='daemon')
    run(operated, 'daemon', 'status', expect='The daemon is not running')
