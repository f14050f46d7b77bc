"""Check and decode an uploaded screenshot before any OCR work: refuse what is not a small, whole image."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, UnidentifiedImageError

# Each accepted format by the bytes it starts with; anything else is refused before Pillow parses it.
FORMATS = {"PNG": (b"\x89PNG\r\n\x1a\n",), "JPEG": (b"\xff\xd8\xff",), "WEBP": (b"RIFF",)}
WHITE = (255, 255, 255)


@dataclass
class ImageRejected(Exception):
    """An image the manual will not read, with the HTTP status and JSON error code to answer with."""

    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return self.message


def image_format(data: bytes) -> str | None:
    """The format the bytes claim to be (PNG, JPEG or WEBP), or None."""
    for name, magics in FORMATS.items():
        if data.startswith(magics) and (name != "WEBP" or data[8:12] == b"WEBP"):
            return name
    return None


def decode_image(data: bytes, *, max_bytes: int, max_pixels: int) -> np.ndarray:
    """Decode a PNG, JPEG or WebP into an RGB array, refusing empty, oversized, truncated or bomb images.

    The pixel count is read from the header and checked before a single pixel is decoded: a 50 KB PNG can
    declare 100 000 x 100 000 pixels and would take 30 GB to open.
    """
    if not data:
        raise ImageRejected(422, "invalid_image", "the image is empty")
    if len(data) > max_bytes:
        raise ImageRejected(413, "payload_too_large", f"the image exceeds {max_bytes} bytes (KB_MAX_IMAGE_BYTES)")
    kind = image_format(data)
    if kind is None:
        raise ImageRejected(415, "unsupported_media_type", "the file is not a PNG, JPEG or WebP image")
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data), formats=[kind])
            width, height = image.size
            if width * height > max_pixels:
                raise ImageRejected(
                    413,
                    "image_too_large",
                    f"the image has {width} x {height} pixels, more than "
                    f"{max_pixels} (KB_MAX_IMAGE_PIXELS); crop it to the error",
                )
            image.load()
        except ImageRejected:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise ImageRejected(
                413, "image_too_large", "the image declares more pixels than the manual reads"
            ) from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
            # Pillow reports a cut-off or corrupt file as OSError ("image file is truncated") or SyntaxError
            raise ImageRejected(422, "invalid_image", f"the {kind} image cannot be decoded: {exc}") from None
    return np.asarray(_flatten(image))


def _flatten(image: Image.Image) -> Image.Image:
    """RGB, with any transparency laid on white (a transparent PNG of black text would read as all black)."""
    if image.mode in ("RGBA", "LA", "P", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, WHITE)
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")
