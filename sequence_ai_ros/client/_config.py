"""Where the key, the base URL and the full model id come from, in the contract's order."""

import os
from pathlib import Path

DEFAULT_BASE_URL = 'https://api.generalsequences.com'
MODEL_PREFIX = 'accounts/sequences/models/'
# Seconds one request may take unless the caller says otherwise (connect, the CLI, the node).
DEFAULT_TIMEOUT_S = 30.0


def full_model_id(model: str) -> str:
    """Expand a bare name such as `pi05-droid` to `accounts/sequences/models/pi05-droid`."""
    if not model or not isinstance(model, str):
        raise ValueError('model must be a non-empty string such as "pi05-droid"')
    return model if '/' in model else MODEL_PREFIX + model


def credentials_path() -> Path:
    """$XDG_CONFIG_HOME/sequence-ai/credentials, defaulting to ~/.config."""
    base = os.environ.get('XDG_CONFIG_HOME') or os.path.join(Path.home(), '.config')
    return Path(base) / 'sequence-ai' / 'credentials'


def read_credentials_file(path: Path | None = None) -> str | None:
    """First non-comment, non-blank line of the credentials file, or None if there is none."""
    path = path or credentials_path()
    try:
        text = path.read_text(encoding='utf-8')
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        return None
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith('#'):
            return line
    return None


def write_credentials_file(key: str, path: Path | None = None) -> Path:
    """Store a key with mode 0600 from the first byte (never world-readable, even briefly)."""
    path = path or credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as handle:
        handle.write(key.strip() + '\n')
    os.chmod(path, 0o600)
    return path


def resolve_api_key(api_key: str | None = None) -> tuple[str | None, str]:
    """Return the key and where it came from: argument, then $SEQUENCES_API_KEY, then the file."""
    if api_key:
        return api_key, 'argument'
    env = os.environ.get('SEQUENCES_API_KEY')
    if env:
        return env, 'environment ($SEQUENCES_API_KEY)'
    from_file = read_credentials_file()
    if from_file:
        return from_file, f'file ({credentials_path()})'
    return None, 'none'


def resolve_base_url(base_url: str | None = None) -> str:
    """Return the argument, then $SEQUENCES_BASE_URL, then production; without a trailing slash."""
    url = base_url or os.environ.get('SEQUENCES_BASE_URL') or DEFAULT_BASE_URL
    return url.rstrip('/')
