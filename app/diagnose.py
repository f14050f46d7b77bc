"""Diagnose pastes outside the server: `kb match` and `kb eval` share the server's matcher and JSON."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from app.entries import load_catalog_strict
from app.findings import Findings
from app.matcher import CONFIDENT, Matcher
from app.search import index as search_index
from app.search.query import SearchService
from app.settings import Settings
from app.store.db import make_engine
from app.views import match_data, match_stats

EXPECT_PREFIX = "# expect:"
HEADER_RE = re.compile(r"# [a-z_]+:")


class LocalManual:
    """The catalog, matcher and index of this checkout, for one-shot commands.

    The index must be the one built from these very entries: one built from an older copy names entries
    that are gone (and crashed `kb match`), and none at all loses the full-text suggestions. A missing or
    stale index is rebuilt as `kb index` would; where that cannot be done, ``notice`` says what is lost.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self.catalog = load_catalog_strict(settings.content_dir)
        self.notice: str | None = None
        self.rebuilt = False
        self.search = self._search()
        self.matcher = Matcher(self.catalog, fulltext=self.search.fulltext if self.search else None)
        self.findings = Findings.from_settings(settings)

    def _search(self) -> SearchService | None:
        data_dir = self.settings.data_dir
        if search_index.current_hash(data_dir) != search_index.build_hash(self.catalog):
            from app.ingest import IngestError, ingest

            try:
                ingest(self.settings)
                self.rebuilt = True
            except (IngestError, OSError, SQLAlchemyError) as exc:
                self.notice = (f"full-text suggestions are unavailable: the search index in {data_dir} is missing or "
                               f"older than the entries, and rebuilding it failed ({str(exc).splitlines()[-1]}); "
                               "run `kb index`")
                return None
        return SearchService(search_index.open_generation(data_dir))

    def url_for(self, code: str) -> str:
        return f"{self.settings.base_url}/errors/{code}"

    def match(self, text: str | bytes, limit: int = 5) -> dict:
        """Return the `/api/v1/match` JSON for a paste (fixes ordered by this machine's votes, if any)."""
        diagnosis = self.matcher.diagnose(text, limit)
        return match_data(diagnosis, self.catalog, self._stats(diagnosis), "en", self.url_for, self.findings)

    def _stats(self, diagnosis) -> dict:
        if not self.settings.database_url and not (self.settings.data_dir / "kb.sqlite3").exists():
            return {}  # never indexed here: no votes to order fixes by, and no file to create
        engine = make_engine(self.settings)
        try:
            with Session(engine) as session:
                return match_stats(diagnosis, session)
        except SQLAlchemyError:  # a database without the vote table yet: same answer, no counts
            return {}
        finally:
            engine.dispose()

    def is_confident(self, result: dict) -> bool:
        return any(match["confidence"] in CONFIDENT for match in result["matches"])


@dataclass
class Case:
    """One labelled paste. Top-1 needs the first answer to be confident (high/medium) and right; top-3 asks
    whether the right entry is among the first three answers shown, suggestions included. A negative is
    clean when nothing confident is answered."""

    path: Path
    expect: str  # a code or "none"
    got: list[str] = field(default_factory=list)  # confident matches in rank order
    shown: list[str] = field(default_factory=list)  # every match in rank order, suggestions included

    @property
    def top1(self) -> bool:
        return (not self.got) if self.expect == "none" else self.got[:1] == [self.expect] and self.shown[:1] == [self.expect]

    @property
    def top3(self) -> bool:
        return (not self.got) if self.expect == "none" else self.expect in self.shown[:3]


@dataclass
class EvalReport:
    cases: list[Case]

    @property
    def positives(self) -> list[Case]:
        return [case for case in self.cases if case.expect != "none"]

    @property
    def negatives(self) -> list[Case]:
        return [case for case in self.cases if case.expect == "none"]

    def rate(self, attribute: str) -> float:
        cases = self.positives
        return sum(getattr(case, attribute) for case in cases) / len(cases) if cases else 0.0

    @property
    def negatives_clean(self) -> int:
        return sum(case.top1 for case in self.negatives)

    def as_dict(self) -> dict:
        return {
            "files": len(self.cases), "positives": len(self.positives), "negatives": len(self.negatives),
            "top1": round(self.rate("top1"), 4), "top3": round(self.rate("top3"), 4),
            "negatives_clean": self.negatives_clean,
            "failures": [{"file": case.path.name, "expect": case.expect, "got": case.got[:3], "shown": case.shown[:3]}
                         for case in self.cases if not case.top1],
        }


def read_labelled(path: Path) -> tuple[str, str]:
    """Return (expected code, 'none' or 'missing', paste text) of a labelled file.

    The first line is ``# expect: <CODE>``; further ``# key: value`` lines right below it (source, label,
    mode, area, ...) describe the paste and are not part of it. ``missing`` marks a verl failure that no
    entry covers yet: it counts as a positive the manual misses.
    """
    raw = path.read_bytes().decode("utf-8", errors="replace")
    first, _, rest = raw.partition("\n")
    if not first.startswith(EXPECT_PREFIX):
        raise ValueError(f"{path}:1: a labelled paste starts with '{EXPECT_PREFIX} <CODE>' or '{EXPECT_PREFIX} none'")
    while HEADER_RE.match(rest):
        rest = rest.partition("\n")[2]
    return first[len(EXPECT_PREFIX):].strip(), rest


def evaluate(manual: LocalManual, folder: Path) -> EvalReport:
    """Diagnose every labelled paste in ``folder`` and score top-1 / top-3 and negatives."""
    cases = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
        expect, text = read_labelled(path)
        diagnosis = manual.matcher.diagnose(text, limit=5)
        got = [match.code for match in diagnosis.matches if match.confidence in CONFIDENT]
        cases.append(Case(path, expect, got, [match.code for match in diagnosis.matches]))
    return EvalReport(cases)
