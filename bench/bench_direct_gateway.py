"""
The local gateway's two protocols side by side: v1 (POST /v1/act) and direct (connect + worker).

Run: .venv/bin/python -m bench.bench_direct_gateway [--acts N] [--connects N] [--out PATH]

One gateway (`--protocol both`, real time, no simulated inference time: --latency-median-s 0,
so what is timed is the wire and the gateway) serves both, with plain httpx clients sending the
same robot-arm observation (two 224x224 JPEG frames, 7 joints, a gripper):

  connect            v1: a new keep-alive connection's first answer (GET /v1/health); direct:
                     POST /v1/act/connect on a new connection, then the worker's TLS handshake
                     and GET /ping (what the sequence-ai client's prewarm does); the clients
                     are made before the clock starts
  first act, cold    from a cold model (--cold-start-s, 2 s here) to the first chunk, asking
                     every 50 ms; v1 on pi05-droid, direct on lingbot-va-5b (the same cold
                     start), each its own model so neither warms the other's
  act                warm, interleaved act by act: v1 one POST /v1/act with the observation;
                     direct one POST /observe (msgpack) and one POST /act (a call, JSON), on
                     kept-alive connections; and the direct /act alone

Prints a markdown table (p50, p95, and direct / v1), and writes it to --out.
"""

import argparse
import base64
import io
from pathlib import Path
import statistics
import time
from typing import Any

import httpx
from PIL import Image, ImageDraw
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.harness.direct_session import DirectSession

from ._record import command_line, header

KEY = 'seq_bench_direct_gateway_key_0001'
PREFIX = 'accounts/sequences/models/'
COLD_START_S = 2.0
DEFAULT_OUT = '/tmp/bench_direct_gateway.md'


def _jpeg(colour: tuple[int, int, int], disc: bool) -> str:
    image = Image.new('RGB', (224, 224), colour)
    if disc:
        ImageDraw.Draw(image).ellipse([140, 60, 160, 80], fill=(220, 30, 30))
    buffer = io.BytesIO()
    image.save(buffer, 'JPEG', quality=95)
    return base64.b64encode(buffer.getvalue()).decode('ascii')


def observation() -> dict[str, Any]:
    """Return the robot-arm observation both protocols send (the direct gripper is a list)."""
    return {'images': [{'view': 'exterior_1', 'data': _jpeg((150, 120, 90), True),
                        'timestamp_ms': 1},
                       {'view': 'wrist', 'data': _jpeg((40, 40, 40), False), 'timestamp_ms': 1}],
            'proprioception': {'joint_positions': [0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8],
                               'gripper': [0.0]},
            'instruction': 'reach above the red disc'}


def v1_body(model: str, obs: dict[str, Any]) -> dict[str, Any]:
    """Return the /v1/act body of `obs` (its gripper a number, as v1 has it)."""
    prop = dict(obs['proprioception'], gripper=obs['proprioception']['gripper'][0])
    return {'model': PREFIX + model, 'observation': dict(obs, proprioception=prop)}


def direct_session(base_url: str, model: str, session: str) -> DirectSession:
    """Return a session with the bench's key and a 30 s timeout."""
    return DirectSession(base_url, model, KEY, session, timeout_s=30.0)


def release(robot: DirectSession) -> None:
    """Give the seat back and close the session."""
    robot.release()
    robot.close()


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


def connects(base_url: str, n: int) -> tuple[list[float], list[float]]:
    """Return the times of `n` v1 first answers and of `n` direct connects, worker included."""
    v1, direct = [], []
    for i in range(n):
        with httpx.Client(base_url=base_url, timeout=30.0) as client:
            began = time.perf_counter()  # the client made: a new connection's first answer
            client.get('/v1/health').raise_for_status()
            v1.append(_ms(began))
        robot = direct_session(base_url, 'pi05-droid', f'bench-connect-{i:04d}')
        began = time.perf_counter()
        robot.connect(ping=True).raise_for_status()
        direct.append(_ms(began))
        release(robot)
    return v1, direct


