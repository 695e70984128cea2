"""
The published client's tests: their gateways, keys and observations (the folder's rule: __init__).

Collected only where the published client is installed and the gateway's interpreter is named;
anywhere else the folder is left out, as scripts/published_client.py is what runs it.
"""

from importlib.metadata import PackageNotFoundError, version
import os
from pathlib import Path
import sys

import pytest

REPO = Path(__file__).resolve().parents[2]
GATEWAY_PYTHON_ENV = 'SEQUENCE_AI_ROS_GATEWAY_PYTHON'

try:
    # The Kilted venv holds sequence-ai 0.1.0 for test/unit's v1 contract test; this folder
    # is for 0.51.5, which only its own venv holds.
    PUBLISHED = version('sequence-ai') == '0.51.5'
except PackageNotFoundError:
    PUBLISHED = False
if not PUBLISHED:
    collect_ignore_glob = ['test_*.py']
else:
    if not os.environ.get(GATEWAY_PYTHON_ENV):
        raise pytest.UsageError(f'test/published needs ${GATEWAY_PYTHON_ENV}: the Kilted '
                                "venv's python, which runs the gateway (make test-published)")
    sys.path.insert(0, str(REPO))
    from .client_support import KEY, start


@pytest.fixture(scope='module')
def warm_gateway():
    """Warm, two seats per deployment."""
    gateway = start('--start-warm', '--seats', '2')
    yield gateway
    gateway.close()


@pytest.fixture
def connect(warm_gateway):
    """Open published-client Policies on the warm gateway; each is closed after the test."""
    import sequence_ai
    opened = []

    def open_policy(model: str = 'pi05-droid', gateway=None, **kwargs):
        target = gateway or warm_gateway
        kwargs.setdefault('api_key', KEY)
        policy = sequence_ai.connect(model, base_url=target.base_url, **kwargs)
        opened.append(policy)
        return policy
    yield open_policy
    for policy in opened:
        policy.close()
