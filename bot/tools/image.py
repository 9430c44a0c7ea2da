"""Image preprocessing for vision models: bounded size, no decompression bombs."""

from __future__ import annotations

import io
import logging

from PIL import Image, ImageOps, UnidentifiedImageError

log = logging.getLogger(__name__)

DEFAULT_MAX_DIMENSION = 1024
DEFAULT_MAX_PIXELS = 16_000_000
DEFAULT_QUALITY = 85
# Formats vision models accept as they are; anything else is re-encoded to PNG.
_PASS_THROUGH = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}


class ImageError(ValueError):
    """The bytes are not an image Pillow can read."""


def _mime(fmt: str | None) -> str:
    if fmt is None:
        return "application/octet-stream"
    return Image.MIME.get(fmt.upper(), f"image/{fmt.lower()}")


def sniff_mime(data: bytes) -> str:
    """The image type from its magic bytes, for images returned without being opened."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"


def resize_image(
    data: bytes,
    *,
    max_dimension: int = DEFAULT_MAX_DIMENSION,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    quality: int = DEFAULT_QUALITY,
) -> tuple[bytes, str]:
    """Shrink an image so its longer side is at most `max_dimension`; returns (bytes, mime).

    JPEG and WEBP keep their format at `quality`; PNG stays PNG; other formats become PNG.
    An image of more than `max_pixels` pixels is returned unchanged without being decoded.
    """
    if max_dimension < 1:
        raise ValueError("max_dimension must be positive")
    try:
        # Opening reads only the header; our pixel limit is checked on img.size before any
        # pixel is decoded (Pillow's own guard is a process-wide global we leave alone).
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        log.info("image larger than Pillow's hard limit returned unchanged")
        return data, sniff_mime(data)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageError("The file is not a readable image.") from exc
    with image:
        fmt = image.format
        width, height = image.size
        if width * height > max_pixels:
            log.info("image of %dx%d pixels over the limit; returned unchanged", width, height)
            return data, _mime(fmt)
        if max(width, height) <= max_dimension and fmt in _PASS_THROUGH:
            return data, _PASS_THROUGH[fmt]
        try:
            if fmt == "JPEG":
                image.draft("RGB", (max_dimension, max_dimension))
            frame = ImageOps.exif_transpose(image) or image
            frame.thumbnail((max_dimension, max_dimension), Image.Resampling.LANCZOS)
            return _encode(frame, fmt, quality)
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise ImageError("The image could not be decoded.") from exc


def _encode(image: Image.Image, fmt: str | None, quality: int) -> tuple[bytes, str]:
    out = io.BytesIO()
    if fmt == "JPEG":
        if image.mode not in ("RGB", "L"):
            image = image.convert("RGB")
        image.save(out, format="JPEG", quality=quality, optimize=True)
        return out.getvalue(), "image/jpeg"
    if fmt == "WEBP":
        image.save(out, format="WEBP", quality=quality)
        return out.getvalue(), "image/webp"
    if image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        image = image.convert("RGBA")
    image.save(out, format="PNG", optimize=True)
    return out.getvalue(), "image/png"
