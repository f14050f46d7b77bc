"""The OCR engine: RapidOCR's PP-OCRv6 detection and recognition models, run by onnxruntime on the CPU.

The models come inside the `rapidocr` wheel (Chinese and English in one recogniser); nothing is fetched
at run time. Loading takes about a second and 200 MB, so it happens on the first image, not at start-up.
Detection and recognition are driven here step by step so that the work stops at a deadline between
batches instead of running on unbounded.
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass
from functools import cache

import numpy as np

# A side longer than this is scaled down before detection: the cost of detection grows with the pixels,
# and text on a 4K screenshot is still legible at half size.
MAX_SIDE = 2560
REC_BATCH = 6  # crops recognised at once (RapidOCR's default): each is padded to the widest, so memory grows with it
MAX_BOXES = 600  # more text boxes than a full 4K terminal holds: the rest is noise or a page of prose
MIN_SCORE = 0.5
CROP_PAD = 0.15  # share of a box's height added above and below it before recognition  # recognitions the model is less sure of are mostly icons, cursors and window chrome


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
                params = {"Global.log_level": "warning", "Global.use_cls": False, "Det.use_dilation": False,
                          "Det.box_thresh": 0.4,
                          "EngineConfig.onnxruntime.intra_op_num_threads": self.threads or -1,
                          "EngineConfig.onnxruntime.inter_op_num_threads": 1}
                ocr = RapidOCR(params=params)
                # the pinned release's own loaders: they resolve the models shipped in the wheel
                self._models = (ocr._load_det_model(), ocr._load_rec_model())
        return self._models

    def warm_up(self) -> None:
        """Load the models now (the benchmark times loading apart from reading)."""
        self._load()

    def read(self, image: np.ndarray, deadline: float) -> list[TextBox]:
        """Every run of text in an RGB image, top to bottom; OcrTimeout past ``deadline`` (monotonic)."""
        try:
            return self._read(image, deadline)
        finally:
            _return_freed_memory()

    def _read(self, image: np.ndarray, deadline: float) -> list[TextBox]:
        detector, recogniser = self._load()
        scale = min(1.0, MAX_SIDE / max(image.shape[:2]))
        bgr = np.ascontiguousarray(_scaled(image, scale)[:, :, ::-1])  # the models were trained on BGR
        found = detector(bgr)
        if found.boxes is None or len(found.boxes) == 0:
            return []
        boxes = [_bounds(quad, bgr.shape) for quad in found.boxes[:MAX_BOXES]]
        boxes = [_padded(box, bgr.shape) for box in boxes]
        crops = [bgr[top:bottom, left:right] for left, top, right, bottom in boxes]
        order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / max(1, crops[i].shape[0]))
        texts: dict[int, tuple[str, float, tuple]] = {}
        for start in range(0, len(order), REC_BATCH):
            if time.monotonic() > deadline:
                raise OcrTimeout()
            batch = order[start:start + REC_BATCH]
            result = recogniser(_rec_input([crops[i] for i in batch]))
            for i, text, score, words in zip(batch, result.txts, result.scores, result.word_results):
                texts[i] = (text, score, _char_centres(words, crops[i].shape[1]))
        if time.monotonic() > deadline:
            raise OcrTimeout()
        return [TextBox(text, left / scale, top / scale, right / scale, bottom / scale, float(score),
                        tuple((char, (left + x) / scale) for char, x in centres))
                for i, (left, top, right, bottom) in enumerate(boxes)
                for text, score, centres in [texts[i]] if text.strip() and score >= MIN_SCORE]


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
    if scale >= 1.0:
        return image
    import cv2

    height, width = image.shape[:2]
    return cv2.resize(image, (max(1, round(width * scale)), max(1, round(height * scale))), interpolation=cv2.INTER_AREA)


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
    return tuple((char, (col + 0.5) * frame) for chars, cols in zip(words.words, words.word_cols)
                 for char, col in zip(chars, cols))
