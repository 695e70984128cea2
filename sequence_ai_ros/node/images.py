"""
Camera frames to the JPEG the gateway wants: letterboxed to the model's size, ROS-free.

The ROS 2 node passes message fields (not messages) to :func:`encode_raw_image` for
``sensor_msgs/Image`` and :func:`encode_compressed_image` for ``sensor_msgs/CompressedImage``;
both return an :class:`EncodedFrame` whose :meth:`EncodedFrame.base64` is the wire ``data``.

Geometry and filter follow openpi's ``resize_with_pad`` (the DROID family's own preprocessing:
PIL bilinear, truncated scaled size, centred black padding), so a frame that is already the
model's size needs no second resize on the server.
"""

from __future__ import annotations

from base64 import b64encode
from dataclasses import dataclass
import io
import struct
from typing import TYPE_CHECKING

from PIL import Image

if TYPE_CHECKING:
    import array

    # What rclpy (array.array('B')), tests and benches hand over for uint8[] fields.
    BytesLike = bytes | bytearray | memoryview | array.array[int]

__all__ = [
    'DEFAULT_QUALITY',
    'DEFAULT_SIZE',
    'MAX_QUALITY',
    'MAX_SIDE',
    'MIN_QUALITY',
    'SUPPORTED_COMPRESSED_FORMATS',
    'SUPPORTED_ENCODINGS',
    'EncodedFrame',
    'ImageError',
    'check_compressed_image',
    'check_raw_image',
    'encode_compressed_image',
    'encode_raw_image',
    'letterbox_geometry',
    'letterbox_image',
]

DEFAULT_SIZE: tuple[int, int] = (224, 224)
DEFAULT_QUALITY = 92
MIN_QUALITY = 85
MAX_QUALITY = 100
MAX_SIDE = 4096

# Encoder: Pillow's bundled libjpeg-turbo. simplejpeg 1.9 and PyTurboJPEG 1.8 measured 1.00x on the
# 640x480 -> 224x224 q92 path (same library) and cannot optimize Huffman tables (+8% bytes), so
# neither pays for a dependency (bench/bench_observation_path.py).
#
# optimize=True is lossless and trims ~8% (~1 kB of base64, ~16 ms at the gateway's 16 ms/kB)
# for ~0.15 ms. 4:2:0 chroma is every common encoder's default and what JPEG- or video-stored
# training frames carry; 4:4:4 costs +32% bytes, ~65 ms per frame.
_JPEG_OPTIONS = {'optimize': True, 'subsampling': '4:2:0'}
# Image.Resampling is Pillow >= 9.1; Humble's python3-pil is 9.0.
_RESAMPLE = getattr(Image, 'Resampling', Image).BILINEAR
# Pre-shrink big frames by whole factors (Pillow's reduce(), the JPEG decoder's DCT scaling) only
# while they stay >= 3x the target: identical output up to ~1344 px wide, >= 52 dB PSNR from
# openpi's plain bilinear beyond, and 1080p/4K frames cost 1.5-5x less.
_REDUCING_GAP = 3

# encoding -> (bytes per pixel, Pillow mode, Pillow raw mode)
_RAW_LAYOUTS: dict[str, tuple[int, str, str]] = {
    'rgb8': (3, 'RGB', 'RGB'),
    'bgr8': (3, 'RGB', 'BGR'),
    'mono8': (1, 'L', 'L'),
    'rgba8': (4, 'RGB', 'RGBX'),
    'bgra8': (4, 'RGB', 'BGRX'),
}
SUPPORTED_ENCODINGS: tuple[str, ...] = tuple(_RAW_LAYOUTS)
SUPPORTED_COMPRESSED_FORMATS: tuple[str, ...] = ('jpeg', 'png')

# Pillow modes that convert('RGB') maps faithfully; 16-bit and float ones would clip.
_CONVERTIBLE_MODES = frozenset({'1', 'L', 'LA', 'La', 'P', 'PA', 'RGB', 'RGBA', 'RGBX', 'RGBa',
                                'CMYK', 'YCbCr'})
