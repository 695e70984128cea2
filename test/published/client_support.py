"""What the published client's tests share: keys, observations, gateways (rule: __init__)."""

import base64
import io

from sequence_ai_ros.gateway.process import GatewayProcess

TIME_SCALE = 0.02
KEY = 'seq_published_direct_key_000001'
TWO_CREDIT_KEY = 'seq_published_two_credits_0002'
ROBOT_KEY = 'seq_robot_published_arm_0003'  # pi05-droid's only
KEYS = {KEY: 10 ** 6, TWO_CREDIT_KEY: 2}
# The gateway's keys, its robot key's deployment after its credit.
KEYS_SPEC = ','.join([*(f'{k}={v}' for k, v in KEYS.items()), f'{ROBOT_KEY}=100@pi05-droid'])
MODELS = ('pi05-droid', 'cosmos3-edge-policy-droid', 'lingbot-va-5b', 'lingbot-vla-v2-6b')
SPACES = {'pi05-droid': 'joint_velocity', 'cosmos3-edge-policy-droid': 'joint_absolute',
          'lingbot-va-5b': 'joint_delta', 'lingbot-vla-v2-6b': 'joint_position'}
# Cold start 100 model s: 2 s here. A seat unkept for 100 model s (2 s) is freed.
BASE_ARGS = ('--time-scale', str(TIME_SCALE), '--protocol', 'direct', '--seat-ttl-s', '100')


def frame(size: int = 224, colour: tuple[int, int, int] = (200, 40, 40)) -> str:
    """Return a base64 JPEG of one colour, `size` x `size`."""
    from PIL import Image
    buffer = io.BytesIO()
    Image.new('RGB', (size, size), colour).save(buffer, 'JPEG', quality=95)
    return base64.b64encode(buffer.getvalue()).decode('ascii')


def observation(size: int = 224) -> dict:
    """Return the robot-arm preset Observation the local deployments read."""
    return {'images': [{'view': 'exterior_1', 'data': frame(size), 'timestamp_ms': 1},
                       {'view': 'wrist', 'data': frame(size, (40, 40, 40)), 'timestamp_ms': 1}],
            'proprioception': {'joint_positions': [0.0] * 7, 'gripper': [0.0]},
            'instruction': 'reach above the red disc'}


def start(*args: str, **kwargs: object) -> GatewayProcess:
    """Start a direct-protocol gateway (TIME_SCALE, KEYS) with more flags; the caller stops it."""
    return GatewayProcess([*BASE_ARGS, *args], env={'SEQUENCE_AI_ROS_GATEWAY_KEYS': KEYS_SPEC},
                          **kwargs).start()


def seats(gateway: GatewayProcess, model: str = 'pi05-droid') -> dict:
    """Return the gateway's seat stats of one deployment."""
    return gateway.stats()['direct']['seats'][f'accounts/sequences/models/{model}']
