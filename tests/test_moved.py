"""Retired codes: an entry folded into another keeps answering, by redirect, and `kb check` guards the table."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.checker import check_content
from app.ingest import ingest
from app.web.app import create_app


def _write(content_dir, *rows: str) -> None:
    (content_dir / "moved.tsv").write_text("code\tnow\twhy\n" + "".join(row + "\n" for row in rows))


def test_a_moved_code_redirects_pages_and_api_to_the_entry_it_was_folded_into(settings, content_dir):
    _write(content_dir, "ROLL-950\tROLL-901\tthe same failure, written twice")
    ingest(settings)
    with TestClient(create_app(settings), follow_redirects=False) as client:
        for old, new in [
            ("/errors/ROLL-950", "/errors/ROLL-901"),
            ("/errors/roll-950?lang=zh", "/errors/ROLL-901?lang=zh"),
            ("/errors/ROLL-950.md", "/errors/ROLL-901.md"),
            ("/api/v1/errors/ROLL-950", "/api/v1/errors/ROLL-901"),
        ]:
            response = client.get(old)
            assert response.status_code == 301, old
            assert response.headers["location"].endswith(new), (old, response.headers["location"])
        # a code that never existed is still a plain 404
        assert client.get("/api/v1/errors/ROLL-951").status_code == 404
    with TestClient(create_app(settings)) as following:
        followed = following.get("/api/v1/errors/ROLL-950")
        assert followed.status_code == 200 and followed.json()["code"] == "ROLL-901"


@pytest.mark.parametrize(
    "row,message",
    [
        ("ROLL-901\tDIST-901\tfolded", "ROLL-901 moved to DIST-901 but still has an entry: delete its files"),
        ("ROLL-950\tROLL-951\tfolded", "ROLL-950 moved to ROLL-951, which has no entry"),
        ("ROLL-950\tROLL-901", "a row is the old code, the code it moved to and why, tab-separated"),
        ("roll 950\tROLL-901\tfolded", "not entry codes: 'roll 950' -> 'ROLL-901'"),
    ],
)
def test_kb_check_refuses_a_bad_move_at_its_line(content_dir, release, row, message):
    _write(content_dir, row)
    messages = [str(problem) for problem in check_content(content_dir, release)[1]]
    assert messages == [f"{content_dir / 'moved.tsv'}:2: {message}"]


def test_a_move_to_a_moved_code_names_the_final_entry(content_dir, release):
    _write(content_dir, "ROLL-950\tROLL-951\tfolded", "ROLL-951\tROLL-901\tfolded")
    messages = [str(problem) for problem in check_content(content_dir, release)[1]]
    assert messages == [f"{content_dir / 'moved.tsv'}:2: ROLL-951 moved too: point ROLL-950 at ROLL-901"]


def test_searching_a_moved_code_finds_the_entry_it_became(settings, content_dir):
    _write(content_dir, "ROLL-950\tROLL-901\tthe same failure, written twice")
    ingest(settings)
    with TestClient(create_app(settings)) as client:
        hits = client.get("/api/v1/search", params={"q": " roll-950 "}).json()["hits"]
        assert hits and hits[0]["code"] == "ROLL-901"
