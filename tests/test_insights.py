"""Insights on a real server and database: nothing pasted is stored, reports obey the vote rules, the
maintainers' view needs its token, recording off records nothing, old data expires."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlmodel import Session, SQLModel, select

from app.cli import cli
from app.ingest import ingest
from app.insights.fingerprint import fingerprint
from app.insights.store import Tally, write_tally
from app.manual import Manual
from app.settings import Settings
from app.store.db import make_engine, migrate, session_scope
from app.store.tables import FingerprintRow, MatchFeedback, SearchRecord, utcnow
from app.web.app import create_app
from tests.conftest import LiveServer
from tests.servers import postgres_database
from tests.test_mcp import _call, _payload

TOKEN = "insights-token-0123456789"
SECRET = "t" * 40
PASTES = Path(__file__).parent / "fixtures" / "pastes"
KV = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
PRIVATE = {
    "token": "hf_Zq8xK2mN4pL7vR9sT1uW3yB5dF6gH0jQ",
    "email": "alice.smith@example.com",
    "home": "/home/alice.smith/projects/rl",
    "user": "alice.smith",
    "ip": "10.23.45.67",
    "message": "Shard 4 of the reward table is unreadable",
}
LEAKY_PASTE = f"""(TaskRunner pid=81234, ip={PRIVATE["ip"]}) Traceback (most recent call last):
  File "{PRIVATE["home"]}/verl/verl/trainer/main_ppo.py", line 42, in run
    reward_fn = load_reward_manager(config, tokenizer)
  File "{PRIVATE["home"]}/verl/verl/trainer/ppo/reward.py", line 97, in load_reward_manager
    table = fetch(url, token="{PRIVATE["token"]}")
