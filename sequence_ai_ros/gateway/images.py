"""Turning an observation frame's base64 `data` into a Pillow RGB image, or saying why not."""

import base64
import binascii
import io
import re
import threading
import warnings

from PIL import Image

# Well above any camera a robot streams; refuses decompression bombs before decoding.
MAX_PIXELS = 40_000_000
# A PNG has no reduced-scale decode, so it is held whole at 4 bytes a pixel: 4K UHD (33 MB)
# is the largest accepted. A JPEG of up to MAX_PIXELS decodes at 1/8 scale.
MAX_PNG_PIXELS = 3840 * 2160
# Frames over this many pixels are decoded one at a time, so that concurrent requests cannot
# add up their full-size decodes: the peak stays near one 4K frame.
LARGE_PIXELS = 2_000_000
_LARGE_DECODE = threading.Lock()
# Frames larger than this are reduced before the scene is read; it only needs proportions.
ANALYSIS_SIZE = (448, 448)
_DATA_URI = re.compile(r'^data:image/[a-z.+-]+;base64,', re.IGNORECASE)
_WHITESPACE = re.compile(r'\s+')


class ImageError(ValueError):
    """The frame cannot be used; the message says why (without the field name)."""


def decode_frame(data: str) -> tuple[Image.Image, tuple[int, int]]:
    """
    Decode base64 JPEG or PNG bytes to an RGB image (reduced for analysis) and its full size.

    A `data:image/...;base64,` prefix and line breaks are tolerated; a URL is never fetched.
    """
    if data.startswith(('http://', 'https://')):
        raise ImageError('is a URL; send the image bytes as base64, URLs are never fetched')
    text = _WHITESPACE.sub('', _DATA_URI.sub('', data, count=1))
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f'is not valid base64 ({exc})') from None
    if not raw:
        raise ImageError('is empty')
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('error', Image.DecompressionBombWarning)
            source = Image.open(io.BytesIO(raw))
            if source.format not in ('JPEG', 'PNG'):
                raise ImageError(f'is a {source.format} image; send JPEG or PNG')
            size = source.size
            pixels = size[0] * size[1]
            if pixels > MAX_PIXELS:
                raise ImageError(f'is {size[0]}x{size[1]}, over {MAX_PIXELS} pixels')
            if source.format == 'PNG' and pixels > MAX_PNG_PIXELS:
                raise ImageError(f'is a {size[0]}x{size[1]} PNG, over the {MAX_PNG_PIXELS} '
                                 'pixels read for PNG; send JPEG, or resize on the robot')
            if source.format == 'JPEG':
                source.draft('RGB', ANALYSIS_SIZE)  # decode at reduced scale: much cheaper
            if source.size[0] * source.size[1] > LARGE_PIXELS:
                with _LARGE_DECODE:
                    image = _reduced_rgb(source)
            else:
                image = _reduced_rgb(source)
    except ImageError:
        raise
    except Exception as exc:  # Pillow raises many types for corrupt data
        raise ImageError(f'is not a decodable JPEG or PNG image ({type(exc).__name__}: '
                         f'{exc})') from None
    return image, size


def _reduced_rgb(source: Image.Image) -> Image.Image:
    """Load `source`, shrink it to ANALYSIS_SIZE first (no full-size copy), then make it RGB."""
    source.load()
    factor = max(1, min(source.width // ANALYSIS_SIZE[0], source.height // ANALYSIS_SIZE[1]))
    image = source.reduce(factor) if factor > 1 else source
    if image.mode != 'RGB':
        image = image.convert('RGB')
    if image.width > ANALYSIS_SIZE[0] or image.height > ANALYSIS_SIZE[1]:
        image.thumbnail(ANALYSIS_SIZE)
    return image
