"""Replay the development set through the server with recording on; write benchmarks/insights.md: what was
recorded for the negatives, and what recording costs a diagnosis (`python -m benchmarks.insights`)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.diagnose import read_labelled
from app.ingest import ingest
from app.insights.fingerprint import observe
from app.manual import Manual
from app.settings import ROOT, Settings
from app.store.db import make_engine
from app.store.tables import FingerprintRow, FingerprintVersion
from app.web.app import create_app

PASTES = ROOT / "tests" / "fixtures" / "pastes"
OUT = Path(__file__).resolve().parent / "insights.md"
ROUNDS = 3


def labelled() -> list[tuple[str, str, str]]:
    return [(path.name, *read_labelled(path)) for path in sorted(PASTES.iterdir())]


def replay(settings: Settings, pastes: list[tuple[str, str, str]]) -> tuple[float, float]:
    """POST every paste to /api/v1/match; return (seconds for the answers, seconds until all was written)."""
    app = create_app(settings)
    with TestClient(app) as client:
        started = time.perf_counter()
        for _name, _expect, text in pastes:
            client.post("/api/v1/match", json={"text": text}).raise_for_status()
        answered = time.perf_counter() - started
        app.state.kb.recorder.flush(60)
        written = time.perf_counter() - started
    return answered, written


def fingerprint_cost(manual: Manual, pastes) -> tuple[list[float], list[float]]:
    diagnose_ms, observe_ms = [], []
    for _name, _expect, text in pastes:
        started = time.perf_counter()
        diagnosis = manual.matcher.diagnose(text)
        middle = time.perf_counter()
        observe(diagnosis)
        diagnose_ms.append((middle - started) * 1000)
        observe_ms.append((time.perf_counter() - middle) * 1000)
    return diagnose_ms, observe_ms


def negatives_table(settings: Settings, manual: Manual, pastes) -> list[str]:
    engine = make_engine(settings)
    with Session(engine) as session:
        stored = {row.id: row for row in session.exec(select(FingerprintRow))}
        versions = {}
        for row in session.exec(select(FingerprintVersion)):
            versions.setdefault(row.fingerprint, []).append(row.verl_version)
    engine.dispose()
    lines = [
        "| paste | recorded as | exception | template (first 90 characters) | deepest verl frame | verl |",
        "|---|---|---|---|---|---|",
    ]
    for name, expect, text in pastes:
        if expect != "none":
            continue
        observation = observe(manual.matcher.diagnose(text))
        if observation is None:
            lines.append(f"| `{name[:48]}` | nothing (no error line in it) | | | | |")
            continue
        row = stored[observation.fingerprint.id]
        kind = f"miss ({row.missed} of {row.seen})" if observation.missed else f"seen ({row.seen}), answered"
        template = row.template[:90].replace("|", "\\|")
        template = f"`` {template} ``" if template else "(empty: the traceback was cut before its message)"
        lines.append(
            f"| `{name[:48]}` | {kind} | `{row.exception}` | {template} | {row.frame or '—'} | "
            f"{', '.join(versions.get(row.id, [])) or '—'} |"
        )
    return lines


def main() -> None:
    pastes = labelled()
    with tempfile.TemporaryDirectory() as folder:
        base = {"content_dir": ROOT / "content" / "errors", "secret_key": "b" * 40}
        on = Settings(data_dir=Path(folder) / "on", **base)
        off = Settings(data_dir=Path(folder) / "off", record_misses=False, **base)
        ingest(on)
        ingest(off)
        manual = Manual.open(on, fresh=True)
        diagnose_ms, observe_ms = fingerprint_cost(manual, pastes)
        timings = {"on": [], "off": [], "written": []}
        for _round in range(ROUNDS):  # alternate, so drift on a shared machine hits both alike
            answered, written = replay(on, pastes)
            timings["on"].append(answered)
            timings["written"].append(written)
            timings["off"].append(replay(off, pastes)[0])
        table = negatives_table(on, manual, pastes)
        engine = make_engine(on)
        with Session(engine) as session:
            rows = session.exec(select(FingerprintRow)).all()
        engine.dispose()
    negatives = sum(expect == "none" for _n, expect, _t in pastes)
    on_s, off_s = min(timings["on"]), min(timings["off"])
    text = (
        f"""# Insights: what the development set leaves behind, and what recording costs

`python -m benchmarks.insights` replays the {len(pastes)} pastes of `tests/fixtures/pastes/` through
`POST /api/v1/match` of a server on the real content with recording on ({ROUNDS} rounds), and rewrites
this file. Nothing here is asserted by the test suite.

## Cost

| figure | measured |
|---|---|
| Fingerprinting a diagnosis (`observe`), per paste: mean / max | {statistics.mean(observe_ms):.3f} / {max(observe_ms):.3f} ms |
| The diagnosis itself, per paste: mean / max | {statistics.mean(diagnose_ms):.2f} / {max(diagnose_ms):.2f} ms |
| {len(pastes)} answers of `POST /api/v1/match`, recording on vs off (best of {ROUNDS}) | {on_s:.2f} s vs {off_s:.2f} s = **{on_s / off_s:.2f}x** |
| ... until the writer thread had stored all of it | {min(timings["written"]):.2f} s |

## What was recorded

After {ROUNDS} replays the database holds {len(rows)} fingerprints for {len(pastes)} pastes; {sum(r.missed > 0 for r in rows)}
of them were missed at least once ({sum(r.missed for r in rows)} missed diagnoses of {sum(r.seen for r in rows)}).

### The {negatives} negatives (errors that are not verl's: the manual must stay quiet)

Each is recorded as a miss, which is what a maintainer should see: an error users bring that the manual
does not answer. Private parts never appear; a cut traceback keeps only its wrapper's type and frames.

"""
        + "\n".join(table)
        + "\n"
    )
    OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
