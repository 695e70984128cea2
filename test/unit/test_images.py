"""The observation image path: raw and compressed camera frames to letterboxed 224x224 JPEG."""

import array
import base64
import io

import numpy as np
from PIL import Image
import pytest
from sequence_ai_ros.node.images import (
    encode_compressed_image,
    encode_raw_image,
    EncodedFrame,
    ImageError,
    letterbox_geometry,
    letterbox_image,
    SUPPORTED_ENCODINGS,
)

RED = (255, 0, 0)
BLUE = (0, 0, 255)
# JPEG at q92 with 4:2:0 chroma smears colour edges by a few pixels; compare region means.
TOL = 12.0


def decode(jpeg: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(jpeg)) as image:
        assert image.format == 'JPEG'
        return np.asarray(image.convert('RGB')).astype(np.float64)


def mean_rgb(pixels: np.ndarray) -> np.ndarray:
    return pixels.reshape(-1, 3).mean(axis=0)


def assert_colour(region: np.ndarray, rgb: tuple[int, int, int], tol: float = TOL) -> None:
    got = mean_rgb(region)
    assert np.all(np.abs(got - np.array(rgb)) <= tol), f'mean {got} vs {rgb}'


def red_blue(width: int = 640, height: int = 480) -> np.ndarray:
    """Make an RGB frame whose left half is red and right half blue."""
    frame = np.zeros((height, width, 3), np.uint8)
    frame[:, : width // 2] = RED
    frame[:, width // 2:] = BLUE
    return frame


def to_jpeg(frame: np.ndarray, quality: int = 95) -> bytes:
    out = io.BytesIO()
    Image.fromarray(frame).save(out, 'JPEG', quality=quality)
    return out.getvalue()


def to_png(frame: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(frame).save(out, 'PNG')
    return out.getvalue()


def assert_red_blue_letterboxed(frame: EncodedFrame) -> None:
    """640x480 red|blue lands as 224x168 at y=28: red left, blue right, black bars."""
    assert (frame.width, frame.height) == (224, 224)
    pixels = decode(frame.jpeg)
    assert pixels.shape == (224, 224, 3)
    # Keep clear of the bar edges and the colour seam, where JPEG blocks blend.
    assert_colour(pixels[40:184, 8:100], RED)
    assert_colour(pixels[40:184, 124:216], BLUE)
    assert_colour(pixels[:20], (0, 0, 0), tol=4)
    assert_colour(pixels[-20:], (0, 0, 0), tol=4)


# -- letterbox geometry ---------------------------------------------------------------------


@pytest.mark.parametrize(('src', 'expected'), [
    ((640, 480), (224, 168, 0, 28)),
    ((480, 640), (168, 224, 28, 0)),
    ((1280, 720), (224, 126, 0, 49)),
    ((848, 480), (224, 126, 0, 49)),
    ((224, 224), (224, 224, 0, 0)),
    ((100, 100), (224, 224, 0, 0)),
    ((160, 120), (224, 168, 0, 28)),
    ((10000, 1), (224, 1, 0, 111)),
])
def test_letterbox_geometry(src, expected):
    assert letterbox_geometry(*src, 224, 224) == expected


def test_letterbox_geometry_non_square_destination():
    assert letterbox_geometry(640, 480, 320, 180) == (240, 180, 40, 0)
    assert letterbox_geometry(640, 360, 320, 240) == (320, 180, 0, 30)


def test_letterbox_geometry_rejects_non_positive():
    with pytest.raises(ImageError, match='src_w'):
        letterbox_geometry(0, 480, 224, 224)
    with pytest.raises(ImageError, match='dst_h'):
        letterbox_geometry(640, 480, 224, -1)


# -- raw sensor_msgs/Image ------------------------------------------------------------------


def test_rgb8_letterboxed_and_colours_in_place():
    frame = red_blue()
    out = encode_raw_image('rgb8', 640, 480, 640 * 3, frame.tobytes())
    assert isinstance(out, EncodedFrame)
    assert (out.source_width, out.source_height, out.reencoded) == (640, 480, True)
    assert out.jpeg.startswith(b'\xff\xd8\xff')
    assert_red_blue_letterboxed(out)


def test_bgr8_swaps_channels():
    frame = np.zeros((120, 160, 3), np.uint8)
    frame[..., 2] = 255  # BGR order: the third byte is red
    out = encode_raw_image('bgr8', 160, 120, 160 * 3, frame.tobytes())
    pixels = decode(out.jpeg)
    assert_colour(pixels[40:184, 8:216], RED)


def test_bgr8_red_blue_halves():
    out = encode_raw_image('bgr8', 640, 480, 640 * 3, red_blue()[..., ::-1].tobytes())
    assert_red_blue_letterboxed(out)


@pytest.mark.parametrize('encoding', ['rgba8', 'bgra8'])
def test_four_channel_encodings_drop_alpha(encoding):
    rgba = np.zeros((480, 640, 4), np.uint8)
    rgba[..., :3] = red_blue()
    rgba[..., 3] = 7  # alpha must not matter
    if encoding == 'bgra8':
        rgba[..., :3] = rgba[..., 2::-1]
    out = encode_raw_image(encoding, 640, 480, 640 * 4, rgba.tobytes())
    assert_red_blue_letterboxed(out)


def test_mono8_is_grey_rgb():
    frame = np.zeros((480, 640), np.uint8)
    frame[:, :320] = 200
    frame[:, 320:] = 60
    out = encode_raw_image('mono8', 640, 480, 640, frame.tobytes())
    with Image.open(io.BytesIO(out.jpeg)) as image:
        assert image.mode == 'RGB'
    pixels = decode(out.jpeg)
    assert_colour(pixels[40:184, 8:100], (200, 200, 200), tol=4)
    assert_colour(pixels[40:184, 124:216], (60, 60, 60), tol=4)
    assert_colour(pixels[:20], (0, 0, 0), tol=4)


@pytest.mark.parametrize(('encoding', 'channels'), [('rgb8', 3), ('bgr8', 3), ('mono8', 1),
                                                    ('rgba8', 4)])
def test_row_padding_is_skipped(encoding, channels):
    width, height, pad = 640, 480, 13
    step = width * channels + pad
    rows = np.full((height, step), 255, np.uint8)  # white padding would show if read as pixels
    if channels == 1:
        rows[:, :width] = 0
        expected = (0, 0, 0)
    else:
        pixels = np.zeros((height, width, channels), np.uint8)
        pixels[..., 1] = 255  # green is green in every channel order
        rows[:, : width * channels] = pixels.reshape(height, -1)
        expected = (0, 255, 0)
    out = encode_raw_image(encoding, width, height, step, rows.tobytes())
    assert_colour(decode(out.jpeg)[40:184, 8:216], expected, tol=6)


def test_accepts_array_and_memoryview_and_extra_bytes():
    frame = red_blue().tobytes()
    for data in (array.array('B', frame), memoryview(frame), frame + b'\x00' * 100):
        assert_red_blue_letterboxed(encode_raw_image('rgb8', 640, 480, 1920, data))


def test_encoding_is_case_insensitive():
    out = encode_raw_image('RGB8', 640, 480, 1920, red_blue().tobytes())
    assert_red_blue_letterboxed(out)


def test_portrait_is_pillarboxed():
    frame = np.zeros((640, 480, 3), np.uint8)
    frame[:320] = RED
    frame[320:] = BLUE
    pixels = decode(encode_raw_image('rgb8', 480, 640, 480 * 3, frame.tobytes()).jpeg)
    assert_colour(pixels[8:100, 40:184], RED)
    assert_colour(pixels[124:216, 40:184], BLUE)
    assert_colour(pixels[:, :20], (0, 0, 0), tol=4)
    assert_colour(pixels[:, -20:], (0, 0, 0), tol=4)


def test_custom_size_and_quality():
    out = encode_raw_image('rgb8', 640, 480, 1920, red_blue().tobytes(), size=(320, 180),
                           quality=85)
    assert decode(out.jpeg).shape == (180, 320, 3)
    assert (out.width, out.height) == (320, 180)


def test_base64_round_trip():
    out = encode_raw_image('rgb8', 640, 480, 1920, red_blue().tobytes())
    text = out.base64()
    assert isinstance(text, str)
    assert base64.b64decode(text) == out.jpeg


def test_higher_quality_is_larger():
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (480, 640, 3), np.uint8).tobytes()
    low = encode_raw_image('rgb8', 640, 480, 1920, frame, quality=85)
    high = encode_raw_image('rgb8', 640, 480, 1920, frame, quality=95)
    assert len(high.jpeg) > len(low.jpeg)


@pytest.mark.parametrize('encoding', ['yuv422', '16UC1', 'mono16', 'bayer_rggb8', ''])
def test_unsupported_encoding_named(encoding):
    with pytest.raises(ImageError) as info:
        encode_raw_image(encoding, 4, 4, 16, bytes(64))
    message = str(info.value)
    assert repr(encoding) in message
    for supported in SUPPORTED_ENCODINGS:
        assert supported in message


def test_truncated_data():
    with pytest.raises(ImageError, match='too short.*1920 \\* 480'):
        encode_raw_image('rgb8', 640, 480, 1920, bytes(1920 * 480 - 1))


@pytest.mark.parametrize(('width', 'height'), [(0, 480), (640, 0), (-1, 5)])
def test_non_positive_dims(width, height):
    with pytest.raises(ImageError, match='positive'):
        encode_raw_image('rgb8', width, height, 1920, bytes(1920 * 480))


def test_step_smaller_than_row():
    with pytest.raises(ImageError, match='step 1919'):
        encode_raw_image('rgb8', 640, 480, 1919, bytes(1920 * 480))


def test_huge_dims_rejected_before_touching_data():
    with pytest.raises(ImageError, match='4097x480 exceeds the 4096'):
        encode_raw_image('rgb8', 4097, 480, 4097 * 3, b'')
    with pytest.raises(ImageError, match='exceeds the 512'):
        encode_raw_image('rgb8', 640, 480, 1920, red_blue().tobytes(), max_side=512)


@pytest.mark.parametrize('quality', [84, 50, 101, 0, 92.0, True])
def test_quality_out_of_range(quality):
    with pytest.raises(ImageError, match='quality.*85\\.\\.100'):
        encode_raw_image('rgb8', 640, 480, 1920, red_blue().tobytes(), quality=quality)
    with pytest.raises(ImageError, match='quality'):
        encode_compressed_image('jpeg', to_jpeg(red_blue()), quality=quality)


@pytest.mark.parametrize('size', [(0, 224), (224,), (224.0, 224)])
def test_bad_size(size):
    with pytest.raises(ImageError, match='size'):
        encode_raw_image('rgb8', 640, 480, 1920, red_blue().tobytes(), size=size)


def test_non_contiguous_data():
    frame = np.zeros((480, 1280, 3), np.uint8)[:, ::2]
    with pytest.raises(ImageError, match='contiguous'):
        encode_raw_image('rgb8', 640, 480, 1920, frame)


# -- sensor_msgs/CompressedImage ------------------------------------------------------------


def test_right_size_jpeg_passes_through():
    jpeg = to_jpeg(red_blue(224, 224), quality=93)
    out = encode_compressed_image('jpeg', jpeg)
    assert out.jpeg is jpeg  # bytes in, the same object out: not even a copy
    assert out.reencoded is False
    assert (out.width, out.height, out.source_width, out.source_height) == (224, 224, 224, 224)


def test_image_transport_format_string_passes_through():
    jpeg = to_jpeg(red_blue(224, 224))
    out = encode_compressed_image('bgr8; jpeg compressed bgr8', array.array('B', jpeg))
    assert out.jpeg == jpeg
    assert not out.reencoded


def test_wrong_size_jpeg_is_reencoded():
    out = encode_compressed_image('jpeg', to_jpeg(red_blue()))
    assert out.reencoded
    assert (out.source_width, out.source_height) == (640, 480)
    assert_red_blue_letterboxed(out)


def test_large_jpeg_is_reencoded():
    out = encode_compressed_image('jpg', to_jpeg(red_blue(1280, 720)))
    pixels = decode(out.jpeg)
    assert_colour(pixels[60:160, 8:100], RED)
    assert_colour(pixels[60:160, 124:216], BLUE)
    assert_colour(pixels[:40], (0, 0, 0), tol=4)


@pytest.mark.parametrize('source', [(1920, 1080), (2000, 1000)])
def test_big_jpeg_decoded_at_reduced_scale_keeps_full_frame_geometry(source):
    width, height = source
    _, scaled_h, _, offset_y = letterbox_geometry(width, height, 224, 224)
    out = encode_compressed_image('jpeg', to_jpeg(red_blue(width, height)))
    assert (out.source_width, out.source_height) == source
    pixels = decode(out.jpeg)
    assert_colour(pixels[offset_y + 8:offset_y + scaled_h - 8, 8:100], RED)
    assert_colour(pixels[offset_y + 8:offset_y + scaled_h - 8, 124:216], BLUE)
    assert_colour(pixels[: offset_y - 4], (0, 0, 0), tol=4)
    assert_colour(pixels[offset_y + scaled_h + 4:], (0, 0, 0), tol=4)


def test_big_raw_frame():
    out = encode_raw_image('rgb8', 1920, 1080, 1920 * 3, red_blue(1920, 1080).tobytes())
    pixels = decode(out.jpeg)
    assert_colour(pixels[58:166, 8:100], RED)
    assert_colour(pixels[58:166, 124:216], BLUE)
    assert_colour(pixels[:45], (0, 0, 0), tol=4)


def test_letterbox_image_matches_geometry():
    image = letterbox_image(Image.fromarray(red_blue(640, 360)), (224, 224))
    assert (image.mode, image.size) == ('RGB', (224, 224))
    pixels = np.asarray(image).astype(np.float64)
    assert_colour(pixels[49:175, :112], RED, tol=1)
    assert_colour(pixels[49:175, 112:], BLUE, tol=1)
    assert not pixels[:49].any() and not pixels[175:].any()


def test_png_is_reencoded_even_at_model_size():
    for frame in (red_blue(), red_blue(224, 224)):
        out = encode_compressed_image('png', to_png(frame))
        assert out.reencoded
        assert out.jpeg.startswith(b'\xff\xd8\xff')
    assert_red_blue_letterboxed(encode_compressed_image('rgb8; png compressed', to_png(
        red_blue())))


def test_png_with_alpha_and_palette():
    rgba = np.zeros((480, 640, 4), np.uint8)
    rgba[..., :3] = red_blue()
    rgba[..., 3] = 255
    assert_red_blue_letterboxed(encode_compressed_image('png', to_png(rgba)))
    out = io.BytesIO()
    Image.fromarray(red_blue()).convert('P').save(out, 'PNG')
    assert_red_blue_letterboxed(encode_compressed_image('png', out.getvalue()))


def test_jpeg_mislabelled_png_still_decodes_but_is_reencoded():
    jpeg = to_jpeg(red_blue(224, 224))
    out = encode_compressed_image('png', jpeg)
    assert out.reencoded


def test_grey_jpeg_at_model_size_becomes_colour():
    grey = np.full((224, 224), 128, np.uint8)
    out = io.BytesIO()
    Image.fromarray(grey).save(out, 'JPEG', quality=92)
    frame = encode_compressed_image('jpeg', out.getvalue())
    assert frame.reencoded
    with Image.open(io.BytesIO(frame.jpeg)) as image:
        assert image.mode == 'RGB'


@pytest.mark.parametrize('data', [b'not an image at all', b'\xff\xd8\xff\xe0garbage',
                                  b'\x89PNG\r\n\x1a\n' + bytes(30)])
def test_garbage_compressed_bytes(data):
    with pytest.raises(ImageError, match="cannot decode compressed image \\(format 'jpeg'"):
        encode_compressed_image('jpeg', data)


def test_empty_compressed_bytes():
    with pytest.raises(ImageError, match='empty'):
        encode_compressed_image('jpeg', b'')


def test_truncated_right_size_jpeg_is_not_passed_through():
    jpeg = to_jpeg(red_blue(224, 224))
    with pytest.raises(ImageError, match='cannot decode'):
        encode_compressed_image('jpeg', jpeg[: len(jpeg) // 2])


def test_zero_padded_right_size_jpeg_passes_through():
    jpeg = to_jpeg(red_blue(224, 224)) + bytes(16)
    out = encode_compressed_image('jpeg', jpeg)
    assert not out.reencoded


def test_unsupported_container_rejected():
    out = io.BytesIO()
    Image.fromarray(red_blue()).save(out, 'BMP')
    with pytest.raises(ImageError, match='jpeg, png'):
        encode_compressed_image('bmp', out.getvalue())


def test_sixteen_bit_png_rejected():
    out = io.BytesIO()
    Image.fromarray(np.full((48, 64), 40000, np.uint16)).save(out, 'PNG')
    with pytest.raises(ImageError, match='pixel mode'):
        encode_compressed_image('mono16; png compressed', out.getvalue())


def test_compressed_depth_rejected():
    with pytest.raises(ImageError, match='depth'):
        encode_compressed_image('16UC1; compressedDepth png', bytes(100))


def test_huge_compressed_image_rejected_from_header():
    out = io.BytesIO()
    Image.new('L', (5000, 8)).save(out, 'PNG')
    with pytest.raises(ImageError, match='5000x8 exceeds'):
        encode_compressed_image('png', out.getvalue())
