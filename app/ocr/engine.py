"""The OCR engine: RapidOCR's PP-OCRv6 detection and recognition models, run by onnxruntime on the CPU.

The models come inside the `rapidocr` wheel (Chinese and English in one recogniser); nothing is fetched
at run time. Loading takes about a second and 200 MB, so it happens on the first image, not at start-up.
Detection and recognition are driven here step by step so that the work stops at a deadline between
two boxes instead of running on unbounded.
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass
from functools import cache

import numpy as np

# The detector sees the screenshot without its uniform margins, its longer side scaled down to this: its cost
# grows with the pixels, and terminal text of 14 px at 1920 wide is still found at 1280 (rows 13 px apart).
# The recogniser reads each box from the full-size image, so the characters keep every pixel.
DETECT_MAX_SIDE = 1280
DETECT_MIN_SIDE = 736  # a small screenshot is scaled up to this shorter side (RapidOCR's default), not beyond the max
UNIFORM_SPREAD = 12  # a row or column whose channels vary less than this is background (JPEG noise included)
TRIM_PAD = 32  # background kept around the content: the detector's map is weak at the very edge of its input
MAX_BOXES = 600  # more text boxes than a full 4K terminal holds: the rest is noise or a page of prose
MIN_SCORE = 0.5  # recognitions the model is less sure of are mostly icons, cursors and window chrome
CROP_PAD = 0.15  # share of a box's height added above and below it before recognition


class OcrTimeout(Exception):
    """Reading the image took longer than the configured limit."""


@dataclass(frozen=True)
class TextBox:
    """One run of text the engine found, in pixels of the original image."""

    text: str
    left: float
    top: float
    right: float
    bottom: float
    score: float
    # each character the recogniser emitted (spaces aside) with the x of its centre, when it told us
    chars: tuple[tuple[str, float], ...] = ()

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def middle(self) -> float:
        return (self.top + self.bottom) / 2


class OcrEngine:
    """Lazily loaded detector and recogniser; safe to share between threads."""

    def __init__(self, threads: int = 0):
        self.threads = threads
        self._lock = threading.Lock()
        self._models = None

    @property
    def loaded(self) -> bool:
        return self._models is not None

    def _load(self):
        with self._lock:
            if self._models is None:
                from rapidocr import RapidOCR  # imported here: onnxruntime and OpenCV cost 0.5 s and 100 MB

                # Terminal rows sit closer than the lines of a document: without dilation and with a lower box
                # threshold the detector keeps two rows apart instead of dropping the merged region
                params = {
                    "Global.log_level": "warning",
                    "Global.use_cls": False,
                    "Det.use_dilation": False,
                    "Det.box_thresh": 0.4,
                    # the image comes already sized (detection_scale): no second resize inside
                    "Det.limit_type": "max",
                    "Det.limit_side_len": 1 << 16,
                    "EngineConfig.onnxruntime.intra_op_num_threads": self.threads or -1,
                    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
                }
                ocr = RapidOCR(params=params)
                # the pinned release's own loaders: they resolve the models shipped in the wheel
                self._models = (ocr._load_det_model(), ocr._load_rec_model())
        return self._models

    def warm_up(self) -> None:
        """Load the models now (the benchmark times loading apart from reading)."""
        self._load()

    def read(self, image: np.ndarray, deadline: float, stats: dict | None = None) -> list[TextBox]:
        """Every run of text in an RGB image, top to bottom; OcrTimeout past ``deadline`` (monotonic).

        ``stats``, when given, receives what the benchmark reports: the detector's input size, the boxes
        found and the CPU seconds of this process spent detecting and recognising.
        """
        try:
            return self._read(image, deadline, {} if stats is None else stats)
        finally:
            _return_freed_memory()

    def _read(self, image: np.ndarray, deadline: float, stats: dict) -> list[TextBox]:
        detector, recogniser = self._load()
        started = time.process_time()
        bgr = np.ascontiguousarray(image[:, :, ::-1])  # the models were trained on BGR
        boxes = self._detect(detector, bgr, stats)
        stats.update(boxes=len(boxes), detect_cpu_s=time.process_time() - started)
        started = time.process_time()
        found = []
        # one crop at a time: a batch is padded to its widest crop, and the boxes of a terminal range from a
        # prompt to a full-width line, so batches of 6 cost 1.3x the CPU and twice the peak memory
        for left, top, right, bottom in boxes:
            if time.monotonic() > deadline:
                raise OcrTimeout()
            result = recogniser(_rec_input([bgr[top:bottom, left:right]]))
            text, score, words = result.txts[0], result.scores[0], result.word_results[0]
            if text.strip() and score >= MIN_SCORE:
                found.append(
                    TextBox(
                        text,
                        left,
                        top,
                        right,
                        bottom,
                        float(score),
                        tuple((char, left + x) for char, x in _char_centres(words, right - left)),
                    )
                )
        stats["recognise_cpu_s"] = time.process_time() - started
        if time.monotonic() > deadline:
            raise OcrTimeout()
        return found

    @staticmethod
    def _detect(detector, bgr: np.ndarray, stats: dict) -> list[tuple[int, int, int, int]]:
        """The padded box of every run of text, in pixels of ``bgr``; found on its content, scaled down."""
        left, top, right, bottom = content_box(bgr)
        scale = detection_scale(bottom - top, right - left)
        region = _scaled(bgr[top:bottom, left:right], scale)
        stats["detect_input"] = region.shape[:2]
        found = detector(region)
        if found.boxes is None or len(found.boxes) == 0:
            return []
        return [_padded(_bounds(quad / scale + (left, top), bgr.shape), bgr.shape) for quad in found.boxes[:MAX_BOXES]]


def content_box(image: np.ndarray) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of the image without its margins of one colour (a desktop around a window,
    the empty rows under a short log), keeping TRIM_PAD pixels of them."""
    height, width = image.shape[:2]
    rows = np.flatnonzero(np.ptp(image, axis=1).max(axis=1) > UNIFORM_SPREAD)
    columns = np.flatnonzero(np.ptp(image, axis=0).max(axis=1) > UNIFORM_SPREAD)
    if len(rows) == 0 or len(columns) == 0:
        return 0, 0, width, height
    return (
        max(0, int(columns[0]) - TRIM_PAD),
        max(0, int(rows[0]) - TRIM_PAD),
        min(width, int(columns[-1]) + 1 + TRIM_PAD),
        min(height, int(rows[-1]) + 1 + TRIM_PAD),
    )


