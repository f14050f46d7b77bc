"""What a running server holds: the catalog, its matcher and search index, the database engine."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.entries import Catalog, ContentError, load_catalog_strict
from app.findings import Findings
from app.insights.recorder import Recorder
from app.lru import LRU
from app.matcher import Diagnosis, Matcher
from app.ocr import ImageReader
from app.ratelimit import RateLimiter
from app.search import index as search_index
from app.search.query import SearchService
from app.settings import Settings
from app.views import UrlFor, match_data, match_stats
from app.votes import EntryVotes, entry_votes

log = logging.getLogger("kb")
PAGE_CACHE_SIZE = 1024  # rendered pages and entry JSON kept per generation (about 20 KB each)


@dataclass(frozen=True)
class Snapshot:
    """One consistent generation of content: a request reads one snapshot from start to end."""

    catalog: Catalog
    matcher: Matcher
    search: SearchService
    content_hash: str
    pages: LRU[str | bytes] = field(default_factory=lambda: LRU(PAGE_CACHE_SIZE))  # rendered once per generation


class ServerState:
    """Holds the current snapshot and swaps in a new one when the index on disk changes."""

    def __init__(self, settings: Settings, engine: Engine):
        self.settings = settings
        self.engine = engine
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self.secret = settings.resolved_secret()
        self.vote_limiter = RateLimiter(*settings.vote_rate())
        self.findings = Findings.from_settings(settings)
        self.findings.warm()  # the pinned release's layout and message templates: the first paste waits for none
        self.recorder = Recorder(engine, enabled=settings.record_misses, retention_days=settings.insights_retention_days)
        self.images = ImageReader.from_settings(settings)  # the OCR models load on the first image
        self._lock = threading.Lock()

    def load(self) -> None:
        """Open the served build (index and the entries it was built from); keep the old snapshot on failure."""
        with self._lock:
            try:
                generation = search_index.open_generation(self.settings.data_dir)
                catalog = load_catalog_strict(generation.content_dir)
            except (FileNotFoundError, ContentError) as exc:
                self.error = str(exc).splitlines()[-1] if str(exc) else type(exc).__name__
                log.warning("content not loaded: %s", self.error)
                return
            search = SearchService(generation, cache_size=self.settings.search_cache_size)
            self.snapshot = Snapshot(catalog, Matcher(catalog, fulltext=search.fulltext), search, generation.content_hash)
            self.error = None

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A database session for one unit of work, opened and closed in the calling thread.

        Never hold one across an ``await`` or hand it to another thread to close: a connection that only
        a queued task can return is how a burst of requests once froze the whole server.
        """
        with Session(self.engine) as session:
            yield session

    def entry_votes(self, code: str) -> EntryVotes:
        """The votes an entry page shows: blocking, call it from a worker thread."""
        with self.session() as session:
            return entry_votes(session=session, code=code)

    def diagnose(self, snapshot: Snapshot, text: str, limit: int, lang: str,
                 url_for: UrlFor) -> tuple[Diagnosis, dict]:
        """Match a paste and add the vote counts of what it names: blocking work, run it in a worker thread.
        Its fingerprint is queued for the insights after the match (never the paste; see app.insights)."""
        diagnosis = snapshot.matcher.diagnose(text, limit)
        with self.session() as session:
            stats = match_stats(diagnosis, session)
        data = match_data(diagnosis, snapshot.catalog, stats, lang, url_for, self.findings)
        self.recorder.diagnosed(diagnosis)
        return diagnosis, data

    def diagnose_image(self, snapshot: Snapshot, image: bytes, limit: int, lang: str,
                       url_for: UrlFor) -> tuple[Diagnosis, dict]:
        """Read a screenshot and match its text; the answer carries the text read (``ocr_text``) so the user
        can correct a misread character. Raises ImageRejected. Blocking: run it in a worker thread."""
        read = self.images.read(image)
        diagnosis, data = self.diagnose(snapshot, read.text, limit, lang, url_for)
        return diagnosis, {**data, "ocr_text": read.text, "ocr_ms": round(read.took_ms, 1)}

    def reload_if_changed(self) -> bool:
        """Load a newer index if `kb index` swapped one in; return True when a new snapshot is served."""
        served = self.snapshot.content_hash if self.snapshot else None
        on_disk = search_index.current_hash(self.settings.data_dir)
        if on_disk is None or on_disk == served:
            return False
        self.load()
        return self.snapshot is not None and self.snapshot.content_hash != served

    def database_ready(self) -> bool:
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1 FROM vote LIMIT 1"))
            return True
        except Exception as exc:  # any driver error means "not ready", with the reason logged
            log.warning("database not ready: %s", exc)
            return False
