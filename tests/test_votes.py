"""Votes cannot be lost or stuffed: one per voter, limits, CSRF, concurrency, replicas, SIGKILL, both databases."""

from __future__ import annotations

import concurrent.futures
import csv
import io
import json
import random
import sqlite3
import time

import httpx
import pytest
from sqlmodel import Session, func, select

from app.cli import cli
from app.entries import load_catalog_strict
from app.ingest import ingest
from app.settings import Settings
from app.store.db import make_engine
from app.store.tables import Vote
from app.votes import FixStats, record_vote, wilson_lower_bound
from app.web.app import create_app
from app.web.identity import VOTER_COOKIE, read_voter
from tests.conftest import LiveServer
from tests.servers import ServerProcess, postgres_database

SECRET = "t" * 40
FIX = "raise-gpu-memory-utilization"
VOTE_URL = f"/api/v1/errors/ROLL-901/fixes/{FIX}/votes"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        yield ""
        return
    with postgres_database() as url:
        yield url


@pytest.fixture
def vote_settings(tmp_path, content_dir, database_url):
    return Settings(
        data_dir=tmp_path / "data",
        content_dir=content_dir,
        secret_key=SECRET,
        database_url=database_url,
        vote_rate_limit="100000/minute",
    )


def stored_votes(settings: Settings) -> list[Vote]:
    engine = make_engine(settings)
    with Session(engine) as session:
        votes = session.exec(select(Vote).where(Vote.code == "ROLL-901", Vote.fix_id == FIX)).all()
    engine.dispose()
    return votes


def test_wilson_lower_bound_orders_evidence():
    assert wilson_lower_bound(1, 1) < wilson_lower_bound(40, 45)
    assert wilson_lower_bound(0, 0) == 0.0
    assert FixStats(1, 4).voted_dead_end and not FixStats(3, 2).voted_dead_end


def test_same_voter_replaces_the_earlier_vote(vote_settings):
    ingest(vote_settings)
    with LiveServer(create_app(vote_settings)) as server, httpx.Client(base_url=server.url) as client:
        first = client.post(VOTE_URL, json={"worked": True, "verl_version": "0.9.1", "backend": "fsdp"})
        assert first.status_code == 201 and VOTER_COOKIE in first.cookies
        second = client.post(VOTE_URL, json={"worked": False, "comment": "<b>still OOM</b> on 8xA100"})
        assert second.status_code == 201 and second.json()["fix"]["votes_down"] == 1
        assert second.json()["fix"]["votes_up"] == 0
        page = client.get("/errors/ROLL-901").text
    votes = stored_votes(vote_settings)
    assert len(votes) == 1 and votes[0].worked is False and votes[0].comment == "<b>still OOM</b> on 8xA100"
    assert "&lt;b&gt;still OOM&lt;/b&gt;" in page and "<b>still OOM</b>" not in page
    assert votes[0].fix_hash and votes[0].ip_hash and "127.0.0.1" not in votes[0].ip_hash


def test_environment_breakdown_is_reported(vote_settings):
    ingest(vote_settings)
    with LiveServer(create_app(vote_settings)) as server:
        for worked, backend in ((True, "fsdp"), (True, "fsdp"), (False, "megatron")):
            assert httpx.post(server.url + VOTE_URL, json={"worked": worked, "backend": backend}).status_code == 201
        fix = httpx.get(server.url + "/api/v1/errors/ROLL-901").json()["fixes"][0]
    assert fix["environments"]["backend"] == {"fsdp": {"up": 2, "down": 0}, "megatron": {"up": 0, "down": 1}}


