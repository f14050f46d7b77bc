"""Concurrent load on every front door (wrk, 64 connections), as a ratio to /healthz in the same run.

Each path is loaded for the same time while a probe asks /healthz every 100 ms; the table reports
requests per second, the ratio to /healthz alone, answers that were not 2xx, socket errors and
timeouts, the slowest /healthz answer under the load, and the server's memory before and after.
On PostgreSQL two servers share one database and each gets half of the connections.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

from benchmarks import synthetic
from benchmarks.measure import Server

CONNECTIONS = 64
SHORT_PASTE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.10 GiB is free."
)
CODES = ["DIST-002", "ROLL-001", "TRAIN-002", "CFG-002", "ENV-006", "DATA-001", "CKPT-010", "ROLL-003"]
QUERIES = [
    "nccl timeout",
    "out of memory",
    "vllm",
    "pad_token_id",
    "ray actor died",
    "显存不足",
    "hydra override",
    "checkpoint",
]
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
MCP_SESSIONS = 32


def _request(method: str, path: str, body: str = "", headers: dict | None = None) -> dict:
    return {"method": method, "path": path, "body": body, "headers": headers or {}}


def _json(path: str, payload: dict, headers: dict | None = None) -> dict:
    return _request("POST", path, json.dumps(payload), {"content-type": "application/json", **(headers or {})})


def workloads(mcp_sessions: list[str]) -> dict[str, list[dict]]:
    """Name -> the requests wrk cycles through (MCP calls rotate over many sessions, as many agents' would)."""
    log = synthetic.training_log(100 * 1024) + "\n" + SHORT_PASTE + "\n"
    diagnose = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "diagnose_log", "arguments": {"text": SHORT_PASTE}},
    }
    loads = {
        "POST /api/v1/match (short paste)": [_json("/api/v1/match", {"text": SHORT_PASTE})],
        "POST /api/v1/match (100 KB log)": [_json("/api/v1/match", {"text": log})],
        "POST /paste (form)": [
            _request(
                "POST",
                "/paste",
                "text=" + httpx.QueryParams({"t": SHORT_PASTE})["t"].replace(" ", "+"),
                {"content-type": "application/x-www-form-urlencoded"},
            )
        ],
        "GET /errors/{code}": [_request("GET", f"/errors/{code}") for code in CODES],
        "GET /api/v1/errors/{code}": [_request("GET", f"/api/v1/errors/{code}") for code in CODES],
        "GET /api/v1/search": [_request("GET", "/api/v1/search?" + str(httpx.QueryParams({"q": q}))) for q in QUERIES],
        "MCP diagnose_log": [
            _request("POST", "/mcp", json.dumps(diagnose), {**MCP_HEADERS, "mcp-session-id": session})
            for session in mcp_sessions
        ],
    }
    votes = [
        _json(f"/api/v1/errors/{code}/fixes/{fix}/votes", {"worked": worked})
        for code, fix, worked in (
            ("ROLL-001", "raise-gpu-memory-utilization", True),
            ("DIST-002", "locate-stuck-rank", False),
        )
    ]
    loads["mix of all, with votes"] = [request for requests in loads.values() for request in requests[:2]] + votes
    return loads


def _lua(requests: list[dict]) -> str:
    entries = []
    for r in requests:
        headers = "{" + ",".join(f"[{json.dumps(k)}]={json.dumps(v)}" for k, v in r["headers"].items()) + "}"
        entries.append(f"{{{json.dumps(r['method'])},{json.dumps(r['path'])},{headers},{json.dumps(r['body'])}}}")
    return (
        "local reqs = {" + ",\n".join(entries) + "}\nlocal i = 0\n"
        "request = function()\n  i = i % #reqs + 1\n  local r = reqs[i]\n"
        "  return wrk.format(r[1], r[2], r[3], r[4])\nend\n"
    )


def _wrk(url: str, script: Path, seconds: int, connections: int) -> dict:
    output = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
        "requests": int(re.search(r"(\d+) requests in", output).group(1)),
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": sum(int(n) for n in errors.groups()) if errors else 0,
    }


