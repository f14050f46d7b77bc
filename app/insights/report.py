"""What maintainers see on `/insights`, in `GET /api/v1/insights` and `kb insights`: one plain dict."""

from __future__ import annotations

from sqlalchemy import case, func
from sqlmodel import Session, select

from app.entries import Catalog
from app.store.tables import FingerprintRow, FingerprintVersion, MatchFeedback, SearchRecord
from app.votes import fix_stats

TOP = 50


def new_entry_command(fingerprint_id: str) -> str:
    """The command that scaffolds an entry for a missed fingerprint."""
    return f"kb new --from-fingerprint {fingerprint_id}"


def insights_data(*, session: Session, catalog: Catalog, top: int = TOP) -> dict:
    """Misses, searches, wrong answers and failing fixes, each sorted by how many people they hit."""
    return {
        "misses": _misses(session, top),
        "searches": _searches(session, top),
        "wrong_answers": _wrong_answers(session, catalog, top),
        "failing_fixes": _failing_fixes(session, catalog, top),
    }


def _iso(moment) -> str:
    return moment.isoformat() if moment else ""


def _misses(session: Session, top: int) -> list[dict]:
    rows = session.exec(
        select(FingerprintRow)
        .where(FingerprintRow.missed > 0)
        .order_by(FingerprintRow.missed.desc(), FingerprintRow.last_seen.desc(), FingerprintRow.id)
        .limit(top)
    ).all()
    versions: dict[str, list[tuple[int, str]]] = {}
    if rows:
        statement = select(FingerprintVersion).where(FingerprintVersion.fingerprint.in_([row.id for row in rows]))
        for version in session.exec(statement):
            versions.setdefault(version.fingerprint, []).append((version.count, version.verl_version))
    return [
        {
            "fingerprint": row.id,
            "exception": row.exception,
            "template": row.template,
            "frame": row.frame,
            "count": row.missed,
            "seen": row.seen,
            "first_seen": _iso(row.first_seen),
            "last_seen": _iso(row.last_seen),
            "verl_versions": [name for _count, name in sorted(versions.get(row.id, []), key=lambda v: (-v[0], v[1]))],
            "command": new_entry_command(row.id),
        }
        for row in rows
    ]


def _searches(session: Session, top: int) -> list[dict]:
    """Searches that found nothing, then those whose results nobody opened from the search page."""
    empty = session.exec(
        select(SearchRecord)
        .where(SearchRecord.empty > 0)
        .order_by(SearchRecord.empty.desc(), SearchRecord.query)
        .limit(top)
    ).all()
    unopened = session.exec(
        select(SearchRecord)
        .where(SearchRecord.shown > SearchRecord.opened)
        .order_by((SearchRecord.shown - SearchRecord.opened).desc(), SearchRecord.query)
        .limit(top)
    ).all()
    rows = [{"query": row.query, "kind": "empty", "count": row.empty, "hits": 0, "opened": row.opened} for row in empty]
    rows += [
        {
            "query": row.query,
            "kind": "unopened",
            "count": row.shown - row.opened,
            "hits": row.last_hits,
            "opened": row.opened,
        }
        for row in unopened
    ]
    return sorted(rows, key=lambda row: (-row["count"], row["kind"], row["query"]))[:top]


def _wrong_answers(session: Session, catalog: Catalog, top: int) -> list[dict]:
    wrong = func.sum(case((MatchFeedback.right, 0), else_=1))
    right = func.sum(case((MatchFeedback.right, 1), else_=0))
    statement = (
        select(
            MatchFeedback.code,
            MatchFeedback.fingerprint,
            wrong,
            right,
            FingerprintRow.exception,
            FingerprintRow.template,
        )
        .join(FingerprintRow, FingerprintRow.id == MatchFeedback.fingerprint, isouter=True)
        .group_by(MatchFeedback.code, MatchFeedback.fingerprint, FingerprintRow.exception, FingerprintRow.template)
        .having(wrong > 0)
        .order_by(wrong.desc(), MatchFeedback.code, MatchFeedback.fingerprint)
        .limit(top)
    )
    rows = []
    for code, fingerprint, wrong_count, right_count, exception, template in session.exec(statement):
        entry = catalog.get(code)
        rows.append(
            {
                "code": code,
                "title": entry.meta.title if entry else None,
                "fingerprint": fingerprint,
                "count": int(wrong_count),
                "right": int(right_count or 0),
                "exception": exception,
                "template": template,
            }
        )
    return rows


def _failing_fixes(session: Session, catalog: Catalog, top: int) -> list[dict]:
    """Fixes whose "did not work" votes outweigh "worked"."""
    rows = []
    for (code, fix_id), stat in fix_stats(session=session).items():
        entry = catalog.get(code)
        fix = entry.fix(fix_id) if entry else None
        if fix is not None and stat.votes_down > stat.votes_up:
            rows.append(
                {
                    "code": code,
                    "fix_id": fix_id,
                    "title": fix.title,
                    "votes_up": stat.votes_up,
                    "votes_down": stat.votes_down,
                }
            )
    return sorted(rows, key=lambda row: (-row["votes_down"], row["votes_up"], row["code"], row["fix_id"]))[:top]
