"""Screenshots to text: image checks, the offline OCR engine, and the layout of terminal lines."""

from app.ocr.image import ImageRejected
from app.ocr.reader import ImageReader, ImageText

__all__ = ["ImageReader", "ImageRejected", "ImageText"]
