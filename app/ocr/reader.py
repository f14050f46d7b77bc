"""Read the text of a screenshot: checked, bounded in time and in concurrency, never stored."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from app.ocr.engine import OcrEngine, OcrTimeout
from app.ocr.image import ImageRejected, decode_image
from app.ocr.layout import to_lines
from app.settings import Settings


@dataclass(frozen=True)
class ImageText:
    """What was read from an image: the lines, as one text the matcher takes, and the time it took."""

    text: str
    took_ms: float


class ImageReader:
    """Decodes, reads and lays out screenshots; at most ``concurrency`` images at once in one process.

    OCR is CPU-bound and each image uses every core onnxruntime is given, so a second image read at the
    same time only makes both slower: further images wait for a slot, up to ``queue_timeout`` seconds.
    """

    def __init__(
        self,
        *,
        max_bytes: int,
        max_pixels: int,
        timeout: float,
        concurrency: int,
        queue_timeout: float,
        threads: int = 0,
    ):
        self.max_bytes = max_bytes
        self.max_pixels = max_pixels
        self.timeout = timeout
        self.queue_timeout = queue_timeout
        self.engine = OcrEngine(threads)
        self._slots = threading.BoundedSemaphore(concurrency)

    @classmethod
    def from_settings(cls, settings: Settings) -> ImageReader:
        return cls(
            max_bytes=settings.max_image_bytes,
            max_pixels=settings.max_image_pixels,
            timeout=settings.ocr_timeout,
            concurrency=settings.ocr_concurrency,
            queue_timeout=settings.queue_timeout,
            threads=settings.ocr_threads,
        )

    def read(self, data: bytes) -> ImageText:
        """The text of a PNG, JPEG or WebP screenshot; ImageRejected (with its HTTP status) when it has none.

        Blocking and CPU-bound: call it from a worker thread.
        """
        started = time.monotonic()
        pixels = decode_image(data, max_bytes=self.max_bytes, max_pixels=self.max_pixels)
        if not self._slots.acquire(timeout=self.queue_timeout):
            raise ImageRejected(503, "overloaded", "other images are being read; retry in a moment")
        try:
            boxes = self.engine.read(pixels, deadline=started + self.timeout)
        except OcrTimeout:
            raise ImageRejected(
                422,
                "image_too_busy",
                f"reading the image took longer than {self.timeout:g} s "
                "(KB_OCR_TIMEOUT); crop it to the error and try again",
            ) from None
        finally:
            self._slots.release()
        text = "\n".join(to_lines(boxes)).strip()
        if not text:
            raise ImageRejected(422, "no_text", "no text was found in the image; paste the error as text instead")
        return ImageText(text, (time.monotonic() - started) * 1000)
