"""Screenshots as input: rendered with real fonts, read by the real OCR engine, matched like their text."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import zlib

import httpx
import pytest
from mcp import Client
from PIL import Image

from app.ingest import ingest
from app.ocr import ImageReader, ImageRejected
from app.ocr.engine import TextBox
from app.ocr.layout import to_lines
from app.settings import ROOT
from app.web.app import create_app
from benchmarks.screenshots import FONT_PACKAGES, STYLES, fonts_available, render
from tests.conftest import LiveServer
from tests.test_insights import PRIVATE, TOKEN, _database_text, flush, insights_settings, served
from tests.test_mcp import _call, _payload

STYLE = {style.name: style for style in STYLES}
KV_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/verl/workers/rollout/vllm_rollout.py", line 12, in __init__',
    "    self.engine = LLM(**kwargs)",
    "(WorkerDict pid=48211, ip=10.0.3.7) ValueError: No available memory for the cache blocks.",
]
KV_MESSAGE = "ValueError: No available memory for the cache blocks."


def screenshot(style: str, lines: list[str] = KV_TRACEBACK) -> bytes:
    if not fonts_available():
        pytest.skip(f"fonts missing: apt-get install {FONT_PACKAGES} (CI installs them and requires these tests)")
    return render(lines, STYLE[style])


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bomb(width: int, height: int) -> bytes:
    """A PNG of a few hundred bytes declaring ``width`` x ``height`` pixels: zeros compress 1000:1."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * 200_000, 9)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", pixels) + png_chunk(b"IEND", b"")


def blank_png(width: int = 800, height: int = 400) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (30, 30, 30)).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def http(live_server):
    with httpx.Client(base_url=live_server.url, timeout=120) as client:
        yield client


def match_image(http: httpx.Client, data: bytes, name: str = "shot.png", kind: str = "image/png") -> httpx.Response:
    return http.post("/api/v1/match", files={"image": (name, data, kind)})


@pytest.mark.parametrize("style", ["dark-14", "chat-jpeg"])
def test_screenshot_gets_the_entry_its_text_gets(http, style):
    from_text = http.post("/api/v1/match", json={"text": "\n".join(KV_TRACEBACK)}).json()
    response = match_image(http, screenshot(style))
    assert response.status_code == 200, response.text
    from_image = response.json()
    assert from_image["matches"][0]["code"] == from_text["matches"][0]["code"] == "ROLL-901"
    assert from_image["matches"][0]["confidence"] == "high"
    assert KV_MESSAGE in from_image["ocr_text"] and from_image["ocr_ms"] > 0


def test_text_read_keeps_traceback_indentation(http):
    read = match_image(http, screenshot("light-20")).json()["ocr_text"].splitlines()
    frame = next(line for line in read if "File" in line)
    code = next(line for line in read if "LLM(**kwargs)" in line)
    assert frame.startswith("  File ") and code.startswith("    self.engine")


BAD_IMAGES = [
    (b"hello, not an image", "a.png", 415, "unsupported_media_type"),
    (b"GIF89a" + b"\x00" * 64, "a.gif", 415, "unsupported_media_type"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "cut.png", 422, "invalid_image"),
    (png_bomb(100_000, 100_000), "bomb.png", 413, "image_too_large"),
    (png_bomb(6_000, 6_000), "big.png", 413, "image_too_large"),
]


@pytest.mark.parametrize("data,name,status,code", BAD_IMAGES)
def test_bad_images_are_refused_with_4xx(http, data, name, status, code):
    response = match_image(http, data, name)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code and response.json()["error"]["message"]


def test_bad_images_are_refused_on_the_paste_page_and_through_mcp(http, live_server):
    """The same images as above, dropped on /paste (the form comes back with the reason) and sent to MCP
    `diagnose_log` (a tool error the agent can read): never a 5xx, never a hang."""
    for data, name, status, _code in BAD_IMAGES:
        page = http.post("/paste", files={"image": (name, data, "image/png")})
        assert page.status_code == status and 'id="paste-text"' in page.text

    async def call():
        async with Client(f"{live_server.url}/mcp") as client:
            return [
                await client.call_tool("diagnose_log", {"image_base64": base64.b64encode(data).decode()})
                for data, *_ in BAD_IMAGES
            ]

    for answer in asyncio.run(call()):
        assert answer.is_error and answer.content[0].text


