"""Run every benchmark and write the table to benchmarks/README.md (`make bench` or `python -m benchmarks.run`)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from itertools import pairwise
from pathlib import Path

from benchmarks import load, measure, ocr

POSTGRES_URL = os.environ.get("KB_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
# goal per path as a ratio to /healthz (issue: entry pages and search >= 0.5x, a short paste >= 0.3x)
LOAD_GOALS = {
    "POST /api/v1/match (short paste)": 0.3,
    "POST /paste (form)": 0.3,
    "GET /errors/{code}": 0.5,
    "GET /api/v1/errors/{code}": 0.5,
    "GET /api/v1/search": 0.5,
}

OUT = Path(__file__).resolve().parent

HEADER = """# Benchmarks

`make bench` (or `python -m benchmarks.run`) measures the manual against the limits of the machine it
runs on and rewrites this file. Each figure is a ratio of two things measured side by side in the same
run, because absolute times drift on a shared machine. Nothing here is asserted by the test suite.

"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10, help="duration of each HTTP load run")
    parser.add_argument("--sizes", default="100,1000,10000", help="synthetic corpus sizes for the search engine")
    parser.add_argument(
        "--load-seconds", type=int, default=30, help="duration of each path's load (wrk, 64 connections)"
    )
    parser.add_argument("--only-load", action="store_true", help="run the load tables alone")
    parser.add_argument(
        "--only",
        choices=("findings", "matcher", "search", "startup"),
        help="re-measure one section and keep the other figures of the last run",
    )
    parser.add_argument("--databases", default="sqlite,postgres", help="which load tables to (re)measure")
    args = parser.parse_args()
    started = time.time()
    if args.only:
        results = json.loads((OUT / "results.json").read_text())
        results[args.only] = SECTIONS[args.only](args)
        write(results, started)
        return
    wanted = args.databases.split(",")
    loads = {}
    if "sqlite" in wanted:
        loads["SQLite, one server"] = load.load_figures(args.load_seconds)
    if "postgres" in wanted and _postgres_reachable():
        loads["PostgreSQL, two servers"] = load.load_figures(args.load_seconds, POSTGRES_URL)
    if args.only_load:  # keep the other figures of the last run, replace the load tables measured now
        results = json.loads((OUT / "results.json").read_text())
        results["load"] = {**results.get("load", {}), **loads}
        write(results, started)
        return
    results = {
        "load": loads,
        "matcher": measure.matcher_figures(),
        "findings": measure.findings_figures(),
        "search": measure.search_figures(tuple(int(size) for size in args.sizes.split(","))),
        "http": measure.http_figures(args.seconds),
        "startup": measure.startup_figures(),
    }
    write(results, started)


SECTIONS = {
    "findings": lambda args: measure.findings_figures(),
    "matcher": lambda args: measure.matcher_figures(),
    "search": lambda args: measure.search_figures(tuple(int(size) for size in args.sizes.split(","))),
    "startup": lambda args: measure.startup_figures(),
}


def write(results: dict, started: float) -> None:
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    (OUT / "README.md").write_text(
        HEADER + table(results) + "\n" + load_tables(results["load"]) + footer(started) + "\n" + ocr.section()
    )
    print((OUT / "README.md").read_text())