def detection_scale(height: int, width: int) -> float:
    """The factor the detector's input is resized by: down to DETECT_MAX_SIDE, up to DETECT_MIN_SIDE."""
    return min(DETECT_MAX_SIDE / max(height, width), max(1.0, DETECT_MIN_SIDE / max(1, min(height, width))))


@cache
def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to trim
        return None


def _return_freed_memory() -> None:
    """Hand the memory one image's tensors used back to the system: glibc otherwise keeps it, and a server
    measured 537 MiB resident after eight screenshots instead of 210 MiB."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def _scaled(image: np.ndarray, scale: float) -> np.ndarray:
    if scale == 1.0:
        return image
    import cv2

    height, width = image.shape[:2]
    return cv2.resize(
        image,
        (max(1, round(width * scale)), max(1, round(height * scale))),
        interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
    )


def _bounds(quad: np.ndarray, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The upright rectangle around a detected quadrilateral, inside the image (screenshots are not rotated)."""
    height, width = shape[:2]
    left, top = np.floor(quad.min(axis=0)).astype(int)
    right, bottom = np.ceil(quad.max(axis=0)).astype(int)
    return max(0, left), max(0, top), min(width, max(right, left + 1)), min(height, max(bottom, top + 1))


def _padded(box: tuple[int, int, int, int], shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The box with a margin above and below: the detector's box often cuts through the underscores and the
    descenders of small monospace text, and `n_gpus` read from a cut crop comes out as `n gpus`."""
    left, top, right, bottom = box
    pad = max(1, round((bottom - top) * CROP_PAD))
    return left, max(0, top - pad), right, min(shape[0], bottom + pad)


def _rec_input(crops: list[np.ndarray]):
    from rapidocr.ch_ppocr_rec import TextRecInput

    return TextRecInput(img=crops, return_word_box=True)


def _char_centres(words, width: int) -> tuple[tuple[str, float], ...]:
    """Each recognised character with its x in the crop, from the CTC frame it was emitted at."""
    if not words or not words.line_txt_len:
        return ()
    frame = width / words.line_txt_len
    return tuple(
        (char, (col + 0.5) * frame)
        for chars, cols in zip(words.words, words.word_cols, strict=True)
        for char, col in zip(chars, cols, strict=True)
    )
