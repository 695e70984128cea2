"""
Read an episode file back: every message decoded, in file order, and its metadata.

A file whose writer was killed has no summary and may end in a partial record: it is read
linearly up to the last whole record (`truncated` says so), which is what a flush left.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
import json
from pathlib import Path
from typing import Any

from .dependency import mcap_module, require_mcap
from .schemas import METADATA_NAME


@dataclass(frozen=True)
class RecordedMessage:
    """One message: its topic and type, when it was logged (s since the epoch), its fields."""

    topic: str
    type_name: str
    time: float  # noqa: A003 (a field, not the module)
    message: Any


@dataclass
class EpisodeFileContents:
    """Everything in one episode file."""

    path: Path
    messages: list[RecordedMessage] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    truncated: bool = False

    def on(self, topic: str) -> list[RecordedMessage]:
        """Return the messages of one topic, in file order."""
        return [m for m in self.messages if m.topic == topic]

    def topics(self) -> dict[str, int]:
        """Return the message count of each topic."""
        counts: dict[str, int] = {}
        for message in self.messages:
            counts[message.topic] = counts.get(message.topic, 0) + 1
        return counts


def read_episode(path: Path) -> EpisodeFileContents:
    """Decode every message of an episode file (ROS 2 CDR with ros2msg schemas)."""
    contents = EpisodeFileContents(Path(path))
    for record in stream_messages(contents):
        contents.messages.append(record)
    return contents


def stream_messages(contents: EpisodeFileContents) -> Iterator[RecordedMessage]:
    """
    Decode `contents.path`'s messages one at a time, in file order, keeping none of them.

    The metadata and `truncated` are filled in on `contents` as the file is read (the metadata
    record comes first); its `messages` stay as they are. The export reads recordings this way.
    """
    require_mcap()
    kinds = mcap_module('mcap.records')
    factory = mcap_module('mcap_ros2.decoder').DecoderFactory()
    schemas: dict[int, Any] = {}
    channels: dict[int, Any] = {}
    with open(contents.path, 'rb') as stream:
        reader = mcap_module('mcap.stream_reader').StreamReader(stream,
                                                                record_size_limit=1 << 30)
        records = reader.records
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except Exception:  # noqa: BLE001 (a partial last record: the writer was killed)
                contents.truncated = True
                return
            if isinstance(record, kinds.Schema):
                schemas[record.id] = record
            elif isinstance(record, kinds.Channel):
                channels[record.id] = record
            elif isinstance(record, kinds.Metadata) and record.name == METADATA_NAME:
                contents.metadata.update(record.metadata)
            elif isinstance(record, kinds.Message) and record.channel_id in channels:
                channel = channels[record.channel_id]
                schema = schemas.get(channel.schema_id)
                decode = factory.decoder_for(channel.message_encoding, schema)
                if schema is None or decode is None:
                    continue
                yield RecordedMessage(channel.topic, schema.name, record.log_time * 1e-9,
                                      decode(record.data))


def json_fields(text: str) -> dict[str, Any]:
    """Return the object a JSON String message holds ({} for anything else)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
