"""An episode file's metadata record: what ran, with which parameters; never a key."""

import json
import platform
import re
import socket
from typing import Any

from sequence_ai_ros.contract.key_masking import redact

# Parameter names whose values are secrets however they look (a key read from a file is
# never a parameter, but a team may add one).
_SECRET_NAME = re.compile(r'(^|_)(api_key|key|token|password|secret)$', re.IGNORECASE)


def episode_metadata(parameters: dict[str, Any], **extra: Any) -> dict[str, str]:
    """
    Return the metadata strings of one episode: package version, host, parameters and `extra`.

    Every value passes redact() (a key-shaped token anywhere becomes seq_[redacted]), and a
    parameter named like a secret is left out whatever its value.
    """
    from sequence_ai_ros import __version__

    safe = {name: value for name, value in sorted(parameters.items())
            if not _SECRET_NAME.search(name)}
    fields = {'package_version': __version__, 'python': platform.python_version(),
              'host': socket.gethostname(), 'parameters': json.dumps(safe, default=str)}
    fields.update({name: value if isinstance(value, str) else json.dumps(value, default=str)
                   for name, value in extra.items()})
    return {name: redact(value) for name, value in fields.items()}