huggingface_hub.errors.HfHubHTTPError: 401 Client Error: {PRIVATE["message"]} for {PRIVATE["email"]} at {PRIVATE["ip"]} (token {PRIVATE["token"]}, cache {PRIVATE["home"]}/.cache)
"""


def insights_settings(tmp_path: Path, content_dir: Path, **changes) -> Settings:
    values = {
        "data_dir": tmp_path / "data",
        "content_dir": content_dir,
        "secret_key": SECRET,
        "insights_token": TOKEN,
        "vote_rate_limit": "1000/minute",
        **changes,
    }
    return Settings(**values)


def served(settings: Settings) -> LiveServer:
    ingest(settings)
    return LiveServer(create_app(settings))


def flush(server: LiveServer) -> None:
    assert server.server.config.app.state.kb.recorder.flush()


def rows(settings: Settings, table) -> list:
    engine = make_engine(settings)
    with Session(engine) as session:
        found = session.exec(select(table)).all()
    engine.dispose()
    return found


def form_csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request):
    if request.param == "sqlite":
        yield ""
        return
    with postgres_database() as url:
        yield url


def test_nothing_pasted_reaches_the_database(tmp_path, content_dir, database_url):
    """A paste with a token, an email, a home directory and an address is diagnosed, searched and reported
    through every front door; afterwards no byte of any of them is in any table (or the SQLite files)."""
    settings = insights_settings(tmp_path, content_dir, database_url=database_url)
    with served(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        answer = http.post("/api/v1/match", json={"text": LEAKY_PASTE}).json()
        assert answer["fingerprint"] and not any(m["confidence"] in ("high", "medium") for m in answer["matches"])
        page = http.post("/paste", data={"text": LEAKY_PASTE})
        assert page.status_code == 200
        _names, mcp = _call(server.url, "diagnose_log", {"text": LEAKY_PASTE})
        assert _payload(mcp)["fingerprint"] == answer["fingerprint"]
        for query in (PRIVATE["token"], f"{PRIVATE['email']} {PRIVATE['home']} {PRIVATE['ip']}"):
            http.get("/api/v1/search", params={"q": query})
            http.get("/search", params={"q": query})
        kv = http.post("/api/v1/match", json={"text": f"{LEAKY_PASTE}\n{KV}"}).json()
        assert (
            http.post(
                "/api/v1/matches/feedback", json={"code": "ROLL-901", "fingerprint": kv["fingerprint"], "right": False}
            ).status_code
            == 201
        )
        flush(server)
        insights = http.get("/api/v1/insights", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert insights["misses"][0]["exception"] == "huggingface_hub.errors.HfHubHTTPError"
    assert insights["misses"][0]["count"] >= 3 and insights["searches"] and insights["wrong_answers"]
    stored = _database_text(settings)
    assert "HfHubHTTPError" in stored  # the scan reads what was recorded
    for name, value in PRIVATE.items():
        assert value.lower() not in stored.lower(), f"the {name} reached the database"
    assert "alice" not in stored.lower()


def _database_text(settings: Settings) -> str:
    """Every row of every table as text; for SQLite also the raw bytes of the database and its WAL."""
    engine = make_engine(settings)
    parts = []
    with engine.connect() as connection:
        for table in inspect(connection).get_table_names():
            for row in connection.execute(text(f'SELECT * FROM "{table}"')):
                parts.append(" ".join(str(value) for value in row))
    engine.dispose()
    if not settings.database_url:
        for path in settings.data_dir.glob("kb.sqlite3*"):
            parts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def test_match_reports_obey_the_vote_rules(tmp_path, content_dir):
    settings = insights_settings(tmp_path, content_dir, vote_rate_limit="3/minute")
    with served(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        fp = http.post("/api/v1/match", json={"text": KV}).json()["fingerprint"]
        report = {"code": "ROLL-901", "fingerprint": fp, "right": False}
        first = http.post("/api/v1/matches/feedback", json=report)
        again = http.post("/api/v1/matches/feedback", json={**report, "right": True})
        assert first.status_code == again.status_code == 201 and again.json()["right"] is True
        assert http.post("/api/v1/matches/feedback", json={**report, "code": "TRAIN-901"}).status_code == 201
        limited = http.post("/api/v1/matches/feedback", json={**report, "code": "DIST-901"})
        assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limited"
        assert int(limited.headers["retry-after"]) >= 1
        stranger = httpx.post(server.url + "/api/v1/matches/feedback", json={**report, "code": "ROLL-999"})
        assert stranger.status_code == 404
        assert (
            httpx.post(server.url + "/api/v1/matches/feedback", json={**report, "fingerprint": "../../etc"}).status_code
            == 422
        )
        form = httpx.post(
            server.url + "/api/v1/matches/feedback",
            content="code=ROLL-901",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert form.status_code in (415, 422) and form.json()["error"]["code"] in (
            "unsupported_media_type",
            "invalid_input",
        )
    stored = rows(settings, MatchFeedback)
    one_voter = [row for row in stored if row.code == "ROLL-901"]
    assert len(one_voter) == 1 and one_voter[0].right is True  # the second word replaced the first
    assert {row.code for row in stored} == {"ROLL-901", "TRAIN-901"}


def test_the_paste_page_button_reports_the_match(tmp_path, content_dir):
    settings = insights_settings(tmp_path, content_dir)
    with served(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        page = http.post("/paste", data={"text": KV}).text
        fp = re.search(r'name="fingerprint" value="([0-9a-f]{16})"', page).group(1)
        forged = http.post("/matches/feedback", data={"code": "ROLL-901", "fingerprint": fp, "csrf": "forged"})
        assert forged.status_code == 403
        done = http.post("/matches/feedback", data={"code": "ROLL-901", "fingerprint": fp, "csrf": form_csrf(page)})
        assert done.status_code == 200 and "ROLL-901 was not your error" in done.text
    assert [(row.code, row.fingerprint, row.right) for row in rows(settings, MatchFeedback)] == [
        ("ROLL-901", fp, False)
    ]


def test_report_wrong_match_through_mcp(tmp_path, content_dir):
    settings = insights_settings(tmp_path, content_dir)
    with served(settings) as server:
        _names, answer = _call(server.url, "diagnose_log", {"text": KV})
        fp = _payload(answer)["fingerprint"]
        names, result = _call(
            server.url, "report_wrong_match", {"code": "ROLL-901", "fingerprint": fp, "reporter": "agent-7"}
        )
    assert "report_wrong_match" in names and _payload(result)["recorded"] is True
    assert [(row.voter, row.right) for row in rows(settings, MatchFeedback)] == [("mcp:agent-7", False)]


@pytest.mark.parametrize("path", ["/api/v1/insights", "/insights"])
def test_insights_need_the_token(tmp_path, content_dir, path):
    with served(insights_settings(tmp_path / "off", content_dir, insights_token="")) as server:
        off = httpx.get(server.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
    assert off.status_code == 404
    with served(insights_settings(tmp_path / "on", content_dir)) as server:
        missing = httpx.get(server.url + path)
        wrong = httpx.get(server.url + path, headers={"Authorization": "Bearer not-the-token-at-all"})
        right = httpx.get(server.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
        in_url = httpx.get(server.url + path, params={"token": TOKEN})
    assert missing.status_code == wrong.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200 and right.headers["cache-control"] == "no-store"
    # the page takes the token from its URL too (a bookmark); the API only from the header
    assert in_url.status_code == (200 if path == "/insights" else 401)
    if path.startswith("/api/"):
        assert missing.json()["error"]["code"] == "unauthorized"


def test_recording_off_records_nothing(tmp_path, content_dir):
    settings = insights_settings(tmp_path, content_dir, record_misses=False)
    with served(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        fp = http.post("/api/v1/match", json={"text": LEAKY_PASTE}).json()["fingerprint"]
        http.post("/paste", data={"text": LEAKY_PASTE})
        http.get("/api/v1/search", params={"q": "qqqzzz xxyyww"})
        http.get("/search", params={"q": "qqqzzz xxyyww"})
        refused = http.post("/api/v1/matches/feedback", json={"code": "ROLL-901", "fingerprint": fp, "right": False})
        flush(server)
        view = http.get("/api/v1/insights", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert refused.status_code == 404
    assert view == {"misses": [], "searches": [], "wrong_answers": [], "failing_fixes": []}
    assert rows(settings, FingerprintRow) == rows(settings, SearchRecord) == rows(settings, MatchFeedback) == []


def test_a_session_of_real_pastes_shows_on_insights_and_in_kb_insights(tmp_path, content_dir, runner, monkeypatch):
    """Real pastes of the dev set against the small test manual: most are misses; empty searches, a wrong
    match and a failing fix join them, and `kb insights --json` reports what the API does."""
    settings = insights_settings(tmp_path, content_dir)
    pastes = [path.read_text() for path in sorted(PASTES.iterdir())[:25]]
    with served(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        for paste in pastes + pastes[:5]:
            assert http.post("/api/v1/match", json={"text": paste}).status_code == 200
        http.get("/search", params={"q": "zzqxjv wwpfkk"})
        http.get("/api/v1/search", params={"q": "zzqxjv wwpfkk"})
        http.get("/search", params={"q": "watchdog timeout"})  # results shown, none opened
        opened = http.get("/search", params={"q": "gpu_memory_utilization"}).text
        link = re.search(r'href="([^"]+\?sq=[^"]+)" class="hit-link"', opened).group(1).replace("&amp;", "&")
        assert http.get(link).status_code == 200
        fp = http.post("/api/v1/match", json={"text": KV}).json()["fingerprint"]
        http.post("/api/v1/matches/feedback", json={"code": "ROLL-901", "fingerprint": fp, "right": False})
        for _ in range(2):
            httpx.post(
                f"{server.url}/api/v1/errors/DIST-901/fixes/{_first_fix(http, 'DIST-901')}/votes",
                json={"worked": False},
            )
        flush(server)
        view = http.get("/api/v1/insights", headers={"Authorization": f"Bearer {TOKEN}"}).json()
        page = http.get("/insights", params={"token": TOKEN}).text
    assert len(view["misses"]) >= 10 and view["misses"][0]["count"] >= 2
    assert [m["count"] for m in view["misses"]] == sorted((m["count"] for m in view["misses"]), reverse=True)
    kinds = {(s["query"], s["kind"]) for s in view["searches"]}
    assert ("zzqxjv wwpfkk", "empty") in kinds and ("watchdog timeout", "unopened") in kinds
    assert not any(query == "gpu_memory_utilization" for query, _kind in kinds)
    assert view["wrong_answers"][0]["code"] == "ROLL-901" and view["wrong_answers"][0]["exception"] == "ValueError"
    assert view["failing_fixes"][0]["code"] == "DIST-901" and view["failing_fixes"][0]["votes_down"] == 2
    first = view["misses"][0]
    assert f"kb new --from-fingerprint {first['fingerprint']}" in page and "zzqxjv wwpfkk" in page
    for name, value in {"KB_DATA_DIR": settings.data_dir, "KB_CONTENT_DIR": content_dir}.items():
        monkeypatch.setenv(name, str(value))
    result = runner.invoke(cli, ["insights", "--json", "--top", "50"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == view  # the command and the API answer from one manual
    terminal = runner.invoke(cli, ["insights"])
    assert terminal.exit_code == 0 and first["command"] in terminal.output and "DIST-901" in terminal.output


def _first_fix(http: httpx.Client, code: str) -> str:
    return http.get(f"/api/v1/errors/{code}").json()["fixes"][0]["id"]


def test_old_records_expire(tmp_path, content_dir):
    settings = insights_settings(tmp_path, content_dir)
    engine = make_engine(settings)
    migrate(engine, settings)
    old, recent = Tally(), Tally()
    old.fingerprint(fingerprint("ValueError: old failure 1", verl_version="0.4.1"), missed=True)
    old.search("forgotten words", 0, on_page=False)
    recent.fingerprint(fingerprint("ValueError: recent failure 2"), missed=True)
    now = utcnow()
    with session_scope(engine) as session:
        write_tally(session=session, tally=old, now=now - timedelta(days=120))
        write_tally(session=session, tally=recent, now=now)
    manual = Manual.open_records(settings)  # what `kb insights` opens: it prunes before it reports
    try:
        reported = manual.insights(purge=True)
    finally:
        manual.close()
    with Session(engine) as session:
        left = [row.template for row in session.exec(select(FingerprintRow))]
        searches = session.exec(select(SearchRecord)).all()
        versions = session.exec(text("SELECT count(*) FROM fingerprint_version")).one()[0]
    engine.dispose()
    assert left == ["recent failure <n>"] and searches == [] and versions == 0
    assert [miss.template for miss in reported.misses] == ["recent failure <n>"]


def test_migrations_create_exactly_the_tables_the_code_declares(tmp_path):
    settings = Settings(data_dir=tmp_path)
    engine = make_engine(settings)
    migrate(engine, settings)
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    engine.dispose()
    assert differences == []