_JPEG_SOI = b'\xff\xd8\xff'
_JPEG_EOI = b'\xff\xd9'
# What a broken or hostile file can make Pillow raise while identifying or decoding it.
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, IndexError, struct.error,
                  Image.DecompressionBombError)


class ImageError(ValueError):
    """A camera frame that cannot be turned into an observation image."""


@dataclass(frozen=True)
class EncodedFrame:
    """One observation image: JPEG bytes at the model's size and where they came from."""

    jpeg: bytes
    width: int
    height: int
    source_width: int
    source_height: int
    reencoded: bool

    def base64(self) -> str:
        """Return the JPEG as the base64 text the request's ``data`` field carries."""
        return b64encode(self.jpeg).decode('ascii')


def letterbox_geometry(src_w: int, src_h: int, dst_w: int, dst_h: int
                       ) -> tuple[int, int, int, int]:
    """
    Fit a source inside a destination keeping its aspect ratio.

    Returns ``(scaled_w, scaled_h, offset_x, offset_y)``: the size to resize the source to and
    where to paste it on a black ``dst_w`` x ``dst_h`` canvas. The fitted side fills the
    destination, the other is truncated (never below 1 pixel), and the padding is split with
    the odd pixel at the bottom or right, as openpi's ``resize_with_pad`` does.
    """
    for name, value in (('src_w', src_w), ('src_h', src_h), ('dst_w', dst_w), ('dst_h', dst_h)):
        if value <= 0:
            raise ImageError(f'{name} must be > 0, got {value}')
    # Integer cross-multiplication: float ratios put 1-pixel jitter on exact cases.
    if dst_w * src_h <= dst_h * src_w:
        scaled_w, scaled_h = dst_w, max(1, src_h * dst_w // src_w)
    else:
        scaled_w, scaled_h = max(1, src_w * dst_h // src_h), dst_h
    return scaled_w, scaled_h, (dst_w - scaled_w) // 2, (dst_h - scaled_h) // 2


def encode_raw_image(encoding: str, width: int, height: int, step: int, data: BytesLike, *,
                     size: tuple[int, int] = DEFAULT_SIZE, quality: int = DEFAULT_QUALITY,
                     max_side: int = MAX_SIDE) -> EncodedFrame:
    """
    Letterbox a ``sensor_msgs/Image`` to ``size`` and encode it as JPEG.

    ``encoding``, ``width``, ``height``, ``step`` and ``data`` are the message's fields;
    ``step`` may include row padding. Supported encodings are :data:`SUPPORTED_ENCODINGS`
    (alpha is dropped). Raises :class:`ImageError` for an unsupported encoding, inconsistent
    fields, short data, a side larger than ``max_side`` or a quality outside 85..100.
    """
    _check_options(size, quality)
    try:
        view = memoryview(data).cast('B')
    except TypeError as exc:
        raise ImageError(f'image data must be a contiguous byte buffer: {exc}') from exc
    _, mode, rawmode = check_raw_image(encoding, width, height, step, view.nbytes,
                                       max_side=max_side)
    view = view[:step * height]
    if mode == 'L':
        # Zero-copy view of the message buffer; Pillow maps only single-band modes like this.
        image = Image.frombuffer(mode, (width, height), view,  # type: ignore[arg-type]
                                 'raw', rawmode, step, 1)
    else:
        try:
            image = Image.frombytes(mode, (width, height), view, 'raw', rawmode, step, 1)
        except TypeError:  # Pillow 9.0 (Ubuntu 22.04's) decodes bytes, not a memoryview
            image = Image.frombytes(mode, (width, height), view.tobytes(), 'raw', rawmode,
                                    step, 1)
    jpeg = _encode_jpeg(letterbox_image(image, size), quality)
    return EncodedFrame(jpeg, size[0], size[1], width, height, True)


def check_raw_image(encoding: str, width: int, height: int, step: int, nbytes: int, *,
                    max_side: int = MAX_SIDE) -> tuple[int, str, str]:
    """
    Check a ``sensor_msgs/Image``'s declared fields without touching its pixels.

    ``nbytes`` is the length of its data. Cheap enough for a subscription callback. Returns
    (bytes per pixel, Pillow mode, Pillow raw mode); raises :class:`ImageError` as
    :func:`encode_raw_image` does.
    """
    layout = _RAW_LAYOUTS.get(encoding.strip().lower()) if isinstance(encoding, str) else None
    if layout is None:
        raise ImageError(f'unsupported image encoding {encoding!r}; supported: '
                         + ', '.join(SUPPORTED_ENCODINGS))
    channels = layout[0]
    if width <= 0 or height <= 0:
        raise ImageError(f'image size must be positive, got {width}x{height}')
    _check_side(width, height, max_side)
    if step < width * channels:
        raise ImageError(f'step {step} is less than width * channels = {width} * {channels} '
                         f'for {encoding}')
    needed = step * height
    if nbytes < needed:
        raise ImageError(f'image data too short: {nbytes} bytes, step * height = '
                         f'{step} * {height} = {needed}')
    return layout


def check_compressed_image(format: str, data: BytesLike, *,  # noqa: A002 (the message field)
                           max_side: int = MAX_SIDE) -> tuple[int, int]:
    """
    Check a ``sensor_msgs/CompressedImage`` from its header only (no pixel is decoded).

    Cheap enough for a subscription callback: the format, that the bytes open as JPEG or PNG,
    the declared size and the pixel mode. Returns (width, height); raises :class:`ImageError`
    as :func:`encode_compressed_image` does for these faults (a corrupt body past the header
    is only found when it is decoded).
    """
    blob = _compressed_bytes(format, data)
    try:
        with Image.open(io.BytesIO(blob), formats=('JPEG', 'PNG')) as image:
            _check_opened(image, format, max_side)
            width, height = image.size
            return int(width), int(height)
    except ImageError:
        raise
    except _DECODE_ERRORS as exc:
        raise _undecodable(format, blob, exc) from exc


def encode_compressed_image(format: str, data: BytesLike, *,  # noqa: A002 (the message field)
                            size: tuple[int, int] = DEFAULT_SIZE,
                            quality: int = DEFAULT_QUALITY,
                            max_side: int = MAX_SIDE) -> EncodedFrame:
    """
    Turn a ``sensor_msgs/CompressedImage`` into the model's JPEG, re-encoding only if needed.

    A complete JPEG (``format`` names jpeg/jpg and the bytes start with the SOI marker) that is
    already ``size`` and colour is passed through byte for byte (``reencoded`` False); only its
    header is read. Anything else in :data:`SUPPORTED_COMPRESSED_FORMATS` is decoded,
    letterboxed and re-encoded. Raises :class:`ImageError` for undecodable or unsupported data,
    a side larger than ``max_side`` or a quality outside 85..100.
    """
    _check_options(size, quality)
    fmt = format.lower() if isinstance(format, str) else ''
    blob = _compressed_bytes(format, data)
    try:
        with Image.open(io.BytesIO(blob), formats=('JPEG', 'PNG')) as image:
            src_w, src_h = image.size
            _check_opened(image, format, max_side)
            if (('jpeg' in fmt or 'jpg' in fmt) and blob.startswith(_JPEG_SOI)
                    and image.format == 'JPEG' and image.size == tuple(size)
                    and image.mode == 'RGB' and _ends_with_eoi(blob)):
                return EncodedFrame(blob, src_w, src_h, src_w, src_h, False)
            if image.format == 'JPEG':
                scaled_w, scaled_h, _, _ = letterbox_geometry(src_w, src_h, *size)
                image.draft('RGB', (scaled_w * _REDUCING_GAP, scaled_h * _REDUCING_GAP))
            image.load()
            jpeg = _encode_jpeg(letterbox_image(image, size, source_size=(src_w, src_h)),
                                quality)
    except ImageError:
        raise
    except _DECODE_ERRORS as exc:
        raise _undecodable(format, blob, exc) from exc
    return EncodedFrame(jpeg, size[0], size[1], src_w, src_h, True)


def _compressed_bytes(format: str, data: BytesLike) -> bytes:  # noqa: A002
    fmt = format.lower() if isinstance(format, str) else ''
    if 'compresseddepth' in fmt:
        raise ImageError(f'compressed depth images are not supported (format {format!r})')
    try:
        blob = bytes(data)
    except TypeError as exc:
        raise ImageError(f'compressed image data must be bytes-like: {exc}') from exc
    if not blob:
        raise ImageError(f'compressed image data is empty (format {format!r})')
    return blob


def _check_opened(image: Image.Image, format: str, max_side: int) -> None:  # noqa: A002
    _check_side(*image.size, max_side)
    if image.mode not in _CONVERTIBLE_MODES:
        raise ImageError(f'unsupported {image.format} pixel mode {image.mode!r} '
                         f'(format {format!r}); 8-bit grey or colour only')


def _undecodable(format: str, blob: bytes, exc: BaseException) -> ImageError:  # noqa: A002
    return ImageError(f'cannot decode compressed image (format {format!r}, {len(blob)} bytes; '
                      f'supported: {", ".join(SUPPORTED_COMPRESSED_FORMATS)}): {exc}')


def letterbox_image(image: Image.Image, size: tuple[int, int] = DEFAULT_SIZE, *,
                    source_size: tuple[int, int] | None = None) -> Image.Image:
    """
    Return ``image`` resized into ``size`` with black bars, as an RGB Pillow image.

    ``source_size`` is the frame's true size when ``image`` was decoded at a reduced scale
    (JPEG draft mode), so the geometry stays that of the full frame.
    """
    dst_w, dst_h = size
    src_w, src_h = source_size or image.size
    scaled_w, scaled_h, offset_x, offset_y = letterbox_geometry(src_w, src_h, dst_w, dst_h)
    if image.mode not in ('RGB', 'L'):
        image = image.convert('RGB')
    if image.size != (scaled_w, scaled_h):
        image = image.resize((scaled_w, scaled_h), _RESAMPLE, reducing_gap=_REDUCING_GAP)
    if image.mode != 'RGB':
        # Grey is resized as one band (a third of the work) and sent as colour, because the
        # model reads three channels.
        image = image.convert('RGB')
    if (scaled_w, scaled_h) != (dst_w, dst_h):
        canvas = Image.new('RGB', (dst_w, dst_h))
        canvas.paste(image, (offset_x, offset_y))
        image = canvas
    return image


def _encode_jpeg(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    image.save(out, 'JPEG', quality=quality, **_JPEG_OPTIONS)
    return out.getvalue()


def _check_options(size: tuple[int, int], quality: int) -> None:
    if (len(size) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in size)
            or min(size) <= 0):
        raise ImageError(f'size must be (width, height) positive integers, got {size!r}')
    if isinstance(quality, bool) or not isinstance(quality, int) or not (
            MIN_QUALITY <= quality <= MAX_QUALITY):
        # Below 85 the published action error grows by an order of magnitude.
        raise ImageError(f'JPEG quality must be an integer in {MIN_QUALITY}..{MAX_QUALITY}, '
                         f'got {quality!r}')


def _check_side(width: int, height: int, max_side: int) -> None:
    if width > max_side or height > max_side:
        raise ImageError(f'image {width}x{height} exceeds the {max_side}-pixel side limit')


def _ends_with_eoi(blob: bytes) -> bool:
    # Some drivers pad JPEGs with zeros; a missing EOI means a truncated frame, which the
    # decode path then reports instead of shipping a broken image.
    return blob.rstrip(b'\x00').endswith(_JPEG_EOI)
