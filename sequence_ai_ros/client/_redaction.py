"""
Secrets kept out of every text a person reads: API keys by their shape, direct secrets by value.

A direct secret has no recognisable shape, so the client registers each one it is given and
every error scrubs its texts of them when it is made (SequencesError). Keys are the contract's
rule (key_masking.redact).
"""

import threading

from sequence_ai_ros.contract.key_masking import redact

REDACTED_SECRET = '[secret redacted]'
# Shorter strings would scrub ordinary words; a direct secret is a long random token.
_MIN_SECRET_LENGTH = 8
_lock = threading.Lock()
_secrets: set[str] = set()


def remember_secret(secret: str) -> None:
    """Scrub `secret` from every error text made from now on."""
    if isinstance(secret, str) and len(secret) >= _MIN_SECRET_LENGTH:
        with _lock:
            _secrets.add(secret)


def scrub(text: str) -> str:
    """Return `text` with every registered secret and every key-shaped token replaced."""
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED_SECRET)
    return redact(text)
