"""
openpi's websocket policy server, its rules ported, serving a deterministic DROID-like policy.

Run as a real process: `python test/openpi_server.py --port N`. The server follows
Physical-Intelligence/openpi, main, src/openpi/serving/websocket_policy_server.py:

- `websockets.asyncio.server.serve(handler, host, port, compression=None, max_size=None,
  process_request=_health_check)`, and `GET /healthz` answers 200 "OK" (`_health_check`);
- on each connection the metadata dict goes first (`await websocket.send(packer.pack(
  self._metadata))`), then per binary message: unpack, `policy.infer(obs)`, add
  `server_timing = {'infer_ms': ...}` and, from the second answer on, `prev_total_ms` (the
  previous cycle's infer + send), pack and send;
- when inference raises, the traceback goes to the client as a text message and the socket
  closes with 1011 INTERNAL_ERROR "Internal server error. Traceback included in previous
  frame."; a closed connection just ends the handler.

The policy reads the DROID example's keys (examples/droid/main.py) and, as openpi's
`Policy.infer` does (src/openpi/policies/policy.py), adds `policy_timing`. Its actions are 15
steps of 7 joint velocities + a gripper position that drive the arm toward `TARGET`, so any
result can be checked; the prompt `fault:<kind>` makes it misbehave for the fault tests.
"""

import argparse
import asyncio
import http
import time
import traceback

import numpy as np
from sequence_ai_ros.gateway.openpi.codec import packb, unpackb
import websockets.asyncio.server as ws_server
import websockets.exceptions
import websockets.frames

HORIZON, HZ = 15, 15.0
TARGET = np.array([0.4, -0.3, 0.2, -1.9, 0.1, 1.9, 0.5])
GAIN, MAX_SPEED = 2.0, 0.6  # 1/s and rad/s
METADATA = {'policy': 'droid-reach-test', 'action_horizon': HORIZON}
IMAGE_KEYS = ('observation/exterior_image_1_left', 'observation/wrist_image_left')


def reach_chunk(q0):
    """Return the policy's actions for joint positions `q0`: (15, 8) float32."""
    q, rows = np.asarray(q0, dtype=np.float64), []
    for _ in range(HORIZON):
        velocity = np.clip(GAIN * (TARGET - q), -MAX_SPEED, MAX_SPEED)
        q = q + velocity / HZ
        closed = float(np.abs(TARGET - q).max() < 0.05)
        rows.append([*velocity, closed])
    return np.asarray(rows, dtype=np.float32)


def infer(obs):
    """Answer as the DROID-like policy, checking the keys as openpi's DROID inputs would."""
    started = time.monotonic()
    for key in IMAGE_KEYS:
        image = obs[key]
        if image.dtype != np.uint8 or image.shape != (224, 224, 3):
            raise ValueError(f'{key}: expected uint8 (224, 224, 3), got {image.dtype} '
                             f'{image.shape}')
    joints, gripper = obs['observation/joint_position'], obs['observation/gripper_position']
    if joints.shape != (7,) or gripper.shape != (1,):
        raise ValueError(f'joint_position {joints.shape}, gripper_position {gripper.shape}')
    fault = obs['prompt'].removeprefix('fault:') if obs['prompt'].startswith('fault:') else ''
    if fault == 'raise':
        raise RuntimeError('the model fell over')
    actions = reach_chunk(joints)
    if fault == 'nan':
        actions[3, 2] = np.nan
    answer = {'actions': actions[:4] if fault == 'short' else actions}
    if fault == 'no-actions':
        answer = {'action': actions}
    answer['policy_timing'] = {'infer_ms': (time.monotonic() - started) * 1000}
    return answer


async def handler(websocket):
    """One connection, as WebsocketPolicyServer._handler."""
    await websocket.send(packb(METADATA))
    prev_total = None
    while True:
        try:
            started = time.monotonic()
            obs = unpackb(await websocket.recv())
            infer_started = time.monotonic()
            action = infer(obs)
            action['server_timing'] = {'infer_ms': (time.monotonic() - infer_started) * 1000}
            if prev_total is not None:
                action['server_timing']['prev_total_ms'] = prev_total * 1000
            await websocket.send(packb(action))
            prev_total = time.monotonic() - started
        except websockets.exceptions.ConnectionClosed:
            break
        except Exception:
            await websocket.send(traceback.format_exc())
            await websocket.close(
                code=websockets.frames.CloseCode.INTERNAL_ERROR,
                reason='Internal server error. Traceback included in previous frame.')
            raise


def health_check(connection, request):
    """`GET /healthz` is 200 OK; anything else goes on to the websocket handshake."""
    if request.path == '/healthz':
        return connection.respond(http.HTTPStatus.OK, 'OK\n')
    return None


async def serve(host, port):
    async with ws_server.serve(handler, host, port, compression=None, max_size=None,
                               process_request=health_check) as server:
        await server.serve_forever()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))
