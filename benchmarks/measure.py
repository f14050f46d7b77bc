"""The measurements, each a ratio taken side by side in one run (absolute times drift on a shared machine)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from app.entries import load_catalog_strict
from app.matcher import Matcher
from app.search import index as search_index
from app.search.query import SearchService
from app.settings import ROOT
from benchmarks import synthetic

REGEX_PASS = re.compile(r"(?m)^.*(?:Error|Exception).*$")  # what a grep-like tool does in one pass
KIB, MIB = 1024, 1024 * 1024


def best_of(function, runs: int = 3) -> float:
    """Smallest wall time of a few runs, in seconds (the least disturbed by other load)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def matcher_figures() -> dict:
    """Matching vs one compiled-regex pass, from 10 KB to 4 MiB, and one 1 MiB line."""
    matcher = Matcher(load_catalog_strict(synthetic.CONTENT))
    rows = []
    for size in (10 * KIB, 100 * KIB, MIB, 4 * MIB):
        log = synthetic.training_log(size)
        match = best_of(lambda log=log: matcher.diagnose(log))
        regex = best_of(lambda log=log: REGEX_PASS.findall(log))
        top = matcher.diagnose(log).matches[0].code
        rows.append(
            {
                "bytes": len(log),
                "match_ms": match * 1000,
                "regex_ms": regex * 1000,
                "ratio": match / regex,
                "ms_per_mib": match * 1000 / (len(log) / MIB),
                "top": top,
            }
        )
    real = load_catalog_strict(ROOT / "content" / "errors")
    real_matcher = Matcher(real)
    examples = [entry.meta.examples[0] for entry in list(real)[:70]]
    many = []
    for non_ascii in (False, True):
        for size in (MIB, 2 * MIB):
            log = synthetic.many_tracebacks_log(examples, size, non_ascii=non_ascii)
            match = best_of(lambda log=log: real_matcher.diagnose(log))
            regex = best_of(lambda log=log: REGEX_PASS.findall(log))
            many.append(
                {
                    "bytes": size,
                    "non_ascii": non_ascii,
                    "blocks": len(real_matcher.diagnose(log).blocks),
                    "match_ms": match * 1000,
                    "regex_ms": regex * 1000,
                    "ratio": match / regex,
                }
            )
    single = []
    for size in (256 * KIB, MIB, 4 * MIB):
        line = synthetic.single_line(size)
        single.append(
            {
                "bytes": size,
                "match_ms": best_of(lambda line=line: matcher.diagnose(line)) * 1000,
                "regex_ms": best_of(lambda line=line: REGEX_PASS.findall(line)) * 1000,
            }
        )
    return {"logs": rows, "single_line": single, "many_tracebacks": many}


def _fts5(catalog, folder: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(folder / "fts.sqlite3")
    connection.execute(
        "CREATE VIRTUAL TABLE doc USING fts5(code, title, summary, body, errors, fixes, tokenize='unicode61')"
    )
    connection.executemany(
        "INSERT INTO doc VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                e.code,
                e.meta.title,
                e.meta.summary,
                e.body,
                "\n".join(e.meta.examples),
                "\n".join(f.title + "\n" + f.body for f in e.fixes),
            )
            for e in catalog
        ],
    )
    connection.commit()
    return connection


def _fts5_query(text: str) -> str:
    words = re.findall(r"\w+", text)
    return " OR ".join(f'"{word}"' for word in words) or '""'


def findings_figures() -> dict:
    """Findings on a 1 MiB log next to matching it, and the size, build and load time of the release facts."""
    from app.findings import Findings
    from app.releases import ReleaseLibrary, facts_dir, read_wheel_facts
    from app.settings import Settings

    verl_dir = ROOT / "data" / "verl"
    library = ReleaseLibrary.load(verl_dir)
    findings = Findings(library, Settings().verl_version)
    matcher = Matcher(load_catalog_strict(synthetic.CONTENT))
    log = synthetic.pip_listing() + synthetic.training_log(MIB)
    diagnosis = matcher.diagnose(log)
    found = findings.find(diagnosis)
    wheel = sorted((verl_dir / "wheels").glob(f"verl-{Settings().verl_version}-*.whl"))[0]
    files = list(facts_dir(verl_dir).glob("*.json.gz"))
    return {
        "bytes": len(log),
        "match_ms": best_of(lambda log=log: matcher.diagnose(log)) * 1000,
        "findings_ms": best_of(lambda: findings.find(diagnosis)) * 1000,
        "regex_ms": best_of(lambda log=log: REGEX_PASS.findall(log)) * 1000,
        "kinds": sorted({finding["kind"] for finding in found}),
        "releases": len(library.releases),
        "facts_bytes": sum(path.stat().st_size for path in files),
        "build_one_s": best_of(lambda: read_wheel_facts(wheel, "bench"), runs=1),
        "load_all_s": best_of(lambda: ReleaseLibrary.load(verl_dir)),
    }


