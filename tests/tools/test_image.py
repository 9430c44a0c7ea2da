"""resize_image: bounded size for vision models, formats kept, bombs never decoded."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from bot.tools.image import ImageError, resize_image, sniff_mime


def encode(image: Image.Image, fmt: str, **params: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **params)
    return out.getvalue()


def opened(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def test_large_jpeg_is_shrunk_and_stays_jpeg() -> None:
    data = encode(Image.new("RGB", (3000, 2000), (200, 30, 30)), "JPEG", quality=95)
    resized, mime = resize_image(data)
    assert mime == "image/jpeg"
    image = opened(resized)
    assert (image.format, image.size) == ("JPEG", (1024, 683))


def test_quality_is_applied_to_jpeg() -> None:
    noisy = Image.effect_noise((1600, 1600), 80).convert("RGB")
    data = encode(noisy, "JPEG", quality=98)
    low, _ = resize_image(data, quality=30)
    high, _ = resize_image(data, quality=95)
    assert len(low) < len(high)


def test_png_with_alpha_stays_png() -> None:
    data = encode(Image.new("RGBA", (2000, 500), (0, 0, 255, 128)), "PNG")
    resized, mime = resize_image(data, max_dimension=512)
    image = opened(resized)
    assert (mime, image.format, image.size, image.mode) == ("image/png", "PNG", (512, 128), "RGBA")


def test_webp_stays_webp() -> None:
    data = encode(Image.new("RGB", (1500, 1500), (1, 2, 3)), "WEBP", quality=90)
    resized, mime = resize_image(data)
    assert mime == "image/webp"
    assert opened(resized).size == (1024, 1024)


def test_small_image_is_returned_unchanged() -> None:
    data = encode(Image.new("RGB", (640, 480), (9, 9, 9)), "JPEG")
    assert resize_image(data) == (data, "image/jpeg")


def test_other_formats_become_png() -> None:
    data = encode(Image.new("RGB", (300, 200), (9, 9, 9)), "BMP")
    resized, mime = resize_image(data)
    assert mime == "image/png"
    assert opened(resized).size == (300, 200)


def test_exif_orientation_is_applied() -> None:
    image = Image.new("RGB", (2000, 1000), (10, 200, 10))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise when shown
    resized, _ = resize_image(encode(image, "JPEG", exif=exif.tobytes()))
    assert opened(resized).size == (512, 1024)


def test_over_max_pixels_returns_the_original() -> None:
    data = encode(Image.new("RGB", (200, 200)), "PNG")
    assert resize_image(data, max_pixels=10_000) == (data, "image/png")


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims huge dimensions but holds almost no data (a decompression bomb)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("side", [5_000, 100_000])
def test_bombs_are_never_decoded(side: int) -> None:
    # 25M pixels (over our 16M limit) and 10G pixels (over Pillow's hard limit).
    data = png_header_only(side, side)
    assert resize_image(data) == (data, "image/png")


@pytest.mark.parametrize("data", [b"", b"not an image", b"%PDF-1.7\n"])
def test_non_images_are_a_clear_error(data: bytes) -> None:
    with pytest.raises(ImageError, match="not a readable image"):
        resize_image(data)


def test_truncated_image_is_a_clear_error() -> None:
    data = encode(Image.effect_noise((1200, 1200), 50).convert("RGB"), "PNG")
    with pytest.raises(ImageError, match="could not be decoded"):
        resize_image(data[: len(data) // 3])


def test_bad_dimension_is_refused() -> None:
    with pytest.raises(ValueError, match="max_dimension"):
        resize_image(b"", max_dimension=0)


def test_sniff_mime() -> None:
    assert sniff_mime(b"GIF89a....") == "image/gif"
    assert sniff_mime(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_mime(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert sniff_mime(b"????") == "application/octet-stream"