def first_cold_act(base_url: str, obs: dict[str, Any]) -> tuple[float, float]:
    """Time from a cold model to the first chunk on each protocol, asking every 50 ms."""
    with httpx.Client(base_url=base_url, timeout=30.0,
                      headers={'Authorization': f'Bearer {KEY}'}) as client:
        began = time.perf_counter()
        while client.post('/v1/act', json=v1_body('pi05-droid', obs)).status_code == 503:
            time.sleep(0.05)
        v1 = _ms(began)
    robot = direct_session(base_url, 'lingbot-va-5b', 'bench-cold-0001')
    try:
        began = time.perf_counter()
        while robot.connect(ping=True).status_code == 503:
            time.sleep(0.05)
        robot.observe('cold', obs).raise_for_status()
        robot.act('cold').raise_for_status()
        direct = _ms(began)
    finally:
        release(robot)
    return v1, direct


def acts(base_url: str, obs: dict[str, Any], n: int) -> dict[str, list[float]]:
    """Time `n` warm acts on each protocol, interleaved act by act."""
    times: dict[str, list[float]] = {'v1': [], 'direct': [], 'direct /act': []}
    body = v1_body('pi05-droid', obs)
    robot = direct_session(base_url, 'pi05-droid', 'bench-acts-0001')
    with httpx.Client(base_url=base_url, timeout=30.0,
                      headers={'Authorization': f'Bearer {KEY}'}) as client:
        try:
            robot.connect(ping=True).raise_for_status()
            for i in range(n + 5):
                began = time.perf_counter()
                client.post('/v1/act', json=body).raise_for_status()
                v1 = _ms(began)
                began = time.perf_counter()
                robot.observe('acts', obs).raise_for_status()
                act_began = time.perf_counter()
                robot.act('acts').raise_for_status()
                direct, act_only = _ms(began), _ms(act_began)
                if i >= 5:  # the first few warm the connections and the policy
                    times['v1'].append(v1)
                    times['direct'].append(direct)
                    times['direct /act'].append(act_only)
        finally:
            release(robot)
    return times


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method='inclusive')[int(q) - 1] \
        if len(values) > 1 else values[0]


def table(rows: list[tuple[str, list[float], list[float]]]) -> str:
    """Return the markdown table: p50 and p95 of v1 and direct, and direct / v1 at p50."""
    lines = ['| measure | v1 p50 ms | v1 p95 ms | direct p50 ms | direct p95 ms | direct / v1 |',
             '|---|---:|---:|---:|---:|---:|']
    for name, v1, direct in rows:
        lines.append(f'| {name} | {_pct(v1, 50):.1f} | {_pct(v1, 95):.1f} | '
                     f'{_pct(direct, 50):.1f} | {_pct(direct, 95):.1f} | '
                     f'{_pct(direct, 50) / _pct(v1, 50):.2f} |')
    return '\n'.join(lines)


def main() -> None:
    """Run the three measures on one gateway and print (and write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--acts', type=int, default=200)
    parser.add_argument('--connects', type=int, default=30)
    parser.add_argument('--out', default=DEFAULT_OUT)
    args = parser.parse_args()
    started = time.monotonic()
    obs = observation()
    flags = ['--protocol', 'both', '--latency-median-s', '0', '--cold-start-s',
             str(COLD_START_S), '--seats', '4', '--log-level', 'warning']
    with GatewayProcess(flags, keys={KEY: 10 ** 6}) as gateway:
        v1_cold, direct_cold = first_cold_act(gateway.base_url, obs)
        v1_connect, direct_connect = connects(gateway.base_url, args.connects)
        times = acts(gateway.base_url, obs, args.acts)
    body = table([
        (f'connect (n={args.connects})', v1_connect, direct_connect),
        (f'first act after a {COLD_START_S:g} s cold start (n=1)', [v1_cold], [direct_cold]),
        (f'act, observation included (n={args.acts})', times['v1'], times['direct']),
        (f'act: direct /act alone (n={args.acts})', times['v1'], times['direct /act']),
    ])
    command = command_line('bench.bench_direct_gateway', None)
    text = header(command, time.monotonic() - started) + '\n\n' + body
    print(text)
    Path(args.out).write_text(text + '\n', encoding='utf-8')


if __name__ == '__main__':
    main()
