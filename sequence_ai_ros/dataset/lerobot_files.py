"""
The files of a LeRobot v3.0 dataset that grow an episode at a time: data parquet and videos.

Episodes are appended to the open file until it passes its size, then the next file begins
(file-000, file-001, ...; a chunk folder holds CHUNKS_SIZE files), as LeRobot's own writer does.
Videos are H.264, yuv420p, one frame per tick at the dataset's fps: frame n of a file is at
n / fps seconds, so an episode's pictures run from its from_timestamp.
"""

from collections.abc import Sequence
import io
from pathlib import Path
from typing import Any

import numpy as np

from .stats import Stats

CHUNKS_SIZE = 1000
VIDEO_PATH = 'videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4'
# The codec every LeRobot decoder reads (torchcodec, PyAV); a keyframe every other frame, as
# LeRobot's own encoder does, so a frame anywhere decodes quickly.
CODEC = 'libx264'
CODEC_OPTIONS = {'crf': '18', 'g': '2', 'preset': 'veryfast'}
# Frames per episode whose pixels go into the image statistics.
IMAGE_STAT_SAMPLES = 50


class DatasetShapeError(ValueError):
    """An episode that does not fit the dataset's features (other joints, views or sizes)."""


class ParquetFiles:
    """data/ parquet files: tables appended (a row group each) until one passes its size."""

    def __init__(self, root: Path, pattern: str, max_mb: float) -> None:
        self.root, self.pattern, self.max_bytes = root, pattern, max_mb * 1024 * 1024
        self.chunk, self.number = 0, -1
        self._writer: Any = None
        self._path: Path | None = None

    def add(self, table: Any) -> tuple[int, int]:
        """Append one episode's table (a row group); return its (chunk, file)."""
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        if self._writer is not None and self._path is not None and \
                self._path.stat().st_size >= self.max_bytes:
            self.close()
        if self._writer is None:
            self.chunk, self.number = _next_file(self.chunk, self.number)
            self._path = self.root / self.pattern.format(chunk_index=self.chunk,
                                                         file_index=self.number)
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self._path, table.schema, compression='snappy')
        self._writer.write_table(table)
        return self.chunk, self.number

    def close(self) -> None:
        """Finish the open file."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class VideoFiles:
    """One camera's mp4 files: episodes' frames appended until a file passes its size."""

    def __init__(self, root: Path, key: str, fps: int, max_mb: float) -> None:
        self.root, self.key, self.fps = root, key, fps
        self.max_bytes = max_mb * 1024 * 1024
        self.chunk, self.number = 0, -1
        self.shape: tuple[int, int] = (0, 0)
        self._container: Any = None
        self._stream: Any = None
        self._path: Path | None = None
        self._frames = 0
        self._info: dict[str, Any] = {}

    def add(self, jpegs: Sequence[bytes], stats: Stats) -> tuple[int, int, int]:
        """Append an episode's frames; return (chunk, file, its first frame's number)."""
        if self._container is not None and self._path is not None and \
                self._path.stat().st_size >= self.max_bytes:
            self.close()
        every = max(1, len(jpegs) // IMAGE_STAT_SAMPLES)
        start = None
        last: bytes | None = None
        pixels: np.ndarray | None = None
        for number, jpeg in enumerate(jpegs):
            if jpeg is not last:  # a picture held over many ticks is decoded once
                pixels, last = _decode(jpeg), jpeg
            assert pixels is not None
            if self._container is None:
                self._open(pixels.shape[0], pixels.shape[1])
            if pixels.shape[:2] != self.shape:
                raise DatasetShapeError(f'{self.key}: a {pixels.shape[1]}x{pixels.shape[0]} '
                                        f'picture in a {self.shape[1]}x{self.shape[0]} video')
            if start is None:
                start = self._frames
            self._encode(pixels)
            if number % every == 0:
                stats.add(pixels[::4, ::4].reshape(-1, 3))
        assert start is not None
        return self.chunk, self.number, start

    def info(self) -> dict[str, Any]:
        """Return the video's info as meta/info.json has it (video.height, video.codec, ...)."""
        return self._info

    def close(self) -> None:
        """Flush the encoder and finish the open file."""
        if self._container is None:
            return
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        self._container = self._stream = None

    def _open(self, height: int, width: int) -> None:
        import av

        if height % 2 or width % 2:
            raise DatasetShapeError(f'{self.key}: {width}x{height} pictures (yuv420p video '
                                    'needs even sides)')
        self.chunk, self.number = _next_file(self.chunk, self.number)
        self._path = self.root / VIDEO_PATH.format(video_key=self.key, chunk_index=self.chunk,
                                                   file_index=self.number)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._container = av.open(str(self._path), mode='w')
        stream = self._container.add_stream(CODEC, rate=self.fps, options=dict(CODEC_OPTIONS))
        stream.width, stream.height, stream.pix_fmt = width, height, 'yuv420p'
        self._stream, self.shape, self._frames = stream, (height, width), 0
        self._info = {'video.height': height, 'video.width': width, 'video.codec': 'h264',
                      'video.pix_fmt': 'yuv420p', 'video.is_depth_map': False,
                      'video.fps': self.fps, 'video.channels': 3, 'has_audio': False}

    def _encode(self, pixels: np.ndarray) -> None:
        import av

        frame = av.VideoFrame.from_ndarray(pixels, format='rgb24')
        frame.pts = self._frames
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self._frames += 1


def _decode(jpeg: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(jpeg)) as image:
        return np.asarray(image.convert('RGB'))


def _next_file(chunk: int, number: int) -> tuple[int, int]:
    return (chunk + 1, 0) if number == CHUNKS_SIZE - 1 else (chunk, number + 1)
