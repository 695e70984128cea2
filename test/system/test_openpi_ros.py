"""
Done criterion of the openpi adapter: a self-hosted openpi server drives the simulated arm.

The demo's loop (a real sim_arm under simulated ros2_control, a real policy node, prefetch
on) runs one episode against a gateway started with `--openpi` in front of the openpi test
server process; the server's policy steers the joints toward its target.
"""

import numpy as np
from openpi_process import OpenpiServerProcess
from openpi_server import TARGET
from sequence_ai_ros.demo import runner
from sequence_ai_ros.gateway.process import GatewayProcess
from system.test_demo import demo


def test_an_openpi_server_drives_the_simulated_arm_through_an_episode(tmp_path, monkeypatch):
    with OpenpiServerProcess() as server:
        gateways = []

        def openpi_gateway(flags, **kwargs):
            # The demo's own gateway, started with --openpi (its flags keep time at scale 1).
            gateways.append(GatewayProcess([*flags, '--openpi', server.url], **kwargs))
            return gateways[-1]
        monkeypatch.setattr(runner, 'GatewayProcess', openpi_gateway)
        instance, status, text = demo('--warm', '--no-compare', '--time-scale', '1.0',
                                      '--actions', '45', '--out', str(tmp_path / 'd.png'))
        assert status == 0, text
    (run,) = instance.runs
    assert run.prefetch and run.data.outcome['outcome'] == 'completed', text
    assert run.data.outcome['actions'] == 45, run.data.outcome
    assert run.data.controller_errors == [], run.data.controller_errors
    joints = np.array([positions[:7] for _, positions in run.data.joint_states])
    start, end = (np.linalg.norm(TARGET - joints[i]) for i in (0, -1))
    assert end < start - 0.5, f'the arm did not go toward the target: {start:.3f} -> {end:.3f}'
    # Only the openpi server's policy steers toward TARGET (the reference one seeks the disc).
    assert len(gateways) == 1 and gateways[0].args[-2:] == ['--openpi', server.url]
