"""
Where episode files go and how much of a disk they may take: the oldest go first.

Files are named `<UTC time>_<label>.mcap`, so a name sorts by when the episode began; the
cap counts every .mcap file in the directory and removes the oldest until the rest fit.
"""

from datetime import datetime, timezone
import os
from pathlib import Path
import re

from .labels import label_path

SUFFIX = '.mcap'
_UNSAFE = re.compile(r'[^A-Za-z0-9_.-]+')


def episode_path(directory: Path, label: str = 'episode') -> Path:
    """Return a new, unused file path for an episode beginning now."""
    stamp = datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S_%fZ')
    name = _UNSAFE.sub('_', label).strip('_') or 'episode'
    path = Path(directory) / f'{stamp}_{name}{SUFFIX}'
    number = 1
    while path.exists():
        number += 1
        path = Path(directory) / f'{stamp}_{name}_{number}{SUFFIX}'
    return path


def episodes(directory: Path) -> list[Path]:
    """Return the directory's episode files, oldest first (by modification time, then name)."""
    found = []
    for path in Path(directory).glob('*' + SUFFIX):
        try:
            found.append((path.stat().st_mtime, path.name, path))
        except OSError:  # removed meanwhile
            continue
    return [path for _, _, path in sorted(found)]


def enforce_cap(directory: Path, max_bytes: int, keep: tuple[Path, ...] = ()) -> list[Path]:
    """
    Remove the oldest episode files until the directory's total is at most `max_bytes`.

    `keep` (the episode being written) is never removed, even when it alone is over the cap.
    Returns the files removed. max_bytes <= 0 means no cap.
    """
    if max_bytes <= 0:
        return []
    files = episodes(directory)
    sizes = {path: _size(path) for path in files}
    total = sum(sizes.values())
    kept = {Path(p).resolve() for p in keep}
    removed = []
    for path in files:
        if total <= max_bytes:
            break
        if path.resolve() in kept:
            continue
        try:
            os.remove(path)
        except OSError:
            continue
        _remove_label(path)
        total -= sizes[path]
        removed.append(path)
    return removed


def writable_directory(directory: Path) -> str:
    """Return why episodes cannot be written to `directory` ('' if they can); creates it."""
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f'cannot create {directory}: {exc.strerror or exc}'
    if not os.access(directory, os.W_OK | os.X_OK):
        return f'{directory} is not writable'
    return ''


def _remove_label(episode: Path) -> None:
    try:
        os.remove(label_path(episode))
    except OSError:
        pass


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
