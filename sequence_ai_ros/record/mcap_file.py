"""
One episode's MCAP file: ROS 2 profile, CDR messages, `ros2msg` schemas, zstd chunks.

Not thread-safe: the writer thread (writer_thread.py) owns it. `flush()` closes the chunk in
hand and hands the bytes to the operating system, so a process killed after it leaves a file
the readers open up to that point (no summary at the end: they scan it; reader.py does).
"""

from pathlib import Path
from typing import Any

from .dependency import mcap_module, require_mcap
from .schemas import DEFINITIONS, METADATA_NAME

LIBRARY = 'sequence_ai_ros'
# Big enough that zstd has something to work on, small enough that a chunk is seconds of
# an episode: what a kill can lose beyond the last flush.
CHUNK_BYTES = 256 * 1024


class EpisodeFile:
    """Write ROS 2 messages, already CDR-encoded, to one MCAP file."""

    def __init__(self, path: Path, metadata: dict[str, str] | None = None) -> None:
        require_mcap()
        writer = mcap_module('mcap.writer')

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._stream = open(self.path, 'wb')
        try:
            self._writer: Any = writer.Writer(self._stream, chunk_size=CHUNK_BYTES,
                                              compression=writer.CompressionType.ZSTD)
            self._writer.start(profile='ros2', library=LIBRARY)
            if metadata:
                self._writer.add_metadata(METADATA_NAME, dict(metadata))
        except BaseException:
            self._stream.close()
            raise
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence = 0
        self.messages = 0
        self.closed = False

    def write(self, topic: str, type_name: str, data: bytes, log_time_ns: int) -> None:
        """Add one message; its channel (and schema) are written on first use."""
        channel = self._channels.get(topic)
        if channel is None:
            channel = self._channel(topic, type_name)
        self._sequence += 1
        self._writer.add_message(channel_id=channel, log_time=log_time_ns,
                                 publish_time=log_time_ns, sequence=self._sequence, data=data)
        self.messages += 1

    def flush(self) -> None:
        """End the chunk in hand and pass everything to the operating system."""
        if not self.closed:
            self._writer.flush()

    def close(self) -> None:
        """Write the summary (indexes, statistics) and close the file. Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            self._writer.finish()
        finally:
            self._stream.close()

    def _channel(self, topic: str, type_name: str) -> int:
        schema = self._schemas.get(type_name)
        if schema is None:
            schema = self._writer.register_schema(
                name=type_name, encoding='ros2msg', data=DEFINITIONS[type_name].encode())
            self._schemas[type_name] = schema
        # No offered_qos_profiles: rosbag2 reads an absent entry as the default QoS, while the
        # text of one is versioned differently on Humble and on Jazzy and later.
        channel: int = self._writer.register_channel(topic=topic, message_encoding='cdr',
                                                     schema_id=schema)
        self._channels[topic] = channel
        return channel
