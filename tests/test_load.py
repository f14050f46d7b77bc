"""Concurrent load on a live server: every request is answered and /healthz stays responsive.

More requests run at once than the worker threads and the database pool hold together, so a request
that waits for a connection while holding what another request needs to give one back would freeze
the server (it did: /healthz went unanswered for 20 s under 64 concurrent pastes).
"""

from __future__ import annotations

import asyncio
import http.client
import time

import httpx
import pytest

from tests.servers import ServerProcess, postgres_database

SECRET = "load-test-secret-" + "x" * 32
CONCURRENT = 96  # more than the 40 worker threads plus the 15 pooled connections SQLAlchemy allows SQLite
REQUESTS = 480
HEALTHZ_LIMIT_S = 5.0  # a liveness bound, not a speed goal (benchmarks/ measures that): before the fix it was > 20 s
PASTE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB. GPU 0 has a total capacity of 79.11 GiB"
)


def _request(client: httpx.AsyncClient, number: int):
    kind = number % 4
    if kind == 0:
        return client.post("/api/v1/match", json={"text": PASTE, "limit": 5})
    if kind == 1:
        return client.post("/paste", data={"text": PASTE})
    if kind == 2:
        return client.get("/errors/ROLL-901")
    return client.get("/api/v1/errors/TRAIN-901")


async def _load(url: str) -> tuple[list[int], list[float]]:
    limits = httpx.Limits(max_connections=CONCURRENT + 4, max_keepalive_connections=CONCURRENT + 4)
    statuses: list[int] = []
    healthz: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        queue = iter(range(REQUESTS))

        async def worker():
            for number in queue:
                try:
                    response = await _request(client, number)
                    statuses.append(response.status_code)
                except httpx.HTTPError as exc:  # a timeout or reset counts as unanswered
                    statuses.append(-1)
                    print("unanswered:", type(exc).__name__)

        async def probe(done: asyncio.Event):
            async with httpx.AsyncClient(base_url=url, timeout=30) as own:
                while not done.is_set():
                    started = time.monotonic()
                    try:
                        answer = await own.get("/healthz")
                        # 503 "the database did not answer within 1 s" is an answer too: the server is alive
                        healthz.append(time.monotonic() - started if answer.status_code in (200, 503) else float("inf"))
                    except httpx.HTTPError:
                        healthz.append(float("inf"))
                    await asyncio.sleep(0.2)

        done = asyncio.Event()
        prober = asyncio.create_task(probe(done))
        await asyncio.gather(*(worker() for _ in range(CONCURRENT)))
        done.set()
        await prober
    return statuses, healthz


def _assert_survives(url: str) -> None:
    statuses, healthz = asyncio.run(_load(url))
    assert len(statuses) == REQUESTS
    assert [s for s in statuses if s != 200] == []
    assert healthz, "the /healthz probe never ran"
    assert max(healthz) < HEALTHZ_LIMIT_S, f"/healthz took {max(healthz):.1f} s under load"


def test_concurrent_pastes_and_pages_all_answered_sqlite(tmp_path, content_dir):
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_SECRET_KEY": SECRET, "KB_CONTENT_DIR": str(content_dir)}
    server = ServerProcess(env, tmp_path / "server.log").start()
    try:
        _assert_survives(server.url)
    finally:
        server.stop()


@pytest.mark.postgres
def test_concurrent_pastes_and_pages_all_answered_postgres(tmp_path, content_dir):
    with postgres_database() as url:
        env = {
            "KB_DATABASE_URL": url,
            "KB_DATA_DIR": str(tmp_path / "data"),
            "KB_SECRET_KEY": SECRET,
            "KB_CONTENT_DIR": str(content_dir),
        }
        server = ServerProcess(env, tmp_path / "server.log").start()
        try:
            _assert_survives(server.url)
        finally:
            server.stop()


def test_overload_is_refused_fast_with_retry_after(tmp_path, content_dir):
    """With one request at a time and a queue of two, a burst gets 503 + Retry-After, not a long wait."""
    env = {
        "KB_DATA_DIR": str(tmp_path / "data"),
        "KB_SECRET_KEY": SECRET,
        "KB_CONTENT_DIR": str(content_dir),
        "KB_MAX_CONCURRENT_REQUESTS": "1",
        "KB_MAX_QUEUED_REQUESTS": "2",
    }
    server = ServerProcess(env, tmp_path / "server.log").start()
    big = (PASTE + "\n" + "step 1: loss 0.1 reward 0.2 " * 20 + "\n") * 400  # ~250 KB: each takes a while

    async def burst():
        async with httpx.AsyncClient(
            base_url=server.url, timeout=60, limits=httpx.Limits(max_connections=40)
        ) as client:
            return await asyncio.gather(*(client.post("/api/v1/match", json={"text": big}) for _ in range(40)))

    try:
        responses = asyncio.run(burst())
        healthy = httpx.get(f"{server.url}/healthz", timeout=10)
    finally:
        server.stop()
    refused = [r for r in responses if r.status_code == 503]
    assert refused, "nothing was refused although 40 requests met a limit of 1 + 2 queued"
    assert all(r.headers.get("retry-after", "").isdigit() for r in refused)
    assert all(r.json()["error"]["code"] == "overloaded" for r in refused)
    assert {r.status_code for r in responses} <= {200, 503}
    assert 200 in {r.status_code for r in responses}
    assert healthy.status_code == 200


@pytest.mark.postgres
def test_healthz_answers_while_the_database_hangs(tmp_path, content_dir):
    """A lock that makes every read of the vote table wait stands for a stalled PostgreSQL: /healthz
    still answers, with 503 and the reason, instead of waiting with the database."""
    from sqlalchemy import create_engine, text

    with postgres_database() as url:
        env = {
            "KB_DATABASE_URL": url,
            "KB_DATA_DIR": str(tmp_path / "data"),
            "KB_SECRET_KEY": SECRET,
            "KB_CONTENT_DIR": str(content_dir),
        }
        server = ServerProcess(env, tmp_path / "server.log").start()
        engine = create_engine(url)
        try:
            with engine.connect() as locker:
                locker.execute(text("LOCK TABLE vote IN ACCESS EXCLUSIVE MODE"))  # held until the block ends
                started = time.monotonic()
                response = httpx.get(f"{server.url}/healthz", timeout=30)
                waited = time.monotonic() - started
                locker.rollback()
            assert response.status_code == 503
            assert response.json()["detail"] == "the database did not answer within 1 s"
            assert waited < HEALTHZ_LIMIT_S
            assert httpx.get(f"{server.url}/healthz", timeout=30).status_code == 200
        finally:
            engine.dispose()
            server.stop()


def test_an_idle_connection_outlives_the_client_keep_alive(tmp_path, content_dir):
    """Clients keep idle connections for reuse (httpx and requests: 5 s). Had the server closed them at the
    same age, a request sent on one just then met a reset: one in ~8 load runs lost a request that way."""
    env = {"KB_DATA_DIR": str(tmp_path / "data"), "KB_SECRET_KEY": SECRET, "KB_CONTENT_DIR": str(content_dir)}
    server = ServerProcess(env, tmp_path / "server.log").start()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    statuses, sockets = [], []
    try:
        for pause in (0, 6):  # longer than a client's 5 s idle expiry
            time.sleep(pause)
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
            sockets.append(connection.sock)
    finally:
        connection.close()
        server.stop()
    assert statuses == [200, 200]
    assert sockets[0] is sockets[1], "the second request needed a new connection"
