"""`kb eval`: score a Manual's matcher over folders of labelled pastes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from app.manual import Manual
from app.matcher import CONFIDENT

EXPECT_PREFIX = "# expect:"
HEADER_RE = re.compile(r"# [a-z_]+:")


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
        return (
            (not self.got)
            if self.expect == "none"
            else self.got[:1] == [self.expect] and self.shown[:1] == [self.expect]
        )

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
            "files": len(self.cases),
            "positives": len(self.positives),
            "negatives": len(self.negatives),
            "top1": round(self.rate("top1"), 4),
            "top3": round(self.rate("top3"), 4),
            "negatives_clean": self.negatives_clean,
            "failures": [
                {"file": case.path.name, "expect": case.expect, "got": case.got[:3], "shown": case.shown[:3]}
                for case in self.cases
                if not case.top1
            ],
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
    return first[len(EXPECT_PREFIX) :].strip(), rest


def evaluate(manual: Manual, folder: Path) -> EvalReport:
    """Diagnose every labelled paste in ``folder`` and score top-1 / top-3 and negatives; Markdown files
    beside them (how a sample was drawn) are notes, not pastes."""
    cases = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".") and p.suffix != ".md"):
        expect, text = read_labelled(path)
        diagnosis = manual.matcher.diagnose(text, limit=5)
        got = [match.code for match in diagnosis.matches if match.confidence in CONFIDENT]
        cases.append(Case(path, expect, got, [match.code for match in diagnosis.matches]))
    return EvalReport(cases)
