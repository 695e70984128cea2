"""
API keys in text a person reads: masked where a key is named, redacted wherever one may hide.

One rule for the client, the node's diagnostics, the doctor and the gateway: a key is shown as
`seq_…abcd` only when it is long enough that four characters give little away, and any
key-shaped token or bearer credential in a message (a server may quote one, a user may paste
one into the wrong field) is replaced before the message is logged, answered or published.
"""

import re

KEY_PREFIX = 'seq_'
# Four revealed characters of a shorter key would give away too much of it.
_MIN_REVEALING_LENGTH = 16
_KEY_LIKE = re.compile(r'seq_[^\s\'"]+')
_BEARER = re.compile(r'(?i:bearer)\s+(?!seq_)[^\s\'"]+')
REDACTED_KEY = 'seq_[redacted]'


def mask_key(key: str | None, index: int | None = None) -> str:
    """
    Name a key for display: its first and last four characters, `seq_…abcd`.

    A key too short to reveal four characters is `seq_…#<index>` when the caller numbers its
    keys, else `<set>`; no key at all is `<none>`.
    """
    if not key:
        return '<none>'
    if len(key) >= _MIN_REVEALING_LENGTH:
        return f'{key[:4]}…{key[-4:]}'
    return f'{KEY_PREFIX}…#{index}' if index is not None else '<set>'


def redact(text: str) -> str:
    """Replace every key-shaped token and bearer credential in `text`."""
    return _BEARER.sub('Bearer [redacted]', _KEY_LIKE.sub(REDACTED_KEY, text))
