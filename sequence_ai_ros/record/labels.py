"""
An episode's label (success or failure, notes, when): a sidecar file beside its recording.

`EPISODE.mcap` is labelled by `EPISODE.label.json`, written whole to a temporary name and
renamed over the old one, so a reader sees the old label or the new, never half of one. A
sidecar rather than an MCAP record because the label comes when the file cannot take one: while
the writer thread still owns it (the node's ~/label_episode right after an episode) or long
after its summary and footer were written (`sequence-ai-ros label`), where appending means
rewriting the whole file, and a crash then could cost the episode itself. Labelling again
replaces the label. The operator's outcome (completed, stopped, held, error) stays in the
recording's outcome record; the export reads the two side by side. size_cap removes a sidecar
with its episode.
"""

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
import json
import os
from pathlib import Path
import tempfile
from typing import Any

from sequence_ai_ros.contract.key_masking import redact

SUFFIX = '.label.json'
MAX_NOTES = 4000  # characters: a note, not a log


@dataclass(frozen=True)
class Label:
    """An operator's verdict on one episode."""

    success: bool
    notes: str
    labelled_at: str  # ISO 8601, UTC

    def as_dict(self) -> dict[str, Any]:
        """Return the label's fields (the sidecar's JSON, the dataset's episode columns)."""
        return asdict(self)


class LabelError(ValueError):
    """A label that cannot be written (no such episode) or read (a damaged sidecar)."""


def label_path(episode: Path) -> Path:
    """Return the sidecar that labels `episode` (EPISODE.mcap -> EPISODE.label.json)."""
    episode = Path(episode)
    return episode.with_name(episode.stem + SUFFIX)


def label_episode(episode: Path, success: bool, notes: str = '',
                  now: datetime | None = None) -> Label:
    """
    Label `episode` (its recording may still be being written); return the label written.

    Raises LabelError when the recording does not exist, OSError when the directory cannot be
    written. Notes pass redact() (a pasted key never reaches the dataset).
    """
    episode = Path(episode)
    if not episode.is_file():
        raise LabelError(f'no episode recording at {episode}')
    if not isinstance(success, bool):
        raise LabelError(f'success must be true or false, got {success!r}')
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    label = Label(success, redact(str(notes))[:MAX_NOTES],
                  stamp.isoformat(timespec='seconds').replace('+00:00', 'Z'))
    target = label_path(episode)
    handle, temporary = tempfile.mkstemp(prefix=target.name, suffix='.tmp', dir=target.parent)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as stream:
            json.dump(label.as_dict(), stream, indent=1)
            stream.write('\n')
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return label


def read_label(episode: Path) -> Label | None:
    """Return `episode`'s label, None when it has none; LabelError when the sidecar is bad."""
    path = label_path(episode)
    try:
        text = path.read_text(encoding='utf-8')
    except FileNotFoundError:
        return None
    try:
        fields = json.loads(text)
        label = Label(fields['success'], str(fields.get('notes', '')),
                      str(fields['labelled_at']))
    except (ValueError, KeyError, TypeError) as exc:
        raise LabelError(f'{path} is not a label: {exc}') from None
    if not isinstance(label.success, bool):
        raise LabelError(f'{path}: success is {label.success!r}, not true or false')
    return label
