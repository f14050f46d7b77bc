"""What a running server holds: the current Manual (one generation), swapped whole when the index changes."""

from __future__ import annotations

import logging
import threading

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.entries import ContentError
from app.manual import Manual, Resources
from app.search import index as search_index
from app.settings import Settings

log = logging.getLogger("kb")


class ServerState:
    """Holds the Manual being served and swaps in a new one when `kb index` builds a new generation; a request
    reads the one it started with from start to end."""

    def __init__(self, settings: Settings, engine: Engine):
        self.settings = settings
        self.engine = engine
        self.resources = Resources.for_server(settings, engine)
        self.manual: Manual | None = None
        self.error: str | None = None
        self._lock = threading.Lock()

    @property
    def secret(self) -> str:
        return self.resources.ballot.secret

    @property
    def recorder(self):
        return self.resources.recorder

    def load(self) -> None:
        """Open the served generation; keep the old Manual on failure."""
        with self._lock:
            try:
                manual = Manual.open(self.settings, resources=self.resources)
            except (FileNotFoundError, ContentError) as exc:
                self.error = str(exc).splitlines()[-1] if str(exc) else type(exc).__name__
                log.warning("content not loaded: %s", self.error)
                return
            self.manual = manual
            self.error = None

    def reload_if_changed(self) -> bool:
        """Load a newer index if `kb index` swapped one in; return True when a new Manual is served."""
        served = self.manual.content_hash if self.manual else None
        on_disk = search_index.current_hash(self.settings.data_dir)
        if on_disk is None or on_disk == served:
            return False
        self.load()
        return self.manual is not None and self.manual.content_hash != served

    def database_ready(self) -> bool:
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1 FROM vote LIMIT 1"))
            return True
        except Exception as exc:  # any driver error means "not ready", with the reason logged
            log.warning("database not ready: %s", exc)
            return False
