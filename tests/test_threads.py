"""The titles of cited threads: searched with the entry, shown on its page, and checked like the entries."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.checker import check_content
from app.ingest import ingest
from app.search.index import open_generation
from app.search.query import SearchService
from app.web.app import create_app

ROLL_SOURCE = "https://github.com/vllm-project/vllm/issues/2248"  # cited by the fixture entry ROLL-901
TITLE = "[Bug] Rollout gets stuck forever while the judge scores trajectories"


def _write(content_dir, *rows: str) -> None:
    (content_dir / "threads.tsv").write_text("url\ttitle\n" + "".join(row + "\n" for row in rows))


def _codes(settings, query: str) -> list[str]:
    ingest(settings)
    return [hit.code for hit in SearchService(open_generation(settings.data_dir)).search(query).hits]


def test_a_thread_title_finds_the_entry_that_cites_it(settings, content_dir):
    assert "ROLL-901" not in _codes(settings, "judge scores trajectories")
    _write(content_dir, f"{ROLL_SOURCE}\t{TITLE}")
    assert _codes(settings, "judge scores trajectories")[:1] == ["ROLL-901"]


def test_a_changed_title_rebuilds_the_index(settings, content_dir):
    _write(content_dir, f"{ROLL_SOURCE}\t{TITLE}")
    assert _codes(settings, "judge")[:1] == ["ROLL-901"]
    _write(content_dir, f"{ROLL_SOURCE}\tvLLM engine crashes while generating")
    assert "ROLL-901" not in _codes(settings, "judge")


def test_the_page_and_the_api_name_a_source_by_its_title(settings, content_dir):
    _write(content_dir, f"{ROLL_SOURCE}\t{TITLE}")
    ingest(settings)
    with TestClient(create_app(settings)) as client:
        entry = client.get("/api/v1/errors/ROLL-901").json()
        assert entry["source_links"] == [{"url": ROLL_SOURCE, "title": TITLE}]
        assert entry["sources"] == [ROLL_SOURCE]
        page = client.get("/errors/ROLL-901").text
        assert f'<a href="{ROLL_SOURCE}" rel="noopener nofollow">{TITLE}</a>' in page
        assert '<span class="source-url">vllm-project/vllm#2248</span>' in page
        untitled = client.get("/api/v1/errors/DIST-901").json()["source_links"]
        assert untitled == [{"url": "https://github.com/verl-project/verl/issues/2", "title": None}]


def test_a_row_no_entry_cites_fails_the_check_at_its_line(content_dir, release):
    _write(content_dir, f"{ROLL_SOURCE}\t{TITLE}", "https://github.com/verl-project/verl/issues/999\tSomething else")
    messages = [str(problem) for problem in check_content(content_dir, release)[1]]
    assert messages == [
        f"{content_dir / 'threads.tsv'}:3: https://github.com/verl-project/verl/issues/999 is cited by no entry: "
        "drop the row"
    ]


def test_malformed_rows_fail_the_check(content_dir, release):
    _write(content_dir, f"{ROLL_SOURCE}", "https://example.com/a/b/issues/1\tA title", f"{ROLL_SOURCE}\tT")
    (content_dir / "threads.tsv").write_text(
        (content_dir / "threads.tsv").read_text() + f"{ROLL_SOURCE}\tAgain\n", encoding="utf-8"
    )
    messages = [str(problem) for problem in check_content(content_dir, release)[1]]
    path = content_dir / "threads.tsv"
    assert f"{path}:2: a row is a thread URL, one tab, and its title" in messages
    assert f"{path}:3: not a GitHub issue or pull request URL: 'https://example.com/a/b/issues/1'" in messages
    assert f"{path}:5: {ROLL_SOURCE} is listed twice" in messages


def test_the_markdown_of_an_entry_links_its_source_by_title(settings, content_dir):
    _write(content_dir, f"{ROLL_SOURCE}\t{TITLE}")
    ingest(settings)
    with TestClient(create_app(settings)) as client:
        markdown = client.get("/errors/ROLL-901.md").text
        assert (
            f"- [\\[Bug\\] Rollout gets stuck forever while the judge scores trajectories]({ROLL_SOURCE})" in markdown
        )