class HealthProbe(threading.Thread):
    """Ask /healthz every 100 ms on each server; keep the slowest answer and count answers that were not
    200 (a 503 says the database did not answer within its budget) and requests that got no answer."""

    def __init__(self, urls: list[str]):
        super().__init__(daemon=True)
        self.urls, self.worst, self.failures, self.not_ok, self.done = urls, 0.0, 0, 0, threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.done.is_set():
                for url in self.urls:
                    started = time.perf_counter()
                    try:
                        status = client.get(f"{url}/healthz").status_code
                    except httpx.HTTPError:
                        status = None  # no answer within the client's 10 s
                    self.worst = max(self.worst, time.perf_counter() - started)
                    self.not_ok += status is not None and status != 200
                    self.failures += status is None
                self.done.wait(0.1)


def _load(servers: list[Server], requests: list[dict], seconds: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(_lua(requests))
    probe = HealthProbe([s.url for s in servers])
    rss_before = sum(s.rss_mib() for s in servers)
    probe.start()
    results: list[dict] = [{} for _ in servers]

    def run(index: int) -> None:
        results[index] = _wrk(servers[index].url, Path(handle.name), seconds, CONNECTIONS // len(servers))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(servers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    probe.done.set()
    probe.join()
    Path(handle.name).unlink()
    return {
        "rps": sum(r["rps"] for r in results),
        "requests": sum(r["requests"] for r in results),
        "non_2xx": sum(r["non_2xx"] for r in results),
        "socket_errors": sum(r["socket_errors"] for r in results),
        "healthz_worst_s": probe.worst,
        "healthz_failures": probe.failures,
        "healthz_not_200": probe.not_ok,
        "rss_before_mib": rss_before,
        "rss_after_mib": sum(s.rss_mib() for s in servers),
    }


def _mcp_session(url: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    response = httpx.post(f"{url}/mcp", json=init, headers=MCP_HEADERS, timeout=10)
    session = response.headers["mcp-session-id"]
    httpx.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**MCP_HEADERS, "mcp-session-id": session},
        timeout=10,
    )
    return session


def load_figures(seconds: int, postgres_url: str | None = None) -> dict:
    """The load table on SQLite (one server) or on PostgreSQL (two servers on one database)."""
    if shutil.which("wrk") is None:
        raise SystemExit("the load tables need wrk: apt-get install wrk (Debian's package)")
    with tempfile.TemporaryDirectory() as temp:
        env = {"KB_VOTE_RATE_LIMIT": "1000000/minute", "KB_SECRET_KEY": "b" * 40}
        database = None
        if postgres_url:
            database = _create_database(postgres_url)
            env["KB_DATABASE_URL"] = database
        servers = [Server(Path(temp) / f"s{i}", **env) for i in range(2 if postgres_url else 1)]
        try:
            for server in servers:
                server.start()
            rows = {"GET /healthz": _load(servers, [_request("GET", "/healthz")], seconds)}
            for name, requests in workloads([_mcp_session(servers[0].url) for _ in range(MCP_SESSIONS)]).items():
                # an MCP session lives in the server that opened it: its loads go to that server alone
                uses_mcp = any(request["path"] == "/mcp" for request in requests)
                rows[name] = _load(servers[:1] if uses_mcp else servers, requests, seconds)
            peak = sum(s.peak_rss_mib() for s in servers)
        finally:
            for server in servers:
                server.stop()
            if database:
                _drop_database(postgres_url, database)
    healthz = rows["GET /healthz"]["rps"]
    for row in rows.values():
        row["ratio"] = row["rps"] / healthz
    return {"servers": len(servers), "seconds": seconds, "rows": rows, "peak_rss_mib": peak}


def _create_database(admin_url: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"kb_bench_{uuid.uuid4().hex[:10]}"
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def _drop_database(admin_url: str, url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    engine.dispose()
