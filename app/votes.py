"""Votes on fixes: one per voter and fix, aggregated into success rates that order the fixes."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, select

from app.entries import Entry, Fix
from app.store.tables import Vote, utcnow

Z_95 = 1.959964
ENVIRONMENT_FIELDS = ("verl_version", "vllm_version", "sglang_version", "backend", "gpu")
RECENT_COMMENTS = 5
DEAD_END_MIN_VOTES = 5
DEAD_END_MAX_RATE = 0.25


@dataclass(frozen=True)
class FixStats:
    votes_up: int = 0
    votes_down: int = 0

    @property
    def total(self) -> int:
        return self.votes_up + self.votes_down

    @property
    def success_rate(self) -> float | None:
        return round(self.votes_up / self.total, 4) if self.total else None

    @property
    def wilson(self) -> float:
        return round(wilson_lower_bound(self.votes_up, self.total), 4)

    @property
    def voted_dead_end(self) -> bool:
        """Enough people say it did not work."""
        return self.total >= DEAD_END_MIN_VOTES and self.votes_up / self.total <= DEAD_END_MAX_RATE


def wilson_lower_bound(positive: int, total: int, z: float = Z_95) -> float:
    """Lower bound of the Wilson score interval: 1 of 1 ranks below 40 of 45."""
    if total == 0:
        return 0.0
    phat = positive / total
    denominator = 1 + z * z / total
    centre = phat + z * z / (2 * total)
    margin = z * math.sqrt((phat * (1 - phat) + z * z / (4 * total)) / total)
    return (centre - margin) / denominator


def fix_stats(*, session: Session, codes: list[str] | None = None) -> dict[tuple[str, str], FixStats]:
    """Return (code, fix id) -> vote counts, for some entries or all."""
    statement = select(
        Vote.code,
        Vote.fix_id,
        func.sum(case((Vote.worked, 1), else_=0)),
        func.sum(case((Vote.worked, 0), else_=1)),
    ).group_by(Vote.code, Vote.fix_id)
    if codes is not None:
        statement = statement.where(Vote.code.in_(codes))
    return {
        (code, fix_id): FixStats(int(up or 0), int(down or 0)) for code, fix_id, up, down in session.exec(statement)
    }


class VoteCountCache:
    """All fixes' vote counts, and each entry's votes as its page shows them, read at most once per ``ttl``
    seconds for the whole process.

    Every diagnosis shows the counts of the entries it names; one aggregate query per paste was a sixth of a
    busy server's time, and one per entry page 28% of it. Counts a few hundred milliseconds old change no ranking a
    reader could notice, and a vote cast here invalidates the snapshot at once, so a voter always sees their own
    vote counted.
    """

    def __init__(self, ttl: float):
        self.ttl = ttl
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], FixStats] | None = None
        self._read_at = 0.0
        self._entries: dict[str, tuple[float, EntryVotes]] = {}  # code -> (read at, votes); codes of the catalog

    def get(self, read_all: Callable[[], dict[tuple[str, str], FixStats]]) -> dict[tuple[str, str], FixStats]:
        with self._lock:  # one reader refreshes; the others wait for it rather than all querying at once
            if self._counts is None or time.monotonic() - self._read_at >= self.ttl:
                self._counts = read_all()
                self._read_at = time.monotonic()
            return self._counts

    def entry(self, code: str, read: Callable[[], EntryVotes]) -> EntryVotes:
        """One entry's votes, read again when older than ``ttl``; read outside the lock, so pages of other
        entries never wait for it (two readers of one stale entry may both query, once)."""
        with self._lock:
            found = self._entries.get(code)
        if found is not None and time.monotonic() - found[0] < self.ttl:
            return found[1]
        votes = read()
        with self._lock:
            self._entries[code] = (time.monotonic(), votes)
        return votes

    def invalidate(self) -> None:
        with self._lock:
            self._counts = None
            self._entries.clear()


def ranked_fixes(entry: Entry, stats: dict[tuple[str, str], FixStats]) -> list[tuple[Fix, FixStats]]:
    """Order an entry's fixes: working ones by Wilson lower bound, dead ends last, ties by written order."""
    rows = [(fix, stats.get((entry.code, fix.id), FixStats())) for fix in entry.fixes]
    order = {fix.id: position for position, fix in enumerate(entry.fixes)}
    return sorted(
        rows,
        key=lambda row: (
            row[0].dead_end or row[1].voted_dead_end,
            -row[1].wilson,
            order[row[0].id],
        ),
    )


def record_vote(
    *,
    session: Session,
    code: str,
    fix_id: str,
    fix_hash: str,
    voter: str,
    worked: bool,
    comment: str | None = None,
    environment: dict | None = None,
    ip_hash: str | None = None,
) -> None:
    """Store a vote; a voter's second vote on the same fix replaces the first (one atomic upsert)."""
    now = utcnow()
    values = {
        "code": code,
        "fix_id": fix_id,
        "voter": voter,
        "worked": worked,
        "fix_hash": fix_hash,
        "comment": comment or None,
        "created_at": now,
        "updated_at": now,
        "ip_hash": ip_hash,
        **{key: environment.get(key) for key in ENVIRONMENT_FIELDS if environment},
    }
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    statement = insert(Vote).values(**values)
    replaced = {key: statement.excluded[key] for key in values if key not in ("code", "fix_id", "voter", "created_at")}
    session.exec(statement.on_conflict_do_update(index_elements=["code", "fix_id", "voter"], set_=replaced))