def test_kb_votes_report_and_export_read_what_the_server_stored(vote_settings, runner, monkeypatch):
    """Votes cast through the API show in `kb votes report` (a fix two voters found failing) and in
    `kb votes export` (every vote, no voter id), read through the same manual the server answers from."""
    ingest(vote_settings)
    with LiveServer(create_app(vote_settings)) as server:
        for worked in (False, False, True):  # three voters: no shared cookie
            assert httpx.post(server.url + VOTE_URL, json={"worked": worked, "backend": "fsdp"}).status_code == 201
    monkeypatch.setenv("KB_DATA_DIR", str(vote_settings.data_dir))
    monkeypatch.setenv("KB_CONTENT_DIR", str(vote_settings.content_dir))
    monkeypatch.setenv("KB_DATABASE_URL", vote_settings.database_url)
    report = runner.invoke(cli, ["votes", "report", "--json"])
    assert report.exit_code == 0, report.output
    failing = json.loads(report.output)["failing"]
    assert [(row["code"], row["fix_id"], row["votes_down"], row["votes_up"]) for row in failing] == [
        ("ROLL-901", FIX, 2, 1)
    ]
    exported = runner.invoke(cli, ["votes", "export"])
    assert exported.exit_code == 0, exported.output
    header, *rows = list(csv.reader(io.StringIO(exported.output)))
    assert header[:3] == ["code", "fix_id", "worked"] and "voter" not in ",".join(header)
    assert sorted(row[2] for row in rows) == ["False", "False", "True"] and {row[0] for row in rows} == {"ROLL-901"}


