"""Browse filters: category, backend, engine, hardware, model and verl release, each with counts."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.ingest import ingest
from app.web.app import create_app


@pytest.fixture
def faceted_client(settings, content_dir):
    roll = content_dir / "ROLL-901.md"
    roll.write_text(
        roll.read_text().replace("\ntags:", "\nbackends: [megatron]\nengines: [vllm]\nmodels: [qwen3-moe]\ntags:", 1)
    )
    train = content_dir / "TRAIN-901.md"
    train.write_text(
        train.read_text().replace("\ntags:", "\nbackends: [megatron, fsdp]\napplies_to: 'verl<0.5'\ntags:", 1)
    )
    ingest(settings)
    with TestClient(create_app(settings)) as client:
        yield client


def _counts(data: dict, facet: str) -> dict[str, int]:
    return {row["value"]: row["count"] for row in data["facets"][facet]}


def test_a_filter_keeps_the_entries_that_name_its_value(faceted_client):
    data = faceted_client.get("/api/v1/errors", params={"backend": "megatron"}).json()
    assert [row["code"] for row in data["errors"]] == ["ROLL-901", "TRAIN-901"]
    assert _counts(data, "backend") == {"megatron": 2, "fsdp": 1}
    assert _counts(data, "engine") == {"vllm": 1}


def test_counts_of_a_facet_honour_the_other_filters(faceted_client):
    data = faceted_client.get("/api/v1/errors", params={"engine": "vllm"}).json()
    assert [row["code"] for row in data["errors"]] == ["ROLL-901"]
    assert _counts(data, "backend") == {"megatron": 1}  # TRAIN-901 names megatron too, but no vllm
    assert _counts(data, "engine") == {"vllm": 1}  # its own filter does not narrow its counts


def test_verl_release_filter_drops_entries_about_other_releases(faceted_client):
    new = faceted_client.get("/api/v1/errors", params={"verl": "0.9.1"}).json()
    assert "TRAIN-901" not in [row["code"] for row in new["errors"]] and new["total"] == 2
    old = faceted_client.get("/api/v1/errors", params={"verl": "0.4.1"}).json()
    assert old["total"] == 3
    assert _counts(new, "verl")["0.4.1"] == 3 and _counts(new, "verl")["0.9.1"] == 2


def test_unknown_release_is_422_and_empty_result_says_so(faceted_client):
    response = faceted_client.get("/api/v1/errors", params={"verl": "9.9"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_input"
    page = faceted_client.get("/errors", params={"engine": "sglang"})
    assert page.status_code == 200 and "No entry matches all of these filters" in page.text


def test_browse_page_links_each_value_with_its_count_and_marks_the_choice(faceted_client):
    html = faceted_client.get("/errors", params={"backend": "megatron"}).text
    assert 'href="http://testserver/errors?backend=fsdp&amp;sort=code"' in html
    assert 'aria-current="true">megatron <span class="count">2</span>' in html
    assert 'class="code">DIST-901' not in html
