"""
Benchmark the observation image path: camera frame -> 224x224 JPEG -> request body.

Run: .venv/bin/python -m bench.bench_observation_path [--iterations N]

Measures, in one run on this machine: per-frame time and output size for each encoder that is
importable (Pillow as shipped, simplejpeg, PyTurboJPEG), resize filter choices, the JPEG
quality trade, and the two-camera /v1/act request body with its latency share at the hosted
gateway's ~16 ms per kB of body (docs: shared/PROTOCOL.md).
"""


import argparse
from base64 import b64encode
from collections.abc import Callable
from dataclasses import dataclass
import io
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import PIL
from PIL import features, Image
from sequence_ai_ros.harness.proc_stats import cpu_model
from sequence_ai_ros.node import images
from sequence_ai_ros.node.images import (
    encode_compressed_image,
    encode_raw_image,
    letterbox_geometry,
    letterbox_image,
)

MS_PER_KB = 16.0  # hosted gateway, published measurement
WARM_ACT_MS = 793.0  # warm end-to-end /v1/act, pi05-droid, mean of 19
SIZE = (224, 224)
QUALITY = 92

try:
    import simplejpeg
except ImportError:
    simplejpeg = None
try:
    import turbojpeg
    _TJ = turbojpeg.TurboJPEG()
except (ImportError, OSError, RuntimeError):
    turbojpeg = _TJ = None


# -- synthetic frames -------------------------------------------------------------------------


