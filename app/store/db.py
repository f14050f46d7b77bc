"""Engines, sessions and migrations for SQLite (default) and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

from app.settings import ROOT, Settings

SQLITE_BUSY_TIMEOUT_MS = 10_000
MIGRATION_LOCK_ID = 7_140_311  # any constant: serialises migrations of replicas starting together


SPARE_CONNECTIONS = 4  # for /healthz probes, which bypass the request limit (an abandoned one may hold its own a while)


def make_engine(settings: Settings) -> Engine:
    """Create the engine; SQLite gets WAL, a busy timeout and foreign keys on every connection.

    The pool holds a connection for every request the server works on at once (``max_concurrent_requests``)
    plus a few spare, so a request admitted to work never waits for a connection; if one ever does, it
    gives up after the queue timeout (503) instead of waiting 30 s.
    """
    url = settings.sqlalchemy_url
    pool = {
        "pool_size": settings.max_concurrent_requests + SPARE_CONNECTIONS,
        "max_overflow": SPARE_CONNECTIONS,
        "pool_timeout": settings.queue_timeout,
    }
    if url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **pool
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, **pool)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def alembic_config(settings: Settings):
    # alembic is imported here, not at module level: `kb match` reads votes but never migrates,
    # and alembic's import costs it a fifth of a second.
    from alembic.config import Config

    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "alembic"))
    config.attributes["settings"] = settings
    return config


def migrate(engine: Engine, settings: Settings) -> None:
    """Upgrade the schema to head; replicas on one PostgreSQL take turns under an advisory lock."""
    config = alembic_config(settings)
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        config.attributes["connection"] = connection
        from alembic import command

        command.upgrade(config, "head")


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    with Session(engine) as session:
        try:
            yield session
            session.commit()
        except Exception:
            session.rollback()
            raise
