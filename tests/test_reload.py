"""`kb index` swaps a new index in while the server answers: no failed request, no mixed answer."""

from __future__ import annotations

import threading
import time

import httpx

from app.ingest import ingest
from app.web import app as web_app
from app.web.app import create_app
from tests.conftest import LiveServer

NEW_WORD = "zebrafinchword"


def _add_entry(content_dir):
    text = (content_dir / "ROLL-901.md").read_text()
    text = text.replace("code: ROLL-901", "code: ROLL-902").replace(
        "Test entry for the vLLM", f"{NEW_WORD} entry for the vLLM"
    )
    text = text.replace("related: [TRAIN-901]", "related: [ROLL-901]")
    text = text.replace("'No available memory for the cache blocks'", "'Zebra finch sampler failed'")
    text = text.replace(
        "ValueError: No available memory for the cache blocks.", "ValueError: Zebra finch sampler failed."
    )
    (content_dir / "ROLL-902.md").write_text(text)
    (content_dir / "ROLL-902.zh.md").write_text((content_dir / "ROLL-901.zh.md").read_text())


def test_search_keeps_answering_during_a_rebuild(settings, content_dir, monkeypatch):
    monkeypatch.setattr(web_app, "RELOAD_POLL_SECONDS", 0.1)
    ingest(settings)
    answers: list[tuple[int, str, list[str]]] = []
    stop = threading.Event()

    def load():
        with httpx.Client(base_url=server.url, timeout=30) as client:
            while not stop.is_set():
                response = client.get("/api/v1/search", params={"q": f"{NEW_WORD} cache blocks"})
                codes = [hit["code"] for hit in response.json()["hits"]] if response.status_code == 200 else []
                answers.append((response.status_code, response.headers.get("x-kb-index", ""), codes))

    with LiveServer(create_app(settings)) as server:
        old = httpx.get(f"{server.url}/healthz").json()["index"]
        workers = [threading.Thread(target=load) for _ in range(4)]
        for worker in workers:
            worker.start()
        try:
            time.sleep(0.5)
            _add_entry(content_dir)
            ingest(settings)
            deadline = time.monotonic() + 20
            while httpx.get(f"{server.url}/healthz").json()["index"] == old and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
        finally:
            stop.set()
            for worker in workers:
                worker.join()
    assert answers and all(status == 200 for status, _, _ in answers)
    generations = {header for _, header, _ in answers}
    assert len(generations) == 2, generations
    for _, header, codes in answers:
        from_old_index = header.startswith(old)
        assert ("ROLL-902" in codes) != from_old_index, (header, codes)