def render_scene(width: int, height: int, seed: int = 0, zoom: float = 1.0) -> np.ndarray:
    """Draw a table-top scene: gradient wall, wood-grain table, shaded objects, clutter, noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    u = 0.5 + (x / width - 0.5) / zoom
    v = 0.5 + (y / height - 0.5) / zoom
    wall = np.stack([200 - 60 * v, 190 - 50 * v, 170 - 30 * v], -1)
    grain = 0.5 + 0.5 * np.sin(40 * u + 6 * np.sin(9 * v) + 3 * np.sin(23 * u * v))
    table = np.stack([120 + 50 * grain, 80 + 30 * grain, 45 + 15 * grain], -1)
    table *= (0.7 + 0.5 * v)[..., None]
    img = np.where((v < 0.45)[..., None], wall, table)
    poster = (np.abs(u - 0.15) < 0.09) & (np.abs(v - 0.2) < 0.12)
    checks = ((np.floor(u * 90) + np.floor(v * 90)) % 2)[poster]
    img[poster] = np.where(checks[:, None] > 0, 230.0, 30.0)
    for _ in range(25):  # clutter: small rectangles of random colour on the table
        cx, cy = rng.uniform(0.05, 0.95), rng.uniform(0.5, 0.98)
        hw, hh = rng.uniform(0.005, 0.03, 2)
        mask = (np.abs(u - cx) < hw) & (np.abs(v - cy) < hh)
        img[mask] = rng.uniform(20, 240, 3)
    cup = (np.abs(u - 0.35) < 0.07) & (v > 0.5) & (v < 0.75)
    img[cup] = np.array([200, 30, 40]) * (0.6 + 0.4 * np.cos((u[cup] - 0.35) / 0.07 * 1.4))[
        :, None]
    box = (np.abs(u - 0.68) < 0.1) & (np.abs(v - 0.62) < 0.09)
    img[box] = np.array([40, 70, 190]) * (0.8 + 0.3 * u[box])[:, None]
    dist = np.hypot((u - 0.55) * width, (v - 0.8) * height) / (0.06 * height)
    ball = dist < 1
    img[ball] = np.array([40, 180, 60]) * np.clip(1.1 - 0.5 * dist[ball], 0.3, 1)[:, None]
    img[(np.abs(u - 0.5) < 0.04) & (v < 0.3)] = 35  # the gripper
    img += rng.normal(0, 3.0, img.shape)  # sensor noise
    return np.clip(img, 0, 255).astype(np.uint8)


def to_bytes(frame: np.ndarray, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    Image.fromarray(frame).save(out, fmt, **options)
    return out.getvalue()


# -- candidate encoders -----------------------------------------------------------------------


@dataclass
class Candidate:
    name: str
    raw: Callable[[str, int, int, int, bytes], bytes]
    compressed: Callable[[str, bytes], bytes]


def _shipped() -> Candidate:
    return Candidate(
        'pillow (shipped)',
        lambda enc, w, h, step, data: encode_raw_image(enc, w, h, step, data).jpeg,
        lambda fmt, data: encode_compressed_image(fmt, data).jpeg,
    )


def _raw_image(enc: str, w: int, h: int, step: int, data: bytes) -> Image.Image:
    channels, mode, rawmode = images._RAW_LAYOUTS[enc]
    return Image.frombytes(mode, (w, h), data, 'raw', rawmode, step, 1)


def _variant(name: str, encode: Callable[[Image.Image], bytes],
             header: Callable[[bytes], tuple[int, int]],
             decode: Callable[[bytes, tuple[int, int]], Image.Image]) -> Candidate:
    """Return the shipped path with the JPEG codec swapped; Pillow still resizes and pads."""

    def raw(enc: str, w: int, h: int, step: int, data: bytes) -> bytes:
        return encode(letterbox_image(_raw_image(enc, w, h, step, data), SIZE))

    def compressed(fmt: str, data: bytes) -> bytes:
        src = header(data)
        if src == SIZE:
            return data
        scaled_w, scaled_h = letterbox_geometry(*src, *SIZE)[:2]
        # Same pre-shrink rule as the shipped path, so only the codec differs.
        scaled = (scaled_w * images._REDUCING_GAP, scaled_h * images._REDUCING_GAP)
        return encode(letterbox_image(decode(data, scaled), SIZE, source_size=src))

    return Candidate(name, raw, compressed)


def _pillow_plain() -> Candidate:
    def encode(image: Image.Image) -> bytes:
        out = io.BytesIO()
        image.save(out, 'JPEG', quality=QUALITY, subsampling='4:2:0')
        return out.getvalue()

    def decode(data: bytes, scaled: tuple[int, int]) -> Image.Image:
        image = Image.open(io.BytesIO(data))
        image.draft('RGB', scaled)
        return image

    return _variant('pillow, no optimize', encode,
                    lambda data: Image.open(io.BytesIO(data)).size, decode)


def _simplejpeg() -> Candidate:
    def encode(image: Image.Image) -> bytes:
        return simplejpeg.encode_jpeg(np.asarray(image), QUALITY, colorspace='RGB',
                                      colorsubsampling='420', fastdct=False)

    def header(data: bytes) -> tuple[int, int]:
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        return width, height

    def decode(data: bytes, scaled: tuple[int, int]) -> Image.Image:
        return Image.fromarray(simplejpeg.decode_jpeg(data, 'RGB', min_width=scaled[0],
                                                      min_height=scaled[1]))

    return _variant('simplejpeg', encode, header, decode)


def _turbojpeg() -> Candidate:
    def encode(image: Image.Image) -> bytes:
        return _TJ.encode(np.asarray(image), QUALITY, turbojpeg.TJPF_RGB, turbojpeg.TJSAMP_420)

    def header(data: bytes) -> tuple[int, int]:
        width, height, _, _ = _TJ.decode_header(data)
        return width, height

    def decode(data: bytes, scaled: tuple[int, int]) -> Image.Image:
        width, height = header(data)
        factor = min((f for f in _TJ.scaling_factors
                      if -(-width * f[0] // f[1]) >= scaled[0]
                      and -(-height * f[0] // f[1]) >= scaled[1]),
                     key=lambda f: f[0] / f[1])
        return Image.fromarray(_TJ.decode(data, turbojpeg.TJPF_RGB, scaling_factor=factor))

    return _variant('PyTurboJPEG', encode, header, decode)


def candidates() -> list[Candidate]:
    found = [_shipped(), _pillow_plain()]
    if simplejpeg is not None:
        found.append(_simplejpeg())
    if _TJ is not None:
        found.append(_turbojpeg())
    return found


# -- measurement ------------------------------------------------------------------------------


def timed(fn: Callable[[], object], iterations: int) -> tuple[float, float, object]:
    """Median and p95 in ms over ``iterations`` calls after a warm-up, and the last result."""
    result = fn()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(round(0.95 * len(samples))) - 1)]
    return statistics.median(samples) * 1e3, p95 * 1e3, result


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float('inf') if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def decoded(jpeg: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(jpeg)) as image:
        return np.asarray(image.convert('RGB'))


def luma_of(rgb: np.ndarray) -> np.ndarray:
    return rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])


def b64_len(n: int) -> int:
    return 4 * ((n + 2) // 3)


def table(headers: list[str], rows: list[list[object]]) -> None:
    cells = [[f'{c:.3f}' if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print('  '.join(h.ljust(w) if i == 0 else h.rjust(w)
                    for i, (h, w) in enumerate(zip(headers, widths, strict=True))))
    print('  '.join('-' * w for w in widths))
    for row in cells:
        print('  '.join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    print()


def machine() -> None:
    print(f'cpu: {cpu_model()} ({os.cpu_count()} logical)')
    print(f'python: {sys.version.split()[0]} ({platform.platform()})')
    versions = [f'numpy {np.__version__}', f'Pillow {PIL.__version__} '
                f'(libjpeg-turbo {features.version("libjpeg_turbo")})']
    versions.append(f'simplejpeg {simplejpeg.__version__}' if simplejpeg else
                    'simplejpeg not installed')
    versions.append(f'PyTurboJPEG {turbojpeg.__version__} (system libturbojpeg)' if _TJ else
                    'PyTurboJPEG not available')
    print('libraries: ' + ', '.join(versions))
    print()


# -- sections ---------------------------------------------------------------------------------


def bench_paths(iterations: int) -> dict[str, float]:
    vga = render_scene(640, 480)
    hd = render_scene(1280, 720, seed=1)
    fhd = render_scene(1920, 1080, seed=4)
    cases = [
        ('640x480 rgb8 raw', 'raw', ('rgb8', 640, 480, 1920, vga.tobytes())),
        ('640x480 bgr8 raw', 'raw', ('bgr8', 640, 480, 1920, vga[..., ::-1].tobytes())),
        ('640x480 mono8 raw', 'raw', ('mono8', 640, 480, 640,
                                      np.asarray(Image.fromarray(vga).convert('L')).tobytes())),
        ('1280x720 rgb8 raw', 'raw', ('rgb8', 1280, 720, 3840, hd.tobytes())),
        ('1920x1080 rgb8 raw', 'raw', ('rgb8', 1920, 1080, 5760, fhd.tobytes())),
        ('224x224 JPEG (pass-through)', 'compressed',
         ('jpeg', to_bytes(np.asarray(letterbox_image(Image.fromarray(vga))), 'JPEG',
                           quality=92))),
        ('640x480 JPEG q92 (re-encode)', 'compressed',
         ('jpeg', to_bytes(vga, 'JPEG', quality=92))),
        ('1280x720 JPEG q92 (re-encode)', 'compressed',
         ('jpeg', to_bytes(hd, 'JPEG', quality=92))),
        ('1920x1080 JPEG q92 (re-encode)', 'compressed',
         ('jpeg', to_bytes(fhd, 'JPEG', quality=92))),
        ('640x480 PNG (re-encode)', 'compressed', ('png', to_bytes(vga, 'PNG'))),
    ]
    rows = []
    shipped = {}
    for label, kind, args in cases:
        for cand in candidates():
            if args[0] == 'png' and cand.name != 'pillow (shipped)':
                continue  # PNG decoding is Pillow's whatever the JPEG codec
            fn = cand.raw if kind == 'raw' else cand.compressed
            median, p95, out = timed(lambda fn=fn, args=args: fn(*args), iterations)
            rows.append([label, cand.name, median, p95, len(out), b64_len(len(out))])
            if cand.name.startswith('pillow (shipped)'):
                shipped[label] = median
    print(f'## Per-frame path to a {SIZE[0]}x{SIZE[1]} JPEG q{QUALITY} ({iterations} iterations;'
          ' Pillow resizes and pads for every candidate)')
    table(['case', 'encoder', 'median ms', 'p95 ms', 'jpeg B', 'base64 B'], rows)
    return shipped


def bench_resize(width: int, height: int, iterations: int) -> None:
    frame = render_scene(width, height)
    src = Image.frombytes('RGB', (width, height), frame.tobytes())
    scaled = letterbox_geometry(width, height, *SIZE)[:2]
    triple = (scaled[0] * images._REDUCING_GAP, scaled[1] * images._REDUCING_GAP)
    reference = np.asarray(src.resize(scaled, Image.LANCZOS))
    openpi = np.asarray(src.resize(scaled, Image.BILINEAR))
    ys = np.arange(scaled[1]) * height // scaled[1]
    xs = np.arange(scaled[0]) * width // scaled[0]

    def resize(resample: int, **options: float) -> Callable[[], Image.Image]:
        return lambda: src.resize(scaled, resample, **options)

    methods: list[tuple[str, Callable[[], Image.Image]]] = [
        ('BILINEAR (openpi resize_with_pad)', resize(Image.BILINEAR)),
        ('BILINEAR reducing_gap=3 (shipped)', resize(Image.BILINEAR, reducing_gap=3.0)),
        ('BILINEAR reducing_gap=2', resize(Image.BILINEAR, reducing_gap=2.0)),
        ('BOX', resize(Image.BOX)),
        ('BICUBIC', resize(Image.BICUBIC)),
        ('LANCZOS', resize(Image.LANCZOS)),
        ('reduce(2) + BILINEAR', lambda: src.reduce(2).resize(scaled, Image.BILINEAR)),
        ('numpy stride 2 + BILINEAR', lambda: Image.fromarray(
            np.ascontiguousarray(frame[::2, ::2])).resize(scaled, Image.BILINEAR)),
        ('numpy index (nearest)', lambda: Image.fromarray(frame[ys][:, xs])),
    ]
    # The JPEG decoder's own DCT scaling (draft), for the same frame arriving compressed.
    jpeg = to_bytes(frame, 'JPEG', quality=92)

    def from_jpeg(draft: tuple[int, int] | None) -> Callable[[], Image.Image]:
        def run() -> Image.Image:
            image = Image.open(io.BytesIO(jpeg))
            if draft:
                image.draft('RGB', draft)
            return image.convert('RGB').resize(scaled, Image.BILINEAR,
                                               reducing_gap=images._REDUCING_GAP)
        return run

    methods += [
        ('JPEG full decode + BILINEAR', from_jpeg(None)),
        ('JPEG draft >= target + BILINEAR', from_jpeg(scaled)),
        ('JPEG draft >= 3x target + BILINEAR (shipped)', from_jpeg(triple)),
    ]
    rows = []
    for name, fn in methods:
        median, p95, out = timed(fn, iterations)
        arr = np.asarray(out)
        rows.append([name, median, p95, f'{psnr(arr, reference):.1f}', f'{psnr(arr, openpi):.1f}'])
    print(f'## Resize {width}x{height} -> {scaled[0]}x{scaled[1]} ({iterations} iterations; PSNR '
          'dB vs LANCZOS and vs openpi BILINEAR of the raw frame; JPEG rows include decode)')
    table(['method', 'median ms', 'p95 ms', 'PSNR lanczos', 'PSNR openpi'], rows)


def bench_quality() -> None:
    vga = render_scene(640, 480)
    canvas = letterbox_image(Image.fromarray(vga), SIZE)
    _, scaled_h, _, offset_y = letterbox_geometry(640, 480, *SIZE)
    original = np.asarray(canvas)[offset_y:offset_y + scaled_h]
    rows = []
    settings = [(q, '4:2:0', True) for q in (85, 90, 92, 95)]
    settings += [(92, '4:2:0', False), (92, '4:4:4', True)]
    for quality, subsampling, optimize in settings:
        out = io.BytesIO()
        canvas.save(out, 'JPEG', quality=quality, subsampling=subsampling, optimize=optimize)
        jpeg = out.getvalue()
        got = decoded(jpeg)[offset_y:offset_y + scaled_h]
        luma = psnr(luma_of(got), luma_of(original))
        note = ' (shipped)' if (quality, subsampling, optimize) == (92, '4:2:0', True) else ''
        rows.append([f'q{quality} {subsampling}{"" if optimize else " no-optimize"}{note}',
                     len(jpeg), b64_len(len(jpeg)), f'{psnr(got, original):.2f}', f'{luma:.2f}',
                     f'{b64_len(len(jpeg)) / 1000 * MS_PER_KB:.1f}'])
    print('## Quality trade, 640x480 scene letterboxed to 224x224 (PSNR over the picture, '
          'bars excluded)')
    table(['setting', 'jpeg B', 'base64 B', 'PSNR RGB', 'PSNR Y', f'ms @{MS_PER_KB:g}/kB'],
          rows)


def request_body(frames: list[tuple[str, bytes]]) -> bytes:
    joints = [0.0123456789, -0.5831243, 0.0412, -2.2107312, 0.0309871, 1.6504217, 0.7853981]
    body = {
        'model': 'accounts/sequences/models/pi05-droid',
        'observation': {
            'images': [{'view': view, 'data': b64encode(jpeg).decode('ascii'),
                        'timestamp_ms': 1732900000000 + i} for i, (view, jpeg) in
                       enumerate(frames)],
            'proprioception': {'joint_positions': joints, 'gripper': 0.0},
            'instruction': 'pick up the red cup and put it in the blue box',
        },
    }
    # httpx 0.28 sends json= compactly, so measure the compact form.
    return json.dumps(body, separators=(',', ':'), ensure_ascii=False).encode('utf-8')


def bench_body(iterations: int) -> None:
    exterior = render_scene(640, 480, seed=2)
    wrist = render_scene(640, 480, seed=3, zoom=2.5)
    rows = []
    for quality in (85, 90, 92, 95):
        frames = [(view, encode_raw_image('rgb8', 640, 480, 1920, f.tobytes(),
                                          quality=quality).jpeg)
                  for view, f in (('exterior_1', exterior), ('wrist', wrist))]
        body = request_body(frames)
        kb = len(body) / 1000
        note = ' (shipped)' if quality == QUALITY else ''
        rows.append([f'2 x 224x224 q{quality}{note}', f'{kb:.2f}', f'{kb * MS_PER_KB:.0f}',
                     f'{100 * kb * MS_PER_KB / WARM_ACT_MS:.0f}%'])
    frames = [(view, to_bytes(f, 'JPEG', quality=92)) for view, f in
              (('exterior_1', exterior), ('wrist', wrist))]
    kb = len(request_body(frames)) / 1000
    rows.append(['2 x 640x480 q92, not resized', f'{kb:.2f}', f'{kb * MS_PER_KB:.0f}',
                 f'{100 * kb * MS_PER_KB / WARM_ACT_MS:.0f}%'])
    print('## Two-camera /v1/act request body (compact JSON, 7 joints + gripper + instruction; '
          f'kB = 1000 B; share of the {WARM_ACT_MS:g} ms warm /v1/act mean)')
    table(['body', 'kB', f'ms @{MS_PER_KB:g}/kB', 'share'], rows)
    frames = [(view, encode_raw_image('rgb8', 640, 480, 1920, f.tobytes()).jpeg)
              for view, f in (('exterior_1', exterior), ('wrist', wrist))]
    median, p95, _ = timed(lambda: request_body(frames), iterations)
    print(f'building that body (base64 + json.dumps): median {median:.3f} ms, p95 {p95:.3f} ms')
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--iterations', type=int, default=200)
    args = parser.parse_args()
    print('# Observation image path benchmark\n')
    machine()
    bench_paths(args.iterations)
    bench_resize(640, 480, args.iterations)
    bench_resize(1920, 1080, max(20, args.iterations // 4))
    bench_quality()
    bench_body(args.iterations)


if __name__ == '__main__':
    main()
