"""
Check 1, the API key: which source gives it (never the key itself), and whether it looks right.

Also the rule that keeps it out of every line doctor prints.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sequence_ai_ros.client import credentials_path, read_credentials_file
from sequence_ai_ros.contract.key_masking import mask_key
from sequence_ai_ros.doctor.codes import EXIT_NO_KEY

if TYPE_CHECKING:
    from sequence_ai_ros.doctor.report import Report


def scrub(text: str, key: str | None) -> str:
    """Return `text` with `key` masked: server messages are passed through, and may echo it."""
    return text.replace(key, mask_key(key)) if key else text


def check_key(report: 'Report', api_key_file: str | None) -> str:
    """1: is there a key, and which source gave it (never the key itself); return the key."""
    # (where, the key it holds, the file it is in)
    sources: list[tuple[str, str | None, Path | None]] = []
    if api_key_file:
        given = Path(api_key_file).expanduser()
        sources.append((f'--api-key-file {given}', read_credentials_file(given), given))
        if not sources[0][1]:
            why = 'does not exist' if not given.exists() else 'holds no key line'
            report.fail(1, 'key', f'{given} {why}',
                        'put the key on the first non-comment line of the file',
                        EXIT_NO_KEY)
    sources.append(('environment ($SEQUENCES_API_KEY)',
                    os.environ.get('SEQUENCES_API_KEY') or None, None))
    sources.append((f'credentials file {credentials_path()}', read_credentials_file(),
                    credentials_path()))
    found = [source for source in sources if source[1]]
    if not found:
        report.fail(1, 'key', 'no API key found',
                    f'set $SEQUENCES_API_KEY, or write the key to {credentials_path()} '
                    '(mode 0600), or pass --api-key-file (a local gateway without keys '
                    'accepts any seq_ key)', EXIT_NO_KEY)
    label, key, path = found[0]
    assert key is not None
    report.key = key
    message = f'{mask_key(key)} from {label}'
    ignored = [f'{other} ({mask_key(value)})' for other, value, _ in found[1:] if value != key]
    if ignored:
        message += '; ignored, different: ' + ', '.join(ignored)
    problem = _key_problem(key, path)
    if problem:
        report.line('WARN', 1, 'key', message, problem)
    else:
        report.line('OK', 1, 'key', message)
    return key


def _key_problem(key: str, path: Path | None) -> str | None:
    if not key.startswith('seq_'):
        return 'keys start with seq_: is this the whole key, without quotes or "Bearer"?'
    if path is not None:
        try:
            mode = path.stat().st_mode & 0o777
        except OSError:
            return None
        if mode & 0o077:
            return f'{path} is mode {mode:04o}, readable by others: chmod 600 {path}'
    return None
