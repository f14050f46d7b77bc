"""Render pastes as the screenshots users share: terminals, a notebook cell, a chat bubble, a JPEG.

Drawn from the text with real fonts (Debian's fonts-dejavu-core and fonts-noto-cjk), so the test set
is made from the development set's pastes instead of being committed as images.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

MONO = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
SANS = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
CJK = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
CJK_SC_INDEX = 2  # Noto Sans CJK SC inside the collection
FONT_PACKAGES = "fonts-dejavu-core fonts-noto-cjk"
WIDE_RE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]+")
ERROR_LINE_RE = re.compile(r"\b[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b|\bError\b|ERROR|error:")
# Chinese UI text a chat screenshot carries around the pasted error
CHAT_BEFORE = ("张伟", "下午 3:42", "训练跑到第 3 步就挂了，报错如下，有人遇到过吗？")
CHAT_AFTER = ("李娜", "下午 3:45", "看起来是配置的问题，我查一下手册")


def fonts_available() -> bool:
    return MONO.exists() and SANS.exists() and CJK.exists()


@cache
def _font(path: Path, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(path), size, index=CJK_SC_INDEX if path == CJK else 0)


@dataclass(frozen=True)
class Style:
    name: str
    background: tuple[int, int, int]
    foreground: tuple[int, int, int]
    font_size: int
    columns: int | None = None  # the window's width in characters; longer lines wrap (or are cut)
    cut: bool = False  # long lines are cut at the window edge instead of wrapping
    canvas: tuple[int, int] | None = (1920, 1080)  # a full-screen shot; None: the window alone
    chrome: str = "terminal"  # terminal, notebook or chat
    jpeg_quality: int | None = None


DARK, LIGHT = (30, 30, 30), (250, 250, 250)
STYLES = [
    Style("dark-14", DARK, (204, 204, 204), 14),
    Style("light-14", LIGHT, (36, 36, 36), 14),
    Style("dark-20", (0, 43, 54), (238, 232, 213), 20),
    Style("light-20", (255, 255, 255), (0, 0, 0), 20),
    Style("cropped-window", DARK, (220, 220, 220), 16, columns=100, cut=True, canvas=None),
    Style("notebook-cell", (255, 221, 221), (30, 30, 30), 14, columns=110, canvas=None, chrome="notebook"),
    Style("chat-bubble-zh", (255, 255, 255), (25, 25, 25), 15, columns=90, canvas=None, chrome="chat"),
    Style("chat-jpeg", (40, 44, 52), (171, 178, 191), 15, columns=110, canvas=None, jpeg_quality=70),
]


def visible_lines(text: str, limit: int = 40) -> list[str]:
    """The part of a paste one screenshot shows: up to ``limit`` lines ending at its last error line."""
    lines = [line.rstrip().expandtabs(4) for line in text.splitlines() if not line.startswith("# ")]
    while lines and not lines[-1].strip():
        lines.pop()
    last_error = max((i for i, line in enumerate(lines) if ERROR_LINE_RE.search(line)), default=len(lines) - 1)
    end = min(len(lines), last_error + 3)
    return lines[max(0, end - limit) : end]


def shown_text(lines: list[str], style: Style) -> str:
    """The text a reader sees in the screenshot: lines cut at the window edge where the style cuts them."""
    columns = _columns(style)
    return "\n".join(line[:columns] if style.cut else line for line in lines)


def _columns(style: Style) -> int:
    if style.columns:
        return style.columns
    width = style.canvas[0] if style.canvas else 1920
    return int((width - 40) / _font(MONO, style.font_size).getlength("M"))


def _rows(lines: list[str], style: Style) -> list[str]:
    """Terminal rows: a long line wraps onto the next row at the window's width (or is cut there)."""
    columns = _columns(style)
    rows = []
    for line in lines:
        if style.cut or len(line) <= columns:
            rows.append(line[:columns])
        else:
            rows.extend(line[i : i + columns] for i in range(0, len(line), columns))
    return rows


