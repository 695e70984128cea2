"""
Fixtures that start the local gateway as a real process, and helpers to build requests.

Every gateway here runs at a small --time-scale, so model seconds pass 50-100x faster.
"""

import base64
import io
import json
from pathlib import Path
import shutil
import subprocess

import httpx
import numpy as np
from PIL import Image, ImageDraw
import pytest
from sequence_ai_ros.gateway.process import GatewayProcess
from sequence_ai_ros.world import arm_model

__all__ = ['cold_gateway', 'direct_gateway', 'gateway', 'http', 'open_gateway', 'plugin_gateway',
           'queue_gateway', 'small_body_gateway', 'tls_files', 'tls_gateway']

PREFIX = 'accounts/sequences/models/'
MODELS = ('pi05-droid', 'cosmos3-edge-policy-droid', 'lingbot-va-5b', 'lingbot-vla-v2-6b')
TIME_SCALE = 0.02
MAIN_KEY = 'seq_main_key_for_gateway_tests_0001'
TWO_CREDIT_KEY = 'seq_two_credit_key_for_tests_0002'
CLIENT_KEY = 'seq_published_client_key_0003'
CLIENT_TWO_CREDIT_KEY = 'seq_published_client_two_0004'
TEST_KEYS = {MAIN_KEY: 100000, TWO_CREDIT_KEY: 2, CLIENT_KEY: 1000, CLIENT_TWO_CREDIT_KEY: 2}
AUTH = {'Authorization': f'Bearer {MAIN_KEY}'}
# The policy node tests' gateway (ros_harness): keyed for NODE_KEY, at NODE_SCALE.
NODE_KEY = 'seq_node_tests_key_0000000000001'
NODE_GATEWAY_KEYS = {NODE_KEY: 10**6}
NODE_SCALE = 0.2  # pi05-droid: 15 steps at 75 Hz, a 0.2 s chunk
TEST_DIR = str(Path(__file__).resolve().parent)
REPO_ROOT = str(Path(__file__).resolve().parents[1])


# -- requests -------------------------------------------------------------------------------

