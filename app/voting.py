"""One way to cast a vote or a "this is not my error" report, for every front door: limits, storage, the answer."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from app import answers as a
from app.entries import Entry
from app.insights.store import feedback_in_window, record_feedback
from app.ratelimit import RateLimiter
from app.settings import Settings
from app.store.tables import utcnow
from app.views import fix_answer
from app.votes import FixStats, fix_stats, record_vote, votes_in_window


class Refused(Exception):
    """A request the manual did not carry out; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


class Moved(Refused):
    """The code was retired and its entry folded into ``now`` (``moved.tsv``): front doors redirect there."""

    def __init__(self, code: str, now: str):
        super().__init__(301, f"{code} was folded into {now}")
        self.code = code
        self.now = now


class Ballot:
    """The limits and the address hashing that votes and reports share (one per server process)."""

    def __init__(self, settings: Settings, secret: str):
        self.settings = settings
        self.secret = secret
        self.limiter = RateLimiter(*settings.vote_rate())

    def ip_hash(self, client: str) -> str:
        return hmac.new(self.secret.encode(), f"ip:{client}".encode(), hashlib.sha256).hexdigest()[:32]

    def check_limits(self, session: Session, *, voter: str, address: str, in_window) -> None:
        """Refuse with 429 past the vote rate, per voter and per address: in this process first, then across
        every replica through the database (``in_window`` counts what was stored since a time)."""
        count, window = self.settings.vote_rate()
        keys = (f"ip:{address}", f"voter:{voter}")
        if not self.limiter.allow(*keys):
            raise Refused(429, "too many votes; slow down", self.limiter.retry_after(*keys))
        by_voter, by_ip = in_window(
            session=session, since=utcnow() - timedelta(seconds=window), voter=voter, ip_hash=address
        )
        if by_voter >= count or by_ip >= count:
            raise Refused(429, "too many votes; slow down", window)

    def cast_vote(
        self,
        session: Session,
        entry: Entry,
        fix_id: str,
        *,
        voter: str,
        client: str,
        worked: bool,
        comment: str | None = None,
        environment: dict | None = None,
    ) -> a.FixOut:
        """Check limits, store the vote, and return the fix with its new counts; raise Refused otherwise."""
        fix = entry.fix(fix_id)
        if fix is None:
            raise Refused(404, f"{entry.code} has no fix {fix_id!r}")
        address = self.ip_hash(client)
        try:
            self.check_limits(session, voter=voter, address=address, in_window=votes_in_window)
            record_vote(
                session=session,
                code=entry.code,
                fix_id=fix_id,
                fix_hash=fix.content_hash,
                voter=voter,
                worked=worked,
                comment=comment,
                environment=environment,
                ip_hash=address,
            )
            session.commit()
            stats = fix_stats(session=session, codes=[entry.code]).get((entry.code, fix_id), FixStats())
        except SQLAlchemyError as exc:
            session.rollback()
            raise Refused(
                503, f"the vote could not be stored ({type(exc).__name__}); nothing was saved, please retry"
            ) from exc
        return fix_answer(entry, fix, stats, "en")

    def match_feedback(
        self, session: Session, entry: Entry, fingerprint: str, *, voter: str, client: str, right: bool
    ) -> a.FeedbackOut:
        """Store whether ``entry`` was the right answer for the error ``fingerprint``, under the limits of votes."""
        if not self.settings.record_misses:
            raise Refused(404, "match reports are off on this server (KB_RECORD_MISSES)")
        address = self.ip_hash(client)
        try:
            self.check_limits(session, voter=voter, address=address, in_window=feedback_in_window)
            record_feedback(
                session=session, code=entry.code, fingerprint=fingerprint, right=right, voter=voter, ip_hash=address
            )
            session.commit()
        except SQLAlchemyError as exc:
            session.rollback()
            raise Refused(503, f"the report could not be stored ({type(exc).__name__}); please retry") from exc
        return a.FeedbackOut(code=entry.code, fingerprint=fingerprint, right=right, recorded=True)