def render(lines: list[str], style: Style) -> bytes:
    """The screenshot of ``lines`` in ``style``, encoded as PNG (or JPEG for the chat-app style)."""
    rows = _rows(lines, style)
    size = style.font_size
    line_height = round(size * 1.45)
    char = _font(MONO, size).getlength("M")
    body_width = round(char * max((len(row) + len(WIDE_RE.findall(row)) for row in rows), default=1)) + 32
    body_height = line_height * len(rows) + 24
    body = Image.new("RGB", (body_width, body_height), style.background)
    draw = ImageDraw.Draw(body)
    for index, row in enumerate(rows):
        _draw_row(draw, (16, 12 + index * line_height), row, size, _row_colour(row, style))
    framed = {"terminal": _terminal, "notebook": _notebook, "chat": _chat}[style.chrome](body, style)
    if style.canvas:
        canvas = Image.new("RGB", style.canvas, (60, 63, 65))
        canvas.paste(
            framed.crop((0, 0, min(framed.width, style.canvas[0]), min(framed.height, style.canvas[1]))), (0, 0)
        )
        framed = canvas
    out = io.BytesIO()
    if style.jpeg_quality:
        framed.save(out, "JPEG", quality=style.jpeg_quality)
    else:
        framed.save(out, "PNG")
    return out.getvalue()


def _row_colour(row: str, style: Style) -> tuple[int, int, int]:
    """Error lines in red, as terminals and notebooks colour them."""
    if ERROR_LINE_RE.search(row) and style.chrome != "chat":
        return (224, 108, 117) if sum(style.background) < 300 else (178, 34, 34)
    return style.foreground


def _draw_row(draw: ImageDraw.ImageDraw, origin: tuple[int, int], row: str, size: int, colour) -> None:
    """Draw a row cell by cell like a terminal: Chinese characters take two cells, in the CJK font."""
    x, y = origin
    cell = _font(MONO, size).getlength("M")
    position = 0
    for match in [*WIDE_RE.finditer(row), None]:
        end = match.start() if match else len(row)
        narrow = row[position:end]
        if narrow:
            draw.text((x, y), narrow, font=_font(MONO, size), fill=colour)
            x += cell * len(narrow)
        if match:
            for wide in match.group():
                draw.text((x, y - size * 0.1), wide, font=_font(CJK, size), fill=colour)
                x += cell * 2
            position = match.end()


def _terminal(body: Image.Image, style: Style) -> Image.Image:
    bar = 28
    framed = Image.new(
        "RGB", (body.width, body.height + bar), (56, 56, 56) if sum(style.background) < 300 else (222, 222, 222)
    )
    draw = ImageDraw.Draw(framed)
    for i, colour in enumerate([(255, 95, 86), (255, 189, 46), (39, 201, 63)]):
        draw.ellipse((10 + i * 20, 8, 22 + i * 20, 20), fill=colour)
    draw.text((body.width // 2 - 60, 6), "user@gpu-node: ~/verl", font=_font(SANS, 13), fill=(150, 150, 150))
    framed.paste(body, (0, bar))
    return framed


def _notebook(body: Image.Image, style: Style) -> Image.Image:
    prompt = 80
    framed = Image.new("RGB", (body.width + prompt + 20, body.height + 70), (255, 255, 255))
    draw = ImageDraw.Draw(framed)
    draw.rectangle((prompt, 8, framed.width - 10, 40), fill=(245, 245, 245), outline=(207, 207, 207))
    draw.text(
        (prompt + 8, 16),
        "!python3 -m verl.trainer.main_ppo --config-name=ppo_trainer",
        font=_font(MONO, 13),
        fill=(0, 0, 0),
    )
    draw.text((8, 16), "In [7]:", font=_font(MONO, 13), fill=(48, 63, 159))
    framed.paste(body, (prompt, 56))
    return framed


def _chat(body: Image.Image, style: Style) -> Image.Image:
    width = max(body.width + 120, 700)
    framed = Image.new("RGB", (width, body.height + 230), (237, 237, 237))
    draw = ImageDraw.Draw(framed)
    chinese, small = _font(CJK, 16), _font(CJK, 12)
    name, when, said = CHAT_BEFORE
    draw.text((70, 10), f"{name}  {when}", font=small, fill=(120, 120, 120))
    draw.rounded_rectangle((66, 30, 80 + chinese.getlength(said), 62), 6, fill=(255, 255, 255))
    draw.text((74, 36), said, font=chinese, fill=(25, 25, 25))
    draw.rounded_rectangle((66, 74, 74 + body.width, 82 + body.height), 6, fill=style.background)
    framed.paste(body, (70, 78))
    name, when, said = CHAT_AFTER
    top = body.height + 100
    draw.text((70, top), f"{name}  {when}", font=small, fill=(120, 120, 120))
    draw.rounded_rectangle((66, top + 20, 80 + chinese.getlength(said), top + 52), 6, fill=(149, 236, 105))
    draw.text((74, top + 26), said, font=chinese, fill=(25, 25, 25))
    for i in range(2):
        draw.ellipse((14, 12 + i * (top - 10), 54, 52 + i * (top - 10)), fill=(100 + 80 * i, 140, 200))
    return framed