def test_json_votes_need_json(client):
    response = client.post(
        VOTE_URL, content="worked=true", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code in (415, 422)
    assert response.json()["error"]["code"] in ("unsupported_media_type", "invalid_input")


def test_rate_limit_answers_429(tmp_path, content_dir):
    settings = Settings(data_dir=tmp_path / "d", content_dir=content_dir, secret_key=SECRET, vote_rate_limit="3/minute")
    ingest(settings)
    with LiveServer(create_app(settings)) as server, httpx.Client(base_url=server.url) as client:
        codes = [client.post(VOTE_URL, json={"worked": True}).status_code for _ in range(5)]
        refused = client.post(VOTE_URL, json={"worked": True})
    assert codes[:3] == [201, 201, 201] and codes[3:] == [429, 429]
    assert refused.json()["error"]["code"] == "rate_limited" and int(refused.headers["retry-after"]) >= 1


def test_form_vote_needs_its_csrf_token(client):
    client.get("/errors/ROLL-901")  # sets the voter cookie
    forged = client.post(
        f"/errors/ROLL-901/fixes/{FIX}/vote", data={"worked": "yes", "csrf": "forged"}, follow_redirects=False
    )
    assert forged.status_code == 403


def test_a_vote_that_cannot_be_stored_says_so(client, settings):
    engine = make_engine(settings)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE vote")
    engine.dispose()
    response = client.post(VOTE_URL, json={"worked": True})
    assert response.status_code == 503 and "could not be stored" in response.json()["error"]["message"]


def _cast(base_url: str, worked: bool, again: bool | None):
    """One voter: a fresh client (no cookie), optionally voting a second time with its cookie."""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        response = client.post(VOTE_URL, json={"worked": worked})
        response.raise_for_status()
        if again is not None:
            client.post(VOTE_URL, json={"worked": again}).raise_for_status()
            worked = again
    return worked


def test_400_concurrent_voters_are_all_stored(vote_settings):
    ingest(vote_settings)
    rng = random.Random(7)
    plan = [(rng.random() < 0.7, (rng.random() < 0.5) if i % 4 == 0 else None) for i in range(400)]
    with LiveServer(create_app(vote_settings)) as server:
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
            finals = list(pool.map(lambda p: _cast(server.url, *p), plan))
        fix = httpx.get(f"{server.url}/api/v1/errors/ROLL-901").json()["fixes"][0]
    votes = stored_votes(vote_settings)
    assert len(votes) == 400
    assert sum(v.worked for v in votes) == sum(finals)
    assert (fix["votes_up"], fix["votes_down"]) == (sum(finals), 400 - sum(finals))


def test_two_replicas_on_one_postgres_agree(tmp_path, content_dir):
    with postgres_database() as url:
        env = {
            "KB_DATABASE_URL": url,
            "KB_SECRET_KEY": SECRET,
            "KB_CONTENT_DIR": str(content_dir),
            "KB_VOTE_RATE_LIMIT": "100000/minute",
        }
        replicas = [
            ServerProcess({**env, "KB_DATA_DIR": str(tmp_path / f"replica{i}")}, tmp_path / f"r{i}.log")
            for i in range(2)
        ]
        try:
            for replica in replicas:
                replica.start()
            plan = [(i % 3 != 0, None) for i in range(200)]
            with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
                finals = list(pool.map(lambda ip: _cast(replicas[ip[0] % 2].url, *ip[1]), enumerate(plan)))
            seen = [httpx.get(f"{r.url}/api/v1/errors/ROLL-901").json()["fixes"][0] for r in replicas]
        finally:
            for replica in replicas:
                replica.stop()
    expected = (sum(finals), 200 - sum(finals))
    assert [(fix["votes_up"], fix["votes_down"]) for fix in seen] == [expected, expected]


def test_acknowledged_votes_survive_sigkill(tmp_path, content_dir):
    env = {
        "KB_DATA_DIR": str(tmp_path / "data"),
        "KB_SECRET_KEY": SECRET,
        "KB_CONTENT_DIR": str(content_dir),
        "KB_VOTE_RATE_LIMIT": "100000/minute",
    }
    server = ServerProcess(env, tmp_path / "server.log").start()
    acknowledged: list[str] = []

    def vote(_):
        try:
            with httpx.Client(base_url=server.url, timeout=10) as client:
                response = client.post(VOTE_URL, json={"worked": True})
        except httpx.HTTPError:
            return
        if 200 <= response.status_code < 300:
            acknowledged.append(read_voter(SECRET, response.cookies[VOTER_COOKIE]))

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        futures = [pool.submit(vote, i) for i in range(600)]
        deadline = time.monotonic() + 60
        while len(acknowledged) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()
        concurrent.futures.wait(futures)
    database = tmp_path / "data" / "kb.sqlite3"
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    restarted = ServerProcess(env, tmp_path / "server2.log").start()
    try:
        settings = Settings(data_dir=tmp_path / "data", content_dir=content_dir, secret_key=SECRET)
        engine = make_engine(settings)
        with Session(engine) as session:
            stored = set(session.exec(select(Vote.voter)).all())
            total = session.exec(select(func.count()).select_from(Vote)).one()
        engine.dispose()
        assert set(acknowledged) <= stored
        assert total >= len(acknowledged) >= 100
    finally:
        restarted.stop()


KV_PASTE = (
    "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
    "initializing the engine."
)


def test_a_vote_shows_in_the_next_diagnosis_although_counts_are_cached(vote_settings):
    """The server reuses one snapshot of the vote counts for an hour here; a vote it stores refreshes it."""
    settings = vote_settings.model_copy(update={"vote_counts_ttl": 3600.0})
    ingest(settings)
    with LiveServer(create_app(settings)) as server, httpx.Client(base_url=server.url) as client:

        def counts():
            match = client.post("/api/v1/match", json={"text": KV_PASTE}).json()["matches"][0]
            assert match["code"] == "ROLL-901"
            fix = next(fix for fix in match["fixes"] if fix["id"] == FIX)
            return fix["votes_up"], fix["votes_down"]

        assert counts() == (0, 0)  # the snapshot is taken here
        assert client.post(VOTE_URL, json={"worked": True}).status_code == 201
        assert counts() == (1, 0)
        assert client.post(VOTE_URL, json={"worked": False}).status_code == 201
        assert counts() == (0, 1)


def test_entry_pages_reuse_the_vote_snapshot_and_a_vote_here_refreshes_it(vote_settings):
    """An entry page read its votes with one query per request; now it reuses the snapshot for the TTL (an hour
    here): a vote stored by another replica shows later, one cast on this server at once."""
    settings = vote_settings.model_copy(update={"vote_counts_ttl": 3600.0})
    ingest(settings)
    with LiveServer(create_app(settings)) as server, httpx.Client(base_url=server.url) as client:

        def counts():
            fix = next(fix for fix in client.get("/api/v1/errors/ROLL-901").json()["fixes"] if fix["id"] == FIX)
            return fix["votes_up"], fix["votes_down"]

        assert counts() == (0, 0)  # the snapshot of ROLL-901's votes is taken here
        fix = next(fix for fix in load_catalog_strict(settings.content_dir).get("ROLL-901").meta.fixes if fix.id == FIX)
        engine = make_engine(settings)
        with Session(engine) as session:  # another replica's vote, straight into the shared table
            record_vote(
                session=session, code="ROLL-901", fix_id=FIX, fix_hash=fix.content_hash, voter="replica-2", worked=True
            )
            session.commit()
        engine.dispose()
        assert counts() == (0, 0)
        assert client.post(VOTE_URL, json={"worked": False}).status_code == 201
        assert counts() == (1, 1)