def votes_in_window(*, session: Session, since: datetime, voter: str, ip_hash: str | None) -> tuple[int, int]:
    """Votes cast or changed since ``since`` by this voter and from this address (all replicas see them)."""
    by_voter = session.exec(
        select(func.count()).select_from(Vote).where(Vote.voter == voter, Vote.updated_at >= since)
    ).one()
    by_ip = 0
    if ip_hash:
        by_ip = session.exec(
            select(func.count()).select_from(Vote).where(Vote.ip_hash == ip_hash, Vote.updated_at >= since)
        ).one()
    return int(by_voter), int(by_ip)


@dataclass(frozen=True)
class EntryVotes:
    """What one entry's page shows of its votes: counts per fix, per environment a voter named, comments."""

    stats: dict[tuple[str, str], FixStats]
    environments: dict[str, dict[str, dict[str, dict[str, int]]]]  # fix id -> field -> value -> {"up", "down"}
    comments: dict[str, list[dict]]  # fix id -> newest comments

    @property
    def key(self) -> str:
        """Equal for equal votes: with the content, it decides what an entry page shows."""
        stats = sorted((fix_id, s.votes_up, s.votes_down) for (_code, fix_id), s in self.stats.items())
        return json.dumps([stats, self.environments, self.comments], sort_keys=True)


def entry_votes(*, session: Session, code: str) -> EntryVotes:
    """Counts and environment breakdown of one entry's votes from one query on the indexed code; the
    comments from a second, only when there are votes at all."""
    columns = [getattr(Vote, name) for name in ENVIRONMENT_FIELDS]
    statement = (
        select(Vote.fix_id, Vote.worked, *columns, func.count())
        .where(Vote.code == code)
        .group_by(Vote.fix_id, Vote.worked, *columns)
    )
    counts: dict[str, list[int]] = {}
    environments: dict = {}
    for fix_id, worked, *values, count in session.exec(statement):
        counts.setdefault(fix_id, [0, 0])[0 if worked else 1] += count
        for name, value in zip(ENVIRONMENT_FIELDS, values, strict=True):
            if value is not None:
                tally = environments.setdefault(fix_id, {}).setdefault(name, {}).setdefault(value, {"up": 0, "down": 0})
                tally["up" if worked else "down"] += count
    stats = {(code, fix_id): FixStats(up, down) for fix_id, (up, down) in counts.items()}
    return EntryVotes(stats, environments, recent_comments(session=session, code=code) if stats else {})


def recent_comments(*, session: Session, code: str, limit: int = RECENT_COMMENTS) -> dict[str, list[dict]]:
    """fix id -> the newest comments (plain text; templates escape them)."""
    statement = (
        select(Vote.fix_id, Vote.worked, Vote.comment, Vote.updated_at)
        .where(Vote.code == code, Vote.comment.is_not(None))
        .order_by(Vote.updated_at.desc())
        .limit(limit * 10)
    )
    comments: dict[str, list[dict]] = {}
    for fix_id, worked, comment, when in session.exec(statement):
        bucket = comments.setdefault(fix_id, [])
        if len(bucket) < limit:
            bucket.append({"worked": worked, "comment": comment, "at": when.isoformat() if when else None})
    return comments


def export_rows(*, session: Session):
    """Every vote, oldest first, without voter ids or address hashes."""
    columns = (
        Vote.code,
        Vote.fix_id,
        Vote.worked,
        Vote.comment,
        *(getattr(Vote, f) for f in ENVIRONMENT_FIELDS),
        Vote.fix_hash,
        Vote.created_at,
        Vote.updated_at,
    )
    yield [column.key for column in columns]
    yield from session.exec(select(*columns).order_by(Vote.id))


@dataclass(frozen=True)
class VotesReport:
    failing: list[tuple[str, str, FixStats]]  # (code, fix id, stats): most "did not work" first
    unsolved: list[str]  # entries whose fixes all have votes and none works for most voters


def votes_report(catalog, stats: dict[tuple[str, str], FixStats], *, top: int = 20) -> VotesReport:
    """Fixes that fail most, and entries that have no working fix yet."""
    failing = sorted(
        ((code, fix_id, stat) for (code, fix_id), stat in stats.items() if stat.votes_down and code in catalog),
        key=lambda row: (-row[2].votes_down, row[2].wilson, row[0], row[1]),
    )[:top]
    unsolved = []
    for entry in catalog:
        entry_stats = [stats.get((entry.code, fix.id)) for fix in entry.fixes]
        voted = [stat for stat in entry_stats if stat and stat.total]
        if voted and not any(stat.votes_up > stat.votes_down for stat in voted):
            unsolved.append(entry.code)
    return VotesReport(failing, unsolved)
