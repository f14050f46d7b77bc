"""One way to cast a vote or a "this is not my error" report, shared by the JSON API, the HTML forms and MCP."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from app.entries import Entry
from app.insights.store import feedback_in_window, record_feedback
from app.store.tables import utcnow
from app.votes import FixStats, fix_stats, record_vote, votes_in_window
from app.views import fix_data
from app.web.state import ServerState


class VoteRefused(Exception):
    """A vote that was not stored; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


def ip_hash(state: ServerState, client: str) -> str:
    return hmac.new(state.secret.encode(), f"ip:{client}".encode(), hashlib.sha256).hexdigest()[:32]


def _check_limits(state: ServerState, session: Session, *, voter: str, address: str, in_window) -> None:
    """Refuse with 429 past the vote rate, per voter and per address: in this process first, then across
    every replica through the database (``in_window`` counts what was stored since a time)."""
    count, window = state.settings.vote_rate()
    keys = (f"ip:{address}", f"voter:{voter}")
    if not state.vote_limiter.allow(*keys):
        raise VoteRefused(429, "too many votes; slow down", state.vote_limiter.retry_after(*keys))
    by_voter, by_ip = in_window(session=session, since=utcnow() - timedelta(seconds=window), voter=voter,
                                ip_hash=address)
    if by_voter >= count or by_ip >= count:
        raise VoteRefused(429, "too many votes; slow down", window)


def cast_vote(state: ServerState, session: Session, entry: Entry, fix_id: str, *, voter: str, client: str,
              worked: bool, comment: str | None = None, environment: dict | None = None) -> dict:
    """Check limits, store the vote, and return the fix with its new counts; raise VoteRefused otherwise."""
    fix = entry.fix(fix_id)
    if fix is None:
        raise VoteRefused(404, f"{entry.code} has no fix {fix_id!r}")
    address = ip_hash(state, client)
    try:
        _check_limits(state, session, voter=voter, address=address, in_window=votes_in_window)
        record_vote(session=session, code=entry.code, fix_id=fix_id, fix_hash=fix.content_hash, voter=voter,
                    worked=worked, comment=comment, environment=environment, ip_hash=address)
        session.commit()
        stats = fix_stats(session=session, codes=[entry.code]).get((entry.code, fix_id), FixStats())
    except SQLAlchemyError as exc:
        session.rollback()
        raise VoteRefused(503, f"the vote could not be stored ({type(exc).__name__}); nothing was saved, please retry") from exc
    return fix_data(entry, fix, stats, "en")


def give_match_feedback(state: ServerState, session: Session, entry: Entry, fingerprint: str, *, voter: str,
                        client: str, right: bool) -> dict:
    """Store whether ``entry`` was the right answer for the error ``fingerprint``, under the limits of votes."""
    if not state.settings.record_misses:
        raise VoteRefused(404, "match reports are off on this server (KB_RECORD_MISSES)")
    address = ip_hash(state, client)
    try:
        _check_limits(state, session, voter=voter, address=address, in_window=feedback_in_window)
        record_feedback(session=session, code=entry.code, fingerprint=fingerprint, right=right, voter=voter,
                        ip_hash=address)
        session.commit()
    except SQLAlchemyError as exc:
        session.rollback()
        raise VoteRefused(503, f"the report could not be stored ({type(exc).__name__}); please retry") from exc
    return {"code": entry.code, "fingerprint": fingerprint, "right": right, "recorded": True}
