"""Turn the text boxes OCR finds into the lines of a log: rows, indentation, wrapped lines joined, ASCII kept.

General OCR returns runs of text with their positions; the normaliser and the block reader need what the
terminal showed: one line per log line, a traceback's indentation ("  File", "    code"), and the
punctuation of Python (`_ . : ' "`) rather than the full-width forms a Chinese recogniser prefers.
"""

from __future__ import annotations

import re
import statistics
from itertools import pairwise

from app.matcher.normalise import RECORD_START_RE
from app.ocr.engine import TextBox

WIDE_RE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
CJK_RE = re.compile(r"[\u2e80-\u9fff]")
# Full-width forms the recogniser emits for ASCII punctuation in code: mapped back in lines of code
FULL_WIDTH = str.maketrans(
    {
        "，": ",",
        "：": ":",
        "；": ";",
        "（": "(",
        "）": ")",
        "“": '"',
        "”": '"',
        "‘": "'",
        "’": "'",
        "【": "[",
        "】": "]",
        "！": "!",
        "？": "?",
        "。": ".",
        "　": " ",
        "＝": "=",
        "［": "[",
        "］": "]",
        "｛": "{",
        "｝": "}",
        "＜": "<",
        "＞": ">",
        "｜": "|",
        "～": "~",
    }
)
SPACE_BEFORE_PUNCT_RE = re.compile(r"(?<=[\w)\]'\"]) (?=[.,:)\]](?:\S|$))")
# A terminal wraps at a fixed column, so a wrapped line is nearly always cut inside a word or a path
TOKEN_END_RE = re.compile(r"[\w/.\-]$")
TOKEN_START_RE = re.compile(r"[\w/.\-'\"]")
SPACE_CELLS = 0.6  # two characters this share of a cell further apart than adjacent ones have a space between
ROW_OVERLAP = 0.5  # boxes whose middles are closer than half a text height share a row
SPACE_GAP = 0.3  # a gap wider than this share of a character is a space between two boxes
WRAP_SLACK = 3.0  # a row ending this many characters from the right edge may have filled the window


class Row:
    """Boxes on one line of the screen, left to right."""

    def __init__(self, box: TextBox):
        self.boxes = [box]

    @property
    def middle(self) -> float:
        return statistics.fmean(box.middle for box in self.boxes)

    @property
    def left(self) -> float:
        return self.boxes[0].left

    @property
    def right(self) -> float:
        return self.boxes[-1].right

    def text(self, char_width: float) -> str:
        """The row's boxes joined, with one space where the screen shows a gap."""
        parts = [spaced(self.boxes[0], char_width)]
        for before, box in pairwise(self.boxes):
            if before.chars and box.chars:  # the detector's boxes overlap: measure between the characters
                last, first = before.chars[-1], box.chars[0]
                apart = (first[1] - last[1]) / char_width - (_cells(last[0]) + _cells(first[0])) / 2 > SPACE_CELLS
            else:
                apart = box.left - before.right > SPACE_GAP * char_width
            parts.append((" " if apart else "") + spaced(box, char_width))
        return "".join(parts)


def spaced(box: TextBox, cell: float) -> str:
    """The box's text with the spaces the recogniser dropped put back where its characters stand apart.

    The recogniser reads `only support` in 14 px monospace as `onlysupport`; but it also says where each
    character was, and in a monospace font a space is a gap of one more cell between two characters.
    """
    if not box.chars or "".join(char for char, _ in box.chars) != box.text.replace(" ", ""):
        return box.text
    out, had_space = [box.chars[0][0]], set(_space_positions(box.text))
    for index, ((left, x_left), (right, x_right)) in enumerate(pairwise(box.chars), 1):
        expected = (_cells(left) + _cells(right)) / 2
        # CTC must emit a blank between two equal characters, which delays the second (`ll`, `__`), and an
        # underscore's position is vague: neither gap says anything about a space
        trusted = left != right and "_" not in (left, right)
        if index in had_space or (trusted and (x_right - x_left) / cell - expected > SPACE_CELLS):
            out.append(" ")
        out.append(right)
    return "".join(out)


def _space_positions(text: str) -> list[int]:
    """Indexes (among the non-space characters) before which the text has a space."""
    positions, count = [], 0
    for char in text:
        if char == " ":
            positions.append(count)
        else:
            count += 1
    return positions


def rows_of(boxes: list[TextBox]) -> list[Row]:
    """Group boxes into rows top to bottom, each row sorted left to right."""
    if not boxes:
        return []
    height = statistics.median(box.height for box in boxes)
    rows: list[Row] = []
    for box in sorted(boxes, key=lambda box: box.middle):
        if rows and abs(box.middle - rows[-1].middle) < ROW_OVERLAP * height:
            rows[-1].boxes.append(box)
        else:
            rows.append(Row(box))
    for row in rows:
        row.boxes.sort(key=lambda box: box.left)
    return rows


def char_width(boxes: list[TextBox]) -> float:
    """The width of one monospace cell: the usual distance between two neighbouring characters, or failing
    that the width of the longest boxes (whose padding matters least)."""
    steps = [(b[1] - a[1]) / ((_cells(a[0]) + _cells(b[0])) / 2) for box in boxes for a, b in pairwise(box.chars)]
    if len(steps) >= 10:
        return max(1.0, statistics.median(steps))
    cells = [(box.right - box.left) / _cells(box.text) for box in boxes if _cells(box.text) >= 6]
    if not cells:
        cells = [(box.right - box.left) / max(1, _cells(box.text)) for box in boxes]
    return max(1.0, statistics.median(cells)) if cells else 8.0


def _cells(text: str) -> int:
    return len(text) + len(WIDE_RE.findall(text))


def to_lines(boxes: list[TextBox]) -> list[str]:
    """The log lines a screenshot shows, as the normaliser expects them."""
    rows = rows_of(boxes)
    if not rows:
        return []
    cell = char_width(boxes)
    margin = min(row.left for row in rows)
    right_edge = max(row.right for row in rows)
    pitch = statistics.median([b.middle - a.middle for a, b in pairwise(rows)] or [0.0])
    lines: list[str] = []
    wrapped = False
    for before, row in zip([None, *rows], rows, strict=False):
        text = _ascii_punctuation(row.text(cell))
        indent = max(0, round((row.left - margin) / cell))
        adjacent = before is not None and row.middle - before.middle < 1.5 * pitch  # no blank line between
        # the tail of a wrapped line starts at the window's first column, never right of the line it continues
        at_first_column = before is not None and row.left <= before.left + 0.5 * cell
        if wrapped and adjacent and at_first_column and _continues(lines[-1], text):
            lines[-1] += text  # the terminal wrapped this line at the window's edge: it continues the row above
        else:
            lines.append(" " * indent + text)
        wrapped = row.right >= right_edge - WRAP_SLACK * cell and not CJK_RE.search(text)
    return lines


def _continues(line: str, text: str) -> bool:
    """Whether ``text`` reads as the wrapped tail of ``line``: a cut through a token, not a new record."""
    return bool(
        TOKEN_END_RE.search(line)
        and TOKEN_START_RE.match(text)
        and not RECORD_START_RE.match(text)
        and not CJK_RE.search(text)
    )


def _ascii_punctuation(text: str) -> str:
    """Full-width punctuation back to ASCII in a line of code or log (a line mostly in Chinese keeps it)."""
    if len(CJK_RE.findall(text)) * 3 > len(text):
        return text
    return SPACE_BEFORE_PUNCT_RE.sub("", text.translate(FULL_WIDTH))
