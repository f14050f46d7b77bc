"""The maintainer's commands' database work: `kb insights` reports (after expiry), `kb new` reads a fingerprint."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import Session

from app.entries import Catalog
from app.insights.fingerprint import ID_RE
from app.insights.report import insights_data
from app.insights.store import fingerprint_row, purge_expired
from app.settings import Settings
from app.store.db import make_engine, migrate, session_scope
from app.store.tables import FingerprintRow, utcnow


def report(settings: Settings, catalog: Catalog, *, top: int) -> dict:
    """Delete what outlived the retention period, then report what is left."""
    engine = make_engine(settings)
    try:
        migrate(engine, settings)
        with session_scope(engine) as session:
            purge_expired(session=session, before=utcnow() - timedelta(days=settings.insights_retention_days))
        with Session(engine) as session:
            return insights_data(session=session, catalog=catalog, top=top)
    finally:
        engine.dispose()


def stored_fingerprint(settings: Settings, fingerprint_id: str) -> FingerprintRow | None:
    """The recorded fingerprint with this id, or None."""
    if not ID_RE.match(fingerprint_id):
        return None
    engine = make_engine(settings)
    try:
        migrate(engine, settings)
        with Session(engine) as session:
            return fingerprint_row(session=session, fingerprint_id=fingerprint_id)
    finally:
        engine.dispose()