def table(r: dict) -> str:
    logs = {row["bytes"] // 1024: row for row in r["matcher"]["logs"]}
    one_mib = min(logs.values(), key=lambda row: abs(row["bytes"] - 1024 * 1024))
    per_mib = [row["ms_per_mib"] for row in r["matcher"]["logs"]]
    # Linear means each added MiB costs the same; the average per MiB of a 10 KB paste also carries
    # the fixed cost of a call, so the marginal cost between sizes is the figure that tells.
    ordered = r["matcher"]["logs"]
    marginal = [
        (b["match_ms"] - a["match_ms"]) / ((b["bytes"] - a["bytes"]) / 1024 / 1024) for a, b in pairwise(ordered)
    ]
    single = {row["bytes"] // 1024: row for row in r["matcher"]["single_line"]}
    single_per_mib = [row["match_ms"] / (row["bytes"] / 1024 / 1024) for row in r["matcher"]["single_line"]]
    http_c, http_u = r["http"]["cached"], r["http"]["uncached"]
    rows = [
        (
            "Matcher, 1 MiB multi-rank log vs one regex pass",
            f"{one_mib['match_ms']:.0f} ms vs {one_mib['regex_ms']:.1f} ms = **{one_mib['ratio']:.1f}x**",
            "<= 20x (aim 5x)",
            one_mib["ratio"] <= 20,
        ),
        (
            "Matcher, ms per MiB at 10 KB / 100 KB / 1 MiB / 4 MiB; marginal ms per added MiB between them",
            " / ".join(f"{v:.0f}" for v in per_mib)
            + "; marginal "
            + " / ".join(f"{v:.0f}" for v in marginal)
            + f" (max/min {max(marginal) / min(marginal):.2f})",
            "linear (flat marginal cost)",
            max(marginal) / min(marginal) < 2,
        ),
        (
            "Matcher, one line of 256 KiB / 1 MiB / 4 MiB",
            " / ".join(f"{row['match_ms']:.0f}" for row in single.values())
            + " ms; per MiB "
            + " / ".join(f"{v:.0f}" for v in single_per_mib)
            + f" (max/min {max(single_per_mib) / min(single_per_mib):.2f})",
            "linear (flat per MiB)",
            max(single_per_mib) / min(single_per_mib) < 2,
        ),
        *[
            (
                f"Matcher, {row['bytes'] // measure.MIB} MiB log with 70 distinct real errors ({row['blocks']} blocks), "
                f"{'with a tqdm bar and a Chinese path on every line' if row['non_ascii'] else 'ASCII'}, vs one regex pass",
                f"{row['match_ms']:.0f} ms vs {row['regex_ms']:.1f} ms = **{row['ratio']:.1f}x**",
                "<= 20x",
                row["ratio"] <= 20,
            )
            for row in r["matcher"].get("many_tracebacks", [])
        ],
        (
            "Matcher, 10 KB paste",
            f"{logs[min(logs)]['match_ms']:.1f} ms",
            "milliseconds",
            logs[min(logs)]["match_ms"] < 50,
        ),
        (
            f"HTTP search vs /healthz, 32 connections ({http_c['tool']}), cached",
            f"{http_c['search_rps']:.0f} vs {http_c['healthz_rps']:.0f} req/s = **{http_c['ratio']:.2f}x**",
            ">= 0.3x",
            http_c["ratio"] >= 0.3,
        ),
        (
            "HTTP search vs /healthz, uncached (KB_SEARCH_CACHE_SIZE=0)",
            f"{http_u['search_rps']:.0f} vs {http_u['healthz_rps']:.0f} req/s = **{http_u['ratio']:.2f}x**",
            "reported",
            True,
        ),
    ]
    if "findings" in r:
        f = r["findings"]
        rows += [
            (
                "Findings on a 1 MiB log with a `pip list` (" + ", ".join(f["kinds"]) + ") vs matching it",
                f"{f['findings_ms']:.0f} ms vs {f['match_ms']:.0f} ms match ({f['regex_ms']:.1f} ms regex pass)",
                "within the matcher's budget (< match time)",
                f["findings_ms"] < f["match_ms"],
            ),
            (
                "Release facts: releases, size on disk, build of one release from its wheel, load of all",
                f"{f['releases']} releases, {f['facts_bytes'] / 1024:.0f} KiB, {f['build_one_s']:.1f} s, {f['load_all_s'] * 1000:.0f} ms",
                "reported",
                True,
            ),
        ]
    for row in r["search"]:
        rows.append(
            (
                f"Search p50 uncached, {row['entries']} entries vs SQLite FTS5",
                f"{row['ours_p50_ms']:.2f} ms vs {row['fts5_p50_ms']:.2f} ms = **{row['ratio']:.1f}x**",
                "<= 3x FTS5",
                row["ratio"] <= 3,
            )
        )
    for row in r["search"]:
        if row["entries"] >= 1000:
            rows.append((f"Index build, {row['entries']} entries", f"{row['build_s']:.1f} s", "reported", True))
    startup = r["startup"]
    rows += [
        (
            "Cold start `kb serve` to healthy (builds index and database)",
            f"{r['http']['start_s_cached']:.1f} s",
            "reported",
            True,
        ),
        (
            "Cold start `kb match` on a 10 KB paste vs `python3 -c pass`",
            f"{startup['kb_match_s']:.2f} s vs {startup['python_s']:.3f} s = **{startup['ratio']:.0f}x**",
            "reported",
            True,
        ),
        (
            "Peak memory of the server under the search load (VmHWM)",
            f"{r['http']['peak_rss_mib_cached']:.0f} MiB cached / {r['http']['peak_rss_mib_uncached']:.0f} MiB uncached",
            "reported",
            True,
        ),
    ]
    lines = ["| figure | measured | goal | met |", "|---|---|---|---|"]
    lines += [f"| {name} | {value} | {goal} | {'yes' if met else '**no**'} |" for name, value, goal, met in rows]
    return "\n".join(lines) + "\n"


def load_tables(loads: dict) -> str:
    """One table per database: every path under 64 connections, as a ratio to /healthz in the same run."""
    parts = []
    for label, figures in loads.items():
        parts.append(f"### Load: {label} (wrk, {load.CONNECTIONS} connections, {figures['seconds']} s per path)\n")
        parts.append(
            "| path | req/s | vs /healthz | goal | not 2xx | socket errors | slowest /healthz during it "
            "(probe answers not 200 / unanswered) | server RSS before → after |"
        )
        parts.append("|---|---|---|---|---|---|---|---|")
        for name, row in figures["rows"].items():
            goal = LOAD_GOALS.get(name)
            met = "" if goal is None else (" (met)" if row["ratio"] >= goal else " (**not met**)")
            parts.append(
                f"| {name} | {row['rps']:.0f} | {row['ratio']:.2f}x | {f'>= {goal}x' if goal else 'answered, /healthz < 1 s'}{met} "
                f"| {row['non_2xx']} | {row['socket_errors']} | {row['healthz_worst_s'] * 1000:.0f} ms "
                f"({row.get('healthz_not_200', 0)} / {row['healthz_failures']}) "
                f"| {row['rss_before_mib']:.0f} → {row['rss_after_mib']:.0f} MiB |"
            )
        parts.append(f"\nPeak memory of the server(s) over the whole run (VmHWM): {figures['peak_rss_mib']:.0f} MiB.\n")
    return "\n".join(parts) + "\n"


def _postgres_reachable() -> bool:
    from sqlalchemy import create_engine, text

    try:
        engine = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 2})
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        engine.dispose()
        return True
    except Exception:  # no server here: the PostgreSQL table is left out and says so by its absence
        return False


def footer(started: float) -> str:
    return (
        f"\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, in {time.time() - started:.0f} s. "
        "Raw numbers: `results.json`.\n"
    )


if __name__ == "__main__":
    main()
