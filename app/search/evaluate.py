"""Score search against real issue titles, each labelled with the entries that answer its thread.

A title file is tab-separated with a header row; the columns used are `id`, `expect` (one or more entry
codes, space-separated: any of them is a right answer), `lang` and `title`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOP = 5


@dataclass(frozen=True)
class TitleCase:
    id: str
    title: str
    expect: frozenset[str]
    lang: str


@dataclass(frozen=True)
class TitleResult:
    case: TitleCase
    got: list[str]

    @property
    def rank(self) -> int | None:
        """1-based rank of the first right entry, or None when none is in the results."""
        return next((number for number, code in enumerate(self.got, 1) if code in self.case.expect), None)


def read_titles(path: Path) -> list[TitleCase]:
    """Read a title file; a row without an id, a title or an expected code is an error."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    cases = []
    for number, row in enumerate(rows, 2):
        expect = frozenset((row.get("expect") or "").split())
        if not row.get("id") or not row.get("title") or not expect:
            raise ValueError(f"{path}:{number}: a row needs an id, a title and at least one expected code")
        cases.append(TitleCase(row["id"], row["title"], expect, row.get("lang") or "en"))
    return cases


def run(search: Callable[..., Any], cases: list[TitleCase]) -> list[TitleResult]:
    """Search every title as a user would (their language, first page) and keep the top codes.

    ``search`` is what a front door calls (``Manual.search``, whose error-line queries lead with the entry a
    signature names) or the bare index's ``SearchService.search``."""
    return [
        TitleResult(case, [hit.code for hit in search(case.title, lang=case.lang, limit=TOP).hits]) for case in cases
    ]


def figures(results: list[TitleResult]) -> dict:
    """Top-1, top-5 and empty-result shares, overall and per language, with the misses listed."""

    def share(rows: list[TitleResult], test) -> float:
        return round(sum(1 for row in rows if test(row)) / len(rows), 3) if rows else 0.0

    def block(rows: list[TitleResult]) -> dict:
        return {
            "titles": len(rows),
            "top1": share(rows, lambda r: r.rank == 1),
            "top5": share(rows, lambda r: r.rank is not None),
            "empty": sum(1 for r in rows if not r.got),
        }

    return {
        **block(results),
        "by_lang": {
            lang: block([r for r in results if r.case.lang == lang]) for lang in sorted({r.case.lang for r in results})
        },
        "misses": [
            {"id": r.case.id, "title": r.case.title, "expect": sorted(r.case.expect), "got": r.got}
            for r in results
            if r.rank != 1
        ],
    }