def test_truncated_screenshot_is_422(http):
    whole = blank_png()
    response = match_image(http, whole[: len(whole) // 2])
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_image"


def test_image_without_text_is_422(http):
    response = match_image(http, blank_png())
    assert response.status_code == 422 and response.json()["error"]["code"] == "no_text"


def test_image_over_the_size_setting_is_413(settings):
    small = settings.model_copy(update={"max_image_bytes": 65536})
    out = io.BytesIO()
    Image.frombytes("RGB", (200, 200), os.urandom(200 * 200 * 3)).save(out, "PNG")  # noise: about 120 KB
    ingest(small)
    with LiveServer(create_app(small)) as server:
        response = httpx.post(
            f"{server.url}/api/v1/match", files={"image": ("a.png", out.getvalue(), "image/png")}, timeout=60
        )
    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"


def test_multipart_without_image_or_text_is_422(http):
    response = http.post("/api/v1/match", files={"limit": (None, "3")})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_input"


def test_multipart_text_part_is_matched(http):
    response = http.post("/api/v1/match", files={"text": (None, KV_MESSAGE)})
    assert response.status_code == 200 and response.json()["matches"][0]["code"] == "ROLL-901"


def test_reading_stops_at_the_time_limit():
    reader = ImageReader(max_bytes=1 << 24, max_pixels=1 << 26, timeout=0.001, concurrency=1, queue_timeout=1)
    with pytest.raises(ImageRejected) as refused:
        reader.read(screenshot("dark-14"))
    assert refused.value.status == 422 and refused.value.code == "image_too_busy"


def test_mcp_diagnose_log_reads_a_base64_screenshot(live_server):
    image = base64.b64encode(screenshot("cropped-window")).decode()

    async def call():
        async with Client(f"{live_server.url}/mcp") as client:
            good = await client.call_tool("diagnose_log", {"image_base64": image})
            bad = await client.call_tool("diagnose_log", {"image_base64": base64.b64encode(b"not an image").decode()})
            return good, bad

    good, bad = asyncio.run(call())
    data = _payload(good)
    assert data["matches"][0]["code"] == "ROLL-901" and KV_MESSAGE in data["ocr_text"]
    assert bad.is_error and "PNG, JPEG or WebP" in bad.content[0].text


@contextlib.contextmanager
def ocr_slot_taken(settings, queue_timeout: float):
    """A live server whose only OCR slot is taken, as by an image being read; yields (server, release)."""
    settings = settings.model_copy(update={"queue_timeout": queue_timeout, "ocr_concurrency": 1})
    ingest(settings)
    app = create_app(settings)
    with LiveServer(app) as server:
        slots = app.state.kb.resources.images._slots
        slots.acquire()
        held = [True]

        def release():
            if held:
                held.pop()
                slots.release()

        try:
            yield server, release
        finally:
            release()


def send_screenshot(server: LiveServer, image: bytes, timeout: float = 600) -> httpx.Response:
    return httpx.post(f"{server.url}/api/v1/match", files={"image": ("a.png", image, "image/png")}, timeout=timeout)


def test_reading_an_image_leaves_the_event_loop_free(settings):
    """An image waiting for (or in) OCR ties up a worker thread, not the server: health checks and text
    diagnoses are answered meanwhile, and the image is answered once its turn comes."""
    image = screenshot("dark-14")  # drawn here: a skip for missing fonts inside the thread would be lost
    with ocr_slot_taken(settings, queue_timeout=600) as (server, release):
        answered: dict[str, httpx.Response] = {}
        sender = threading.Thread(target=lambda: answered.setdefault("image", send_screenshot(server, image)))
        sender.start()
        with httpx.Client(base_url=server.url, timeout=120) as http:
            assert http.get("/healthz").status_code == 200
            text = http.post("/api/v1/match", json={"text": KV_MESSAGE})
        assert text.status_code == 200 and text.json()["matches"][0]["code"] == "ROLL-901"
        assert "image" not in answered  # it still waits for the slot the others never needed
        release()
        sender.join(timeout=600)
    assert answered["image"].status_code == 200 and answered["image"].json()["matches"][0]["code"] == "ROLL-901"


def test_images_beyond_the_ocr_concurrency_get_503(settings):
    image = screenshot("dark-14")
    with ocr_slot_taken(settings, queue_timeout=0.2) as (server, _release):
        response = send_screenshot(server, image, timeout=120)
    assert response.status_code == 503 and response.json()["error"]["code"] == "overloaded"
    assert response.headers["retry-after"]


def test_screenshots_are_never_stored(tmp_path, content_dir, monkeypatch):
    """A screenshot of an error the manual does not know, with private details in it, goes through the API, the
    paste page and MCP: the miss is recorded as a fingerprint, but no table, data file or temporary file holds
    the image or the private text read from it."""
    spill = tmp_path / "tmp"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))  # where a spooled upload would land
    private = [PRIVATE["email"], PRIVATE["home"], PRIVATE["ip"]]
    image = screenshot(
        "light-20",
        [
            "Traceback (most recent call last):",
            f'  File "{PRIVATE["home"]}/verl/trainer/main_ppo.py", line 42, in run',
            f"huggingface_hub.errors.HfHubHTTPError: 401 Client Error for {PRIVATE['email']} at {PRIVATE['ip']}",
        ],
    )
    settings = insights_settings(tmp_path, content_dir, ocr_timeout=600)
    with served(settings) as server, httpx.Client(base_url=server.url, timeout=600) as http:
        answer = match_image(http, image)
        assert answer.status_code == 200, answer.text
        assert http.post("/paste", files={"image": ("shot.png", image, "image/png")}).status_code == 200
        _names, mcp = _call(server.url, "diagnose_log", {"image_base64": base64.b64encode(image).decode()})
        assert _payload(mcp)["fingerprint"] == answer.json()["fingerprint"]
        flush(server)
        misses = http.get("/api/v1/insights", headers={"Authorization": f"Bearer {TOKEN}"}).json()["misses"]
    read = answer.json()["ocr_text"]
    assert [value for value in private if value in read], f"the private details were not read: {read!r}"
    assert misses and misses[0]["exception"] == "huggingface_hub.errors.HfHubHTTPError"
    stored = _database_text(settings)
    assert not [value for value in private if value in stored]
    assert not list(spill.iterdir())
    pieces = [image[i : i + 64] for i in range(64, len(image) - 64, len(image) // 8)]
    for path in settings.data_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(piece in data for piece in pieces), f"{path} holds part of the image"


OFFLINE_READ = """
import sys
from app.ocr import ImageReader
reader = ImageReader(max_bytes=1 << 24, max_pixels=1 << 26, timeout=600, concurrency=1, queue_timeout=1)
print(reader.read(sys.stdin.buffer.read()).text)
"""


def test_ocr_needs_no_network():
    """The models come with the wheel: a process without any network interface reads a screenshot."""
    image = screenshot("cropped-window", [KV_MESSAGE])
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("cannot make a network namespace here (needs unshare and root, as in CI)")
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", OFFLINE_READ], input=image, capture_output=True, cwd=ROOT, timeout=600
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert KV_MESSAGE in done.stdout.decode()


def box(text: str, left: float, row: int, cell: float = 10.0, height: float = 20.0) -> TextBox:
    return TextBox(text, left, row * 30.0, left + cell * len(text), row * 30.0 + height, 0.99)


def test_layout_indents_by_monospace_cells_and_joins_wrapped_rows():
    lines = to_lines(
        [
            box("Traceback (most recent call last):", 0, 0),
            box('File "/a/b.py", line 3, in f', 20, 1),
            box("x = y[0]", 40, 2),
            box("(TaskRunner pid=1) RuntimeError: the tail of this line wra", 0, 3),
            box("pped at the window edge", 0, 4),
            box("new paragraph after a blank line", 0, 6),
        ]
    )
    assert lines == [
        "Traceback (most recent call last):",
        '  File "/a/b.py", line 3, in f',
        "    x = y[0]",
        "(TaskRunner pid=1) RuntimeError: the tail of this line wrapped at the window edge",
        "new paragraph after a blank line",
    ]


def test_layout_restores_ascii_punctuation_but_keeps_chinese_lines():
    lines = to_lines([box("ValueError：bad value（x）", 0, 0), box("训练跑到第3步就挂了，报错如下：", 0, 1)])
    assert lines == ["ValueError:bad value(x)", "训练跑到第3步就挂了，报错如下："]


def test_layout_puts_back_spaces_the_recogniser_dropped():
    # "only support" in monospace, 10 px a cell, read as "onlysupport": the characters say where the gap was
    placed = tuple((char, 5.0 + 10 * column) for column, char in enumerate("only support") if char != " ")
    read = TextBox("onlysupport", 0, 0, 120, 20, 0.99, placed)
    assert to_lines([read]) == ["only support"]

    # two boxes whose padding overlaps: the characters decide, not the boxes' edges
    def word(text: str, start: float) -> TextBox:
        return TextBox(
            text,
            start - 5,
            0,
            start + 10 * len(text),
            20,
            0.99,
            tuple((c, start + 5 + 10 * i) for i, c in enumerate(text)),
        )

    assert to_lines([word("ConfigAttr", 0), word("ibuteError", 100)]) == ["ConfigAttributeError"]
    assert to_lines([word("ConfigAttr", 0), word("ibuteError", 110)]) == ["ConfigAttr ibuteError"]


def test_layout_adds_no_space_inside_doubled_characters():
    # "vllm.__init__" with the second of each doubled character emitted a cell late, as CTC does
    columns, late = [], 0.0
    for column, char in enumerate("vllm.__init__"):
        late = 8.0 if column and char == "vllm.__init__"[column - 1] else 0.0
        columns.append((char, 5.0 + 10 * column + late))
    read = TextBox("vllm.__init__", 0, 0, 130, 20, 0.99, tuple(columns))
    assert to_lines([read]) == ["vllm.__init__"]
