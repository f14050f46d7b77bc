"""Writes of the insights tables: counters added by one upsert each, reports one per voter, expiry."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, func
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, select

from app.insights.fingerprint import Fingerprint
from app.store.tables import FingerprintRow, FingerprintVersion, MatchFeedback, SearchRecord, utcnow

QUERY_CHARS = 200


@dataclass
class Tally:
    """Counts gathered in memory since the last write, so a burst of requests costs one transaction."""

    fingerprints: dict[str, tuple[Fingerprint, int, int]] = field(default_factory=dict)  # id -> (fp, seen, missed)
    versions: dict[tuple[str, str], int] = field(default_factory=dict)
    searches: dict[str, list[int]] = field(default_factory=dict)  # query -> [count, empty, shown, last hits]
    opened: dict[str, int] = field(default_factory=dict)

    def fingerprint(self, fingerprint: Fingerprint, missed: bool) -> None:
        _fp, seen, misses = self.fingerprints.get(fingerprint.id, (fingerprint, 0, 0))
        self.fingerprints[fingerprint.id] = (fingerprint, seen + 1, misses + int(missed))
        if fingerprint.verl_version:
            key = (fingerprint.id, fingerprint.verl_version)
            self.versions[key] = self.versions.get(key, 0) + 1

    def search(self, query: str, hits: int, on_page: bool) -> None:
        row = self.searches.setdefault(query, [0, 0, 0, 0])
        row[0] += 1
        row[1] += hits == 0
        row[2] += bool(on_page and hits)
        row[3] = hits

    def open(self, query: str) -> None:
        self.opened[query] = self.opened.get(query, 0) + 1

    def __bool__(self) -> bool:
        return bool(self.fingerprints or self.searches or self.opened)


def _insert(session: Session):
    return pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert


def write_tally(*, session: Session, tally: Tally, now: datetime | None = None) -> None:
    """Add a tally to the stored counters; keys in sorted order, so replicas writing at once never deadlock."""
    now = now or utcnow()
    insert = _insert(session)
    for fp_id in sorted(tally.fingerprints):
        fingerprint, seen, missed = tally.fingerprints[fp_id]
        statement = insert(FingerprintRow).values(
            id=fp_id,
            exception=fingerprint.exception,
            template=fingerprint.template,
            frame=fingerprint.frame,
            seen=seen,
            missed=missed,
            first_seen=now,
            last_seen=now,
        )
        session.exec(
            statement.on_conflict_do_update(
                index_elements=["id"],
                set_={
                    "seen": FingerprintRow.seen + statement.excluded.seen,
                    "missed": FingerprintRow.missed + statement.excluded.missed,
                    "last_seen": now,
                },
            )
        )
    for fp_id, version in sorted(tally.versions):
        statement = insert(FingerprintVersion).values(
            fingerprint=fp_id, verl_version=version, count=tally.versions[(fp_id, version)]
        )
        session.exec(
            statement.on_conflict_do_update(
                index_elements=["fingerprint", "verl_version"],
                set_={"count": FingerprintVersion.count + statement.excluded.count},
            )
        )
    for query in sorted(tally.searches):
        count, empty, shown, hits = tally.searches[query]
        statement = insert(SearchRecord).values(
            query=query, count=count, empty=empty, shown=shown, opened=0, last_hits=hits, first_seen=now, last_seen=now
        )
        session.exec(
            statement.on_conflict_do_update(
                index_elements=["query"],
                set_={
                    "count": SearchRecord.count + statement.excluded.count,
                    "empty": SearchRecord.empty + statement.excluded.empty,
                    "shown": SearchRecord.shown + statement.excluded.shown,
                    "last_hits": statement.excluded.last_hits,
                    "last_seen": now,
                },
            )
        )
    for query in sorted(tally.opened):
        # only a search that was recorded can be opened: a link made up by hand adds nothing
        row = session.get(SearchRecord, query)
        if row is not None:
            row.opened = min(row.shown, row.opened + tally.opened[query])
            session.add(row)


def record_feedback(
    *, session: Session, code: str, fingerprint: str, right: bool, voter: str, ip_hash: str | None
) -> None:
    """Store a voter's word on a match; saying it again replaces the first (one atomic upsert)."""
    now = utcnow()
    statement = _insert(session)(MatchFeedback).values(
        code=code, fingerprint=fingerprint, right=right, voter=voter, ip_hash=ip_hash, created_at=now, updated_at=now
    )
    session.exec(
        statement.on_conflict_do_update(
            index_elements=["code", "fingerprint", "voter"],
            set_={"right": statement.excluded.right, "ip_hash": statement.excluded.ip_hash, "updated_at": now},
        )
    )


def feedback_in_window(*, session: Session, since: datetime, voter: str, ip_hash: str | None) -> tuple[int, int]:
    """Reports given or changed since ``since`` by this voter and from this address (all replicas see them)."""

    def count(*where) -> int:
        return int(session.exec(select(func.count()).select_from(MatchFeedback).where(*where)).one())

    by_ip = count(MatchFeedback.ip_hash == ip_hash, MatchFeedback.updated_at >= since) if ip_hash else 0
    return count(MatchFeedback.voter == voter, MatchFeedback.updated_at >= since), by_ip


def purge_expired(*, session: Session, before: datetime) -> int:
    """Delete what was last seen before ``before``; return how many rows went."""
    removed = 0
    for statement in (
        delete(FingerprintRow).where(FingerprintRow.last_seen < before),
        delete(FingerprintVersion).where(FingerprintVersion.fingerprint.not_in(select(FingerprintRow.id))),
        delete(SearchRecord).where(SearchRecord.last_seen < before),
        delete(MatchFeedback).where(MatchFeedback.updated_at < before),
    ):
        removed += session.exec(statement).rowcount or 0
    return removed


def fingerprint_row(*, session: Session, fingerprint_id: str) -> FingerprintRow | None:
    return session.get(FingerprintRow, fingerprint_id)