def render_scene(target_xy: tuple[float, float] | None, frame: tuple[int, int] = (320, 240),
                 table_box: tuple[int, int, int, int] = (40, 20, 280, 220), out: int = 224,
                 q: np.ndarray = arm_model.HOME) -> Image.Image:
    """Draw a top-down camera frame: floor, table, red disc, arm; letterboxed into out x out."""
    image = Image.new('RGB', frame, (90, 90, 95))
    draw = ImageDraw.Draw(image)
    x0, y0, x1, y1 = table_box
    draw.rectangle([x0, y0, x1 - 1, y1 - 1], fill=arm_model.TABLE_RGB)

    def pixel(x: float, y: float) -> tuple[float, float]:
        u, v = arm_model.world_to_table_uv(x, y)
        return x0 + u * (x1 - x0), y0 + v * (y1 - y0)

    if target_xy is not None:
        cx, cy = pixel(*target_xy)
        radius = 0.03 * (x1 - x0)
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius],
                     fill=arm_model.TARGET_RGB)
    tool = arm_model.tool_position(q)
    draw.line([pixel(0.0, 0.0), pixel(tool[0], tool[1])], fill=arm_model.ARM_RGB, width=8)
    scale = out / max(frame)
    small = image.resize((round(frame[0] * scale), round(frame[1] * scale)))
    canvas = Image.new('RGB', (out, out))
    canvas.paste(small, ((out - small.width) // 2, (out - small.height) // 2))
    return canvas


def encode(image: Image.Image, fmt: str = 'JPEG') -> str:
    """Base64 of the image as JPEG (quality 92) or PNG."""
    buffer = io.BytesIO()
    image.save(buffer, fmt, **({'quality': 92} if fmt == 'JPEG' else {}))
    return base64.b64encode(buffer.getvalue()).decode('ascii')


def act_body(model: str = 'pi05-droid', target_xy: tuple[float, float] | None = (0.55, 0.2),
             q: np.ndarray = arm_model.HOME, **options: object) -> dict:
    """Build a valid /v1/act body with both camera views and HOME joints."""
    frame = encode(render_scene(target_xy, q=q))
    wrist = encode(Image.new('RGB', (224, 224), (40, 40, 40)))
    return {
        'model': PREFIX + model,
        'observation': {
            'images': [{'view': 'exterior_1', 'data': frame, 'timestamp_ms': 1732900000000},
                       {'view': 'wrist', 'data': wrist, 'timestamp_ms': 1732900000000}],
            'proprioception': {'joint_positions': [float(v) for v in q], 'gripper': 0.0},
            'instruction': 'reach above the red disc',
        },
        **options,
    }


def preset_observation(target_xy: tuple[float, float] | None = (0.55, 0.2),
                       q: np.ndarray = arm_model.HOME, size: int = 224,
                       instruction: str = 'reach above the red disc') -> dict:
    """Build the robot-arm preset Observation the direct protocol's local deployments read."""
    scene = render_scene(target_xy, q=q, out=size)
    wrist = Image.new('RGB', (size, size), (40, 40, 40))
    return {
        'images': [{'view': 'exterior_1', 'data': encode(scene), 'timestamp_ms': 1732900000000},
                   {'view': 'wrist', 'data': encode(wrist), 'timestamp_ms': 1732900000000}],
        'proprioception': {'joint_positions': [float(v) for v in q], 'gripper': [0.0]},
        'instruction': instruction,
    }


def raw_json(body: object) -> bytes:
    """JSON text that may carry NaN/Infinity (httpx's json= refuses them)."""
    return json.dumps(body, allow_nan=True).encode()


def integrate(chunk: dict, q0: np.ndarray) -> np.ndarray:
    """Joint positions after each step of a wire chunk: shape (n + 1, 7), row 0 = q0."""
    rows = np.array([step['values'] for step in chunk['steps']])
    space, hz = chunk['action_space'], chunk['control_frequency_hz']
    if space == 'joint_velocity':
        joints = q0 + np.cumsum(rows[:, :7] / hz, axis=0)
    elif space == 'joint_delta':
        joints = q0 + np.cumsum(rows[:, :7], axis=0)
    else:
        joints = rows[:, :7]
    return np.vstack([q0, joints])


# -- policy plug-in served by the plug-in fixture (imported by the gateway subprocess) --------

class PluginPolicy:
    """A `--policy` plug-in whose behaviour the instruction picks (to test the 500 paths)."""

    def __init__(self, profile: object) -> None:
        self.profile = profile

    def act(self, observation: dict, options: dict, rng: np.random.Generator) -> object:
        steps, dim = (options['action_horizon'],
                      self.profile.action_dim)  # type: ignore[attr-defined]
        mode = observation['instruction']
        if mode == 'raise':
            raise RuntimeError('plug-in exploded')
        if mode == 'shape':
            return [[0.0] * (dim - 1)] * steps
        if mode == 'nan':
            return [[float('nan')] * dim] * steps
        width = observation['images']['exterior_1'].width
        rows = [[i * 0.001] * (dim - 1) + [width] for i in range(steps)]
        return rows, [f'plug-in saw {sorted(observation["images"])}']


def make_plugin_policy(profile: object) -> PluginPolicy:
    """Make a PluginPolicy: the factory named on the plug-in gateway's command line."""
    return PluginPolicy(profile)


# -- gateways -------------------------------------------------------------------------------

def start_gateway(args: list[str], **kwargs: object) -> GatewayProcess:
    """Return a started GatewayProcess at TIME_SCALE with extra flags."""
    return GatewayProcess(['--time-scale', str(TIME_SCALE), *args], **kwargs).start()


def gateway_fixture(args: list[str], *, name: str = 'gateway', scope: str = 'module',
                    doc: str = '', **kwargs: object):
    """
    Return a fixture `name` yielding a started `GatewayProcess(args, **kwargs)`, closed after.

    A test file binds it to a module name (`gateway = gateway_fixture([...], keys=...)`) in
    place of defining its own fixture; `args` are all the flags, time scale included.
    """
    def fixture():
        with GatewayProcess(list(args), **kwargs) as process:
            yield process
    fixture.__doc__ = doc or f'A local gateway: {" ".join(args)}.'
    return pytest.fixture(scope=scope, name=name)(fixture)


gateway = gateway_fixture(
    ['--time-scale', str(TIME_SCALE), '--start-warm', '--seed', '7', '--idle-cold-s', '1000000'],
    scope='session', keys=TEST_KEYS,
    doc='Warm, keyed, default concurrency: the workhorse; stays warm through long idle modules.')


@pytest.fixture(scope='session')
def http(gateway):
    """One keep-alive client on the main gateway, authorised with MAIN_KEY."""
    with httpx.Client(base_url=gateway.base_url, headers=AUTH, timeout=10.0) as client:
        yield client


def node_gateway_args(latency_median_s: float = 0.4, *args: str) -> list[str]:
    """
    Return the flags of a warm gateway at NODE_SCALE (NODE_GATEWAY_KEYS are its keys).

    `latency_median_s` is in model seconds (0.4 = 0.08 s here, room for a loaded machine).
    """
    return ['--time-scale', str(NODE_SCALE), '--start-warm', '--latency-median-s',
            str(latency_median_s), *args]


def start_node_gateway(latency_median_s: float = 0.4, *args: str) -> GatewayProcess:
    """Start a warm gateway at NODE_SCALE keyed for NODE_KEY; the caller closes it."""
    return GatewayProcess(node_gateway_args(latency_median_s, *args),
                          keys=NODE_GATEWAY_KEYS).start()


def node_gateway_fixture(latency_median_s: float = 0.4, name: str = 'gateway'):
    """Return a module's fixture `name`: start_node_gateway's gateway."""
    return gateway_fixture(node_gateway_args(latency_median_s), name=name,
                           keys=NODE_GATEWAY_KEYS)


DIRECT_ARGS = ['--time-scale', str(TIME_SCALE), '--protocol', 'direct', '--start-warm',
               '--seats', '2', '--seat-ttl-s', '100', '--idle-cold-s', '1000000']
direct_gateway = gateway_fixture(
    DIRECT_ARGS, name='direct_gateway', keys=TEST_KEYS,
    doc='The direct protocol only, warm, keyed: two seats per deployment, kept 2 s unkept.')
open_gateway = gateway_fixture(['--time-scale', str(TIME_SCALE), '--start-warm'],
                               name='open_gateway', doc='No keys at all: auth disabled.')
cold_gateway = gateway_fixture(
    ['--time-scale', '0.01', '--cold-start-s', '50', '--idle-cold-s', '40'],
    name='cold_gateway', keys={MAIN_KEY: 1000},
    doc='Cold workers: 50 model s to warm (0.5 s here), cold again after 40 model s idle.')
queue_gateway = gateway_fixture(
    ['--time-scale', str(TIME_SCALE), '--start-warm', '--concurrency', '2',
     '--latency-median-s', '5'], name='queue_gateway',
    doc='Two inferences at a time per model, each ~5 model s (0.1 s here).')
small_body_gateway = gateway_fixture(
    ['--time-scale', str(TIME_SCALE), '--start-warm', '--max-body-bytes', '200000'],
    name='small_body_gateway', doc='Refusing bodies over 200 kB.')
plugin_gateway = gateway_fixture(
    ['--time-scale', str(TIME_SCALE), '--start-warm', '--policy',
     'fixtures_gateway:make_plugin_policy'], name='plugin_gateway', import_paths=[TEST_DIR],
    doc='A gateway serving PluginPolicy instead of the reference policy.')


@pytest.fixture(scope='module')
def tls_files(tmp_path_factory):
    """Make a self-signed certificate for 127.0.0.1 with the openssl CLI."""
    openssl = shutil.which('openssl')
    if openssl is None:
        pytest.skip('no openssl CLI to make a self-signed certificate')
    folder = tmp_path_factory.mktemp('tls')
    cert, key = folder / 'cert.pem', folder / 'key.pem'
    subprocess.run([openssl, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
                    '-keyout', str(key), '-out', str(cert), '-subj', '/CN=127.0.0.1',
                    '-addext', 'subjectAltName=IP:127.0.0.1'],
                   check=True, capture_output=True)
    return str(cert), str(key)


@pytest.fixture(scope='module')
def tls_gateway(tls_files):  # needs tls_files: not one gateway_fixture makes
    """Serve HTTPS, warm, keyed (TEST_KEYS), with a self-signed certificate no CA signs."""
    cert, key = tls_files
    with GatewayProcess(['--time-scale', str(TIME_SCALE), '--start-warm'], keys=TEST_KEYS,
                        certfile=cert, keyfile=key) as process:
        yield process
