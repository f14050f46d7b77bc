"""The JSON API against a real server on loopback: contract, error shape, caching, limits, CORS."""

from __future__ import annotations

import httpx
import pytest

from app.settings import Settings
from app.web.app import create_app
from tests.conftest import LiveServer

KV = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."


@pytest.fixture
def http(live_server):
    with httpx.Client(base_url=live_server.url, timeout=30) as client:
        yield client


def test_match_contract(http):
    response = http.post("/api/v1/match", json={"text": f"(WorkerDict pid=1, ip=10.0.0.1) {KV}", "limit": 5})
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"matches", "blocks", "took_ms", "environment"}
    match = body["matches"][0]
    assert {
        "code",
        "title",
        "category",
        "score",
        "confidence",
        "matched_line",
        "signature",
        "root_cause",
        "url",
        "fixes",
    } <= set(match)
    assert match["code"] == "ROLL-901" and match["confidence"] == "high" and match["root_cause"] is True
    assert match["url"].endswith("/errors/ROLL-901")
    assert {"id", "title", "body", "votes_up", "votes_down", "success_rate"} <= set(match["fixes"][0])


def test_search_contract(http):
    body = http.get("/api/v1/search", params={"q": "gpu_memory_utilization"}).json()
    assert body["total"] >= 1 and "took_ms" in body
    hit = body["hits"][0]
    assert {"code", "title", "category", "snippet", "score", "url"} <= set(hit)
    assert hit["code"] == "ROLL-901"


def test_list_contract_with_etag(http):
    first = http.get("/api/v1/errors")
    assert first.status_code == 200
    assert first.json()["total"] == 3 and {e["code"] for e in first.json()["errors"]} == {
        "ROLL-901",
        "TRAIN-901",
        "DIST-901",
    }
    assert "max-age" in first.headers["cache-control"]
    again = http.get("/api/v1/errors", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304


def test_entry_in_chinese(http):
    body = http.get("/api/v1/errors/ROLL-901", params={"lang": "zh"}).json()
    assert body["title"] == "测试条目：vLLM KV cache 预算" and "为什么会这样" in body["body"]
    fix_body = body["fixes"][0]["body"]
    assert "显存" in fix_body and "`actor_rollout_ref.rollout.gpu_memory_utilization=0.6`" in fix_body


@pytest.mark.parametrize(
    "method,path,payload,status,code",
    [
        ("get", "/api/v1/errors/NOPE-001", None, 404, "not_found"),
        ("post", "/api/v1/match", {"text": ""}, 422, "invalid_input"),
        ("post", "/api/v1/match", {"text": "   "}, 422, "invalid_input"),
        ("post", "/api/v1/match", {"limit": 3}, 422, "invalid_input"),
        ("get", "/api/v1/search?limit=0", None, 422, "invalid_input"),
        ("post", "/api/v1/errors/ROLL-901/fixes/nope/votes", {"worked": True}, 404, "not_found"),
    ],
)
def test_one_json_error_shape(http, method, path, payload, status, code):
    response = getattr(http, method)(path, **({"json": payload} if payload is not None else {}))
    assert response.status_code == status
    assert set(response.json()) == {"error"} and response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]


def test_oversized_paste_is_413_before_the_body_is_read(http):
    response = http.post(
        "/api/v1/match", content=b"{" + b" " * (3 * 1024 * 1024) + b"}", headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_invalid_json_is_422(http):
    response = http.post("/api/v1/match", content=b'{"text": "abc"', headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_input"


def test_compact_form_is_shorter(http):
    full = http.post("/api/v1/match", json={"text": KV}).json()
    compact = http.post("/api/v1/match?compact=1", json={"text": KV})
    assert compact.status_code == 200
    assert len(compact.text) < len(str(full)) / 2
    assert compact.json()["matches"][0]["code"] == "ROLL-901"


def test_markdown_and_llms_txt(http):
    md = http.get("/errors/ROLL-901.md")
    assert md.headers["content-type"].startswith("text/markdown")
    assert md.text.startswith("# ROLL-901: ") and "## Fixes" in md.text and "gpu_memory_utilization=0.6" in md.text
    llms = http.get("/llms.txt").text
    assert "/api/v1/match" in llms and "ROLL-901" in llms and "TRAIN-901" in llms


def test_cors_allowlist(tmp_path, content_dir):
    from app.ingest import ingest

    settings = Settings(
        data_dir=tmp_path / "d", content_dir=content_dir, secret_key="s" * 40, cors_origins=["https://wiki.example.org"]
    )
    ingest(settings)
    with LiveServer(create_app(settings)) as server, httpx.Client(base_url=server.url) as client:
        allowed = client.get("/api/v1/errors", headers={"Origin": "https://wiki.example.org"})
        other = client.get("/api/v1/errors", headers={"Origin": "https://evil.example.com"})
    assert allowed.headers.get("access-control-allow-origin") == "https://wiki.example.org"
    assert "access-control-allow-origin" not in other.headers


def test_no_cors_by_default(http):
    response = http.get("/api/v1/errors", headers={"Origin": "https://wiki.example.org"})
    assert "access-control-allow-origin" not in response.headers


def test_a_raw_log_body_and_a_text_answer_serve_a_node_with_only_curl(client):
    log = f"step 1 loss 0.2\n(WorkerDict pid=48211, ip=10.0.3.7) {'ValueError: No available memory for the cache blocks.'}\n"
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):  # curl --data-binary's default
        headers = {"content-type": content_type} if content_type else {}
        answer = client.post("/api/v1/match?limit=2", content=log.encode(), headers=headers)
        assert answer.status_code == 200 and answer.json()["matches"][0]["code"] == "ROLL-901", content_type
        assert len(answer.json()["matches"]) <= 2
    report = client.post("/api/v1/match?format=text", content=log.encode(), headers={"content-type": "text/plain"})
    assert report.headers["content-type"].startswith("text/plain")
    assert "ROLL-901" in report.text and "\x1b[" not in report.text and "matched:" in report.text
    asked = client.post("/api/v1/match", json={"text": log}, headers={"accept": "text/plain"})
    assert asked.headers["content-type"].startswith("text/plain") and "ROLL-901" in asked.text
    assert client.post("/api/v1/match", json={"text": log}, headers={"accept": "*/*"}).json()["matches"]
    assert (
        client.post("/api/v1/match?limit=99", content=b"x", headers={"content-type": "text/plain"}).status_code == 422
    )
