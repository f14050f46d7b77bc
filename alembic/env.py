"""Alembic environment: URL from app settings, batch mode so SQLite can alter tables."""

from sqlalchemy import create_engine
from sqlmodel import SQLModel

import app.store.tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from alembic import context
from app.settings import Settings

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    settings = config.attributes.get("settings") or Settings()
    engine = create_engine(settings.sqlalchemy_url)
    with engine.begin() as connection:
        _run(connection)


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `kb index` against a database")
run_migrations_online()
