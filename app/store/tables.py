"""Database tables. Alembic owns the schema: change these together with a migration."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


class VoteBase(SQLModel):
    code: str = Field(max_length=16, index=True)
    fix_id: str = Field(max_length=80)
    worked: bool
    comment: str | None = Field(default=None, max_length=500)
    verl_version: str | None = Field(default=None, max_length=40)
    vllm_version: str | None = Field(default=None, max_length=40)
    sglang_version: str | None = Field(default=None, max_length=40)
    backend: str | None = Field(default=None, max_length=20)
    gpu: str | None = Field(default=None, max_length=60)


class Vote(VoteBase, table=True):
    """One voter's verdict on one fix; voting again replaces it (unique per voter and fix)."""

    __tablename__ = "vote"
    __table_args__ = (
        UniqueConstraint("code", "fix_id", "voter", name="uq_vote_voter"),
        Index("ix_vote_voter_updated", "voter", "updated_at"),
        Index("ix_vote_ip_updated", "ip_hash", "updated_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    voter: str = Field(max_length=64)
    fix_hash: str = Field(max_length=16)
    # keyed hash of the client address: rate limits hold across replicas without storing the IP
    ip_hash: str | None = Field(default=None, max_length=32)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class FingerprintRow(SQLModel, table=True):
    """One kind of error the manual was asked about (app.insights.fingerprint), never the paste itself."""

    __tablename__ = "fingerprint"

    id: str = Field(primary_key=True, max_length=16)
    exception: str = Field(max_length=120)
    template: str = Field(max_length=300)
    frame: str | None = Field(default=None, max_length=200)
    seen: int = 0  # diagnoses that were about this error
    missed: int = 0  # of those, the ones the manual had no answer for
    first_seen: datetime = Field(default_factory=utcnow)
    last_seen: datetime = Field(default_factory=utcnow, index=True)


class FingerprintVersion(SQLModel, table=True):
    """How often a fingerprint came from logs that name each verl release."""

    __tablename__ = "fingerprint_version"

    fingerprint: str = Field(primary_key=True, max_length=16)
    verl_version: str = Field(primary_key=True, max_length=40)
    count: int = 0


class SearchRecord(SQLModel, table=True):
    """A submitted search (scrubbed like fingerprints), how often it found nothing, whether results were opened."""

    __tablename__ = "search_record"

    query: str = Field(primary_key=True, max_length=200)
    count: int = 0
    empty: int = 0  # searches that found nothing
    shown: int = 0  # searches on the search page that listed results
    opened: int = 0  # results opened from that page
    last_hits: int = 0
    first_seen: datetime = Field(default_factory=utcnow)
    last_seen: datetime = Field(default_factory=utcnow, index=True)


class MatchFeedback(SQLModel, table=True):
    """One voter's word on whether the entry shown for an error was the right one; a second replaces it."""

    __tablename__ = "match_feedback"
    __table_args__ = (
        UniqueConstraint("code", "fingerprint", "voter", name="uq_match_feedback_voter"),
        Index("ix_match_feedback_voter_updated", "voter", "updated_at"),
        Index("ix_match_feedback_ip_updated", "ip_hash", "updated_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(max_length=16, index=True)
    fingerprint: str = Field(max_length=16)
    right: bool
    voter: str = Field(max_length=64)
    ip_hash: str | None = Field(default=None, max_length=32)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