def search_figures(sizes=(100, 1000, 10000)) -> list[dict]:
    """Uncached query p50 of our engine vs SQLite FTS5 on the same synthetic corpus; index build times."""
    queries = synthetic.queries()
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as temp:
            folder = Path(temp)
            catalog = synthetic.corpus(size, folder / "content")
            started = time.perf_counter()
            search_index.build(catalog, folder / "data")
            build_s = time.perf_counter() - started
            service = SearchService(search_index.open_generation(folder / "data"), cache_size=0)
            ours = []
            for query in queries:
                started = time.perf_counter()
                service.search(query, limit=10)
                ours.append(time.perf_counter() - started)
            connection = _fts5(catalog, folder)
            theirs = []
            for query in queries:
                started = time.perf_counter()
                connection.execute(
                    "SELECT code, snippet(doc, 3, '<mark>', '</mark>', '…', 20) FROM doc WHERE doc MATCH ? "
                    "ORDER BY bm25(doc) LIMIT 10",
                    (_fts5_query(query),),
                ).fetchall()
                theirs.append(time.perf_counter() - started)
            connection.close()
        ours_p50, theirs_p50 = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
        rows.append(
            {
                "entries": size,
                "build_s": build_s,
                "ours_p50_ms": ours_p50,
                "fts5_p50_ms": theirs_p50,
                "ratio": ours_p50 / theirs_p50,
            }
        )
    return rows


class Server:
    """`kb serve` on a free loopback port, for the HTTP and start-up figures."""

    def __init__(self, data_dir: Path, **env: str):
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "KB_DATA_DIR": str(data_dir), "KB_PORT": str(self.port), **env}
        self.process = None

    def start(self) -> float:
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app", "serve"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return time.perf_counter() - started
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.perf_counter() - started > 120:
                raise RuntimeError("server did not become healthy")
            time.sleep(0.02)

    def rss_mib(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024

    def peak_rss_mib(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def _wrk(url: str, paths: list[str], seconds: int, connections: int = 32) -> float:
    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    quoted = ",".join(json.dumps(path) for path in paths)
    script.write_text(
        f"local paths = {{{quoted}}}\nlocal i = 0\n"
        "request = function()\n  i = i % #paths + 1\n  return wrk.format('GET', paths[i])\nend\n"
    )
    output = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    script.unlink()
    if "Non-2xx" in output:
        raise RuntimeError(f"errors under load:\n{output}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))


async def _asyncio_load(url: str, paths: list[str], seconds: int, connections: int = 32) -> float:
    import asyncio

    done = 0
    deadline = time.perf_counter() + seconds
    async with httpx.AsyncClient(base_url=url, limits=httpx.Limits(max_connections=connections)) as client:

        async def worker(offset: int):
            nonlocal done
            index = offset
            while time.perf_counter() < deadline:
                response = await client.get(paths[index % len(paths)])
                response.raise_for_status()
                done += 1
                index += connections

        await asyncio.gather(*(worker(n) for n in range(connections)))
    return done / seconds


def requests_per_second(url: str, paths: list[str], seconds: int) -> tuple[float, str]:
    import asyncio
    import shutil

    if shutil.which("wrk"):
        return _wrk(url, paths, seconds), "wrk"
    return asyncio.run(_asyncio_load(url, paths, seconds)), "asyncio"


def http_figures(seconds: int = 10) -> dict:
    """Search vs /healthz under 32 connections, with the result cache and without it; server memory."""
    from urllib.parse import quote

    paths = [f"/api/v1/search?q={quote(query)}" for query in synthetic.queries()]
    figures = {}
    with tempfile.TemporaryDirectory() as temp:
        for label, cache in (("cached", "2048"), ("uncached", "0")):
            server = Server(Path(temp) / label, KB_SEARCH_CACHE_SIZE=cache, KB_VOTE_RATE_LIMIT="30/minute")
            figures[f"start_s_{label}"] = server.start()
            try:
                healthz, tool = requests_per_second(server.url, ["/healthz"], seconds)
                search, _ = requests_per_second(server.url, paths, seconds)
                figures[label] = {"healthz_rps": healthz, "search_rps": search, "ratio": search / healthz, "tool": tool}
                figures[f"peak_rss_mib_{label}"] = server.peak_rss_mib()
            finally:
                server.stop()
    return figures


def startup_figures() -> dict:
    """Cold start of `kb match` on a 10 KB paste and of `python3 -c pass`."""
    paste = synthetic.training_log(10 * KIB)
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as handle:
        handle.write(paste)
    command = [sys.executable, "-m", "app", "match", handle.name]
    match = best_of(lambda: subprocess.run(command, cwd=ROOT, capture_output=True), runs=3)
    python = best_of(lambda: subprocess.run([sys.executable, "-c", "pass"], capture_output=True), runs=3)
    os.unlink(handle.name)
    return {"kb_match_s": match, "python_s": python, "ratio": match / python}
