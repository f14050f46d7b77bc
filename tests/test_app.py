"""The path from Markdown to browser: health, entry page, JSON entry, error shapes."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app


def test_healthz_is_200_when_ready(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok" and response.json()["entries"] == 3


def test_healthz_is_503_without_an_index(tmp_path, content_dir):
    settings = Settings(data_dir=tmp_path / "empty", content_dir=content_dir, secret_key="s" * 40)
    with TestClient(create_app(settings)) as client:
        response = client.get("/healthz")
    assert response.status_code == 503
    assert "kb index" in response.json()["detail"]


def test_entry_page_renders_markdown_and_fixes(client):
    response = client.get("/errors/ROLL-901")
    assert response.status_code == 200
    html = response.text
    assert "Test entry for the vLLM KV-cache budget" in html
    assert "<h2>Why it happens</h2>" in html
    assert 'id="fix-raise-gpu-memory-utilization"' in html
    assert html.index("fix-raise-gpu-memory-utilization") < html.index("fix-restart-the-cluster")  # dead end last


def test_entry_json_has_fixes_with_votes(client):
    data = client.get("/api/v1/errors/ROLL-901").json()
    assert data["code"] == "ROLL-901" and data["category"] == "ROLL"
    fix = data["fixes"][0]
    assert {"id", "title", "body", "votes_up", "votes_down", "success_rate"} <= fix.keys()
    assert data["fixes"][-1]["dead_end"] is True


def test_unknown_code_404s_in_html_and_json(client):
    page = client.get("/errors/ROLL-999")
    assert page.status_code == 404 and "text/html" in page.headers["content-type"]
    api = client.get("/api/v1/errors/ROLL-999")
    assert api.status_code == 404
    assert api.json() == {"error": {"code": "not_found", "message": "no entry with code 'ROLL-999'"}}


def test_lowercase_code_redirects_to_canonical(client):
    response = client.get("/errors/roll-901", follow_redirects=False)
    assert response.status_code == 301 and response.headers["location"].endswith("/errors/ROLL-901")


def test_paste_page_names_the_crash_the_manual_does_not_cover(client):
    text = "\n".join(
        [
            "(WorkerDict pid=1234, ip=10.0.0.1) Traceback (most recent call last):",
            '(WorkerDict pid=1234, ip=10.0.0.1)   File "/home/u/my_reward.py", line 12, in compute_score',
            '(WorkerDict pid=1234, ip=10.0.0.1)     return float(answer.split("####")[1])',
            "(WorkerDict pid=1234, ip=10.0.0.1) IndexError: list index out of range",
            "(WorkerDict pid=1300, ip=10.0.0.1) [rank1]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank 1] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600112 milliseconds before timing out.",
        ]
    )
    page = client.post("/paste", data={"text": text})
    assert page.status_code == 200
    assert "The manual has no entry that matches this error with confidence." in page.text
    assert "The crash the manual does not cover" in page.text
    assert "<code>IndexError: list index out of range</code>" in page.text


def test_cached_entry_page_shows_new_votes_and_each_voters_own_token(client):
    """The entry page is rendered once per content and votes; a vote or another voter must still show."""
    page = client.get("/errors/ROLL-901").text
    token = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert client.get("/errors/ROLL-901").text == page  # served again, the same page
    first_voter = dict(client.cookies)
    client.cookies.clear()
    other = client.get("/errors/ROLL-901").text
    assert token not in other and 'name="csrf" value="' in other
    client.cookies.clear()
    client.cookies.update(first_voter)
    voted = client.post(
        "/errors/ROLL-901/fixes/raise-gpu-memory-utilization/vote",
        data={"worked": "yes", "csrf": token},
        follow_redirects=False,
    )
    assert voted.status_code == 303
    after = client.get("/errors/ROLL-901").text
    assert "data-up>1<" in after and "data-up>1<" not in page


def test_head_answers_like_get_without_a_body(client):
    for path in ("/", "/errors", "/errors/ROLL-901", "/api/v1/errors/ROLL-901", "/search?q=oom", "/healthz"):
        get, head = client.get(path), client.head(path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"], path
        assert head.headers["content-length"] == str(len(get.content)), path
    assert client.head("/errors/NOPE-404").status_code == 404
    assert client.head("/api/v1/match").status_code == 405  # POST only
