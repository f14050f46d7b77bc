"""The manual as one service object: every front door (pages, JSON API, MCP tools, embeds, the `kb` command) parses
its input, makes one call on a ``Manual`` and renders the typed answer it gets back.

A ``Manual`` is one consistent generation: the catalog, the matcher and the search index built from that very
catalog, with the process's long-lived ``Resources`` (database engine, release facts, insights recorder, vote
limits, screenshot reader). The server swaps in a whole new ``Manual`` when `kb index` builds a new generation.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import cached_property
from typing import Literal

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from app import answers as a
from app.entries import Catalog, Entry, load_catalog_strict
from app.entry_markdown import entry_markdown
from app.findings import Findings
from app.insights.fingerprint import ID_RE
from app.insights.recorder import Recorder
from app.insights.report import TOP as INSIGHTS_TOP
from app.insights.report import insights_data
from app.insights.store import fingerprint_row, purge_expired
from app.lru import LRU
from app.matcher import CONFIDENT, Matcher
from app.matcher.normalise import normalise
from app.ocr import ImageReader
from app.search import index as search_index
from app.search.query import Hit, SearchResult, SearchService
from app.settings import Settings
from app.store.db import make_engine, migrate, session_scope
from app.store.tables import FingerprintRow, utcnow
from app.views import (
    browse_answer,
    categories_answer,
    entry_answer,
    home_answer,
    match_answer,
    pick,
    search_answer,
)
from app.votes import (
    EntryVotes,
    VoteCountCache,
    VotesReport,
    entry_votes,
    export_rows,
    fix_stats,
    ranked_fixes,
    votes_report,
)
from app.voting import Ballot, Moved, Refused

MAX_ERROR_QUERY = 2000  # longer text is a paste, not a search: the paste page answers it
MAX_CODE_QUERY = 16  # "AGENT-520" and a few spaces: longer text is no code
PAGE_CACHE_SIZE = 1024  # rendered pages, entry answers and their JSON kept per generation (about 20 KB each)
__all__ = ["Manual", "Moved", "Refused", "Resources"]


@dataclass
class Resources:
    """What a process opens once and every generation shares."""

    settings: Settings
    engine: Engine | None  # None: a checkout never indexed has no database to read votes from
    findings: Findings
    recorder: Recorder | None = None  # the server's insights; commands record nothing
    ballot: Ballot | None = None  # votes and reports: the server only
    images: ImageReader | None = None
    tolerant: bool = False  # a command answers without vote counts when the database cannot give them
    vote_counts: VoteCountCache | None = None  # the server's snapshot; commands read the table each time

    @classmethod
    def for_server(cls, settings: Settings, engine: Engine) -> Resources:
        findings = Findings.from_settings(settings)
        findings.warm()  # the pinned release's layout and message templates: the first paste waits for none
        return cls(
            settings,
            engine,
            findings,
            recorder=Recorder(engine, enabled=settings.record_misses, retention_days=settings.insights_retention_days),
            ballot=Ballot(settings, settings.resolved_secret()),
            images=ImageReader.from_settings(settings),  # the OCR models load on the first image
            vote_counts=VoteCountCache(settings.vote_counts_ttl) if settings.vote_counts_ttl else None,
        )

    @classmethod
    def for_command(cls, settings: Settings) -> Resources:
        has_database = settings.database_url or (settings.data_dir / "kb.sqlite3").exists()
        engine = make_engine(settings) if has_database else None  # no file is created for a one-shot command
        return cls(settings, engine, Findings.from_settings(settings), tolerant=True)

    @classmethod
    def for_records(cls, settings: Settings) -> Resources:
        """The maintainers' commands read and prune what the server stored: the database must be there (it is
        created and migrated when missing) and a failing read is said, not hidden."""
        engine = make_engine(settings)
        migrate(engine, settings)
        return cls(settings, engine, Findings.from_settings(settings))


class Manual:
    """One generation of the manual and everything asked of it."""

    def __init__(
        self,
        resources: Resources,
        catalog: Catalog,
        index: SearchService | None,
        content_hash: str,
        *,
        notice: str | None = None,
        rebuilt: bool = False,
    ):
        self.resources = resources
        self.settings = resources.settings
        self.catalog = catalog
        self.index = index
        self.content_hash = content_hash
        self.notice = notice  # what this generation lacks (full-text suggestions), said to the user
        self.rebuilt = rebuilt  # the index was rebuilt to match the checkout
        self.pages: LRU = LRU(PAGE_CACHE_SIZE)

    @classmethod
    def open(cls, settings: Settings, *, resources: Resources | None = None, fresh: bool = False) -> Manual:
        """Open the generation the index folder points to, with the entries it was built from.

        ``fresh`` (the `kb` commands): first make that index match the checkout's entries, rebuilding it as
        `kb index` would; where that fails, open without full-text search and say so in ``notice``. An index
        built from an older copy names entries that are gone, and none at all loses the suggestions.
        Raises ContentError (content that does not load) and FileNotFoundError (no index, not ``fresh``).
        """
        notice, rebuilt, catalog, generation = None, False, None, None
        if fresh:
            catalog = load_catalog_strict(settings.content_dir)
            if search_index.current_hash(settings.data_dir) != search_index.build_hash(catalog):
                notice, rebuilt = _rebuild(settings)
            if notice is None:
                generation = _open_or_none(settings)
                if generation is None and not rebuilt:  # a damaged build: built anew, like a stale one
                    notice, rebuilt = _rebuild(settings, force=True)
        if notice is None:
            generation = generation or search_index.open_generation(settings.data_dir)
            if catalog is None or generation.content_hash != search_index.build_hash(catalog):
                catalog = load_catalog_strict(generation.content_dir)
        index = SearchService(generation, cache_size=settings.search_cache_size) if notice is None else None
        content_hash = index.content_hash if index else search_index.build_hash(catalog)
        manual = cls(
            resources or Resources.for_command(settings), catalog, index, content_hash, notice=notice, rebuilt=rebuilt
        )
        manual.matcher  # noqa: B018 (compiled now, so no paste waits for it and no two threads build it)
        return manual

    @classmethod
    def open_records(cls, settings: Settings, *, catalog: Catalog | None = None) -> Manual:
        """The checkout's entries (or ``catalog``: `kb new` reads them leniently, a draft being half written) and
        the database, without the search index: what `kb votes`, `kb insights` and `kb new` need, so they neither
        build an index nor wait for one. Call ``close`` when done."""
        catalog = catalog if catalog is not None else load_catalog_strict(settings.content_dir)
        return cls(Resources.for_records(settings), catalog, None, search_index.build_hash(catalog))

    def close(self) -> None:
        """Return the database connections (a command's manual; the server's engine outlives its manuals)."""
        if self.resources.engine is not None:
            self.resources.engine.dispose()

    # plumbing shared by the calls below

    @cached_property
    def matcher(self) -> Matcher:
        """Built on first use: the records commands never diagnose, and compiling every signature costs ~0.5 s."""
        return Matcher(
            self.catalog,
            fulltext=self.index.fulltext if self.index else None,
            statements=self.resources.findings.raised_statement,
        )

    @property
    def findings(self) -> Findings:
        return self.resources.findings

    @property
    def recorder(self) -> Recorder | None:
        return self.resources.recorder

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A database session for one unit of work, opened and closed in the calling thread.

        Never hold one across an ``await`` or hand it to another thread to close: a connection that only
        a queued task can return is how a burst of requests once froze the whole server.
        """
        with Session(self.resources.engine) as session:
            yield session

    def _fix_stats(self, codes: list[str] | None = None) -> dict:
        if self.resources.engine is None or codes == []:
            return {}
        try:
            if self.resources.vote_counts is not None:
                counts = self.resources.vote_counts.get(self._all_fix_stats)
                if codes is None:
                    return counts
                wanted = set(codes)
                return {key: stat for key, stat in counts.items() if key[0] in wanted}
            with self.session() as session:
                return fix_stats(session=session, codes=codes)
        except SQLAlchemyError:
            if not self.resources.tolerant:
                raise
            return {}  # a database without the vote table yet: the same answer, no counts

    def _all_fix_stats(self) -> dict:
        with self.session() as session:
            return fix_stats(session=session)

    def _counted(self) -> None:
        """A vote or report was stored here: the next answer reads the counts again."""
        if self.resources.vote_counts is not None:
            self.resources.vote_counts.invalidate()

    def _base(self, base: str | None) -> str:
        return base or self.settings.base_url

    def get(self, code: str) -> Entry:
        """The entry with this code; Moved when the code was folded into another entry, else Refused(404)."""
        entry = self.catalog.get(code)
        if entry is None:
            now = self.catalog.moved_to(code)
            if now:
                raise Moved(code.upper(), now)
            raise Refused(404, f"no entry with code {code!r}")
        return entry

    def cached(self, key: tuple, make):
        """What ``make()`` returns, made once per ``key`` in this generation (rendered pages, encoded JSON)."""
        value = self.pages.get(key)
        if value is None:
            value = make()
            self.pages.put(key, value)
        return value

    # the calls

    def match(
        self, text: str | bytes, *, limit: int = 5, lang: str = "en", base: str | None = None, context: int = 0
    ) -> a.MatchResponse:
        """Diagnose a paste; its fingerprint goes to the insights (never the paste; see app.insights). Blocking."""
        diagnosis = self.matcher.diagnose(text, limit)
        stats = self._fix_stats([match.code for match in diagnosis.matches])
        answer = match_answer(diagnosis, self.catalog, stats, lang, self._base(base), self.findings, context=context)
        if self.recorder is not None:
            self.recorder.diagnosed(diagnosis)
        return answer

    def match_image(
        self, image: bytes, *, limit: int = 5, lang: str = "en", base: str | None = None, context: int = 0
    ) -> a.MatchResponse:
        """Read a screenshot and diagnose its text; the answer carries the text read (``ocr_text``) so the user
        can correct a misread character. Raises ImageRejected. Blocking."""
        read = self.resources.images.read(image)
        answer = self.match(read.text, limit=limit, lang=lang, base=base, context=context)
        return answer.model_copy(update={"ocr_text": read.text, "ocr_ms": round(read.took_ms, 1)})

    def search(
        self,
        query: str,
        *,
        category: str | None = None,
        lang: str = "en",
        limit: int = 10,
        page: int = 1,
        base: str | None = None,
        record: Literal["api", "page"] | None = None,
    ) -> a.SearchOut:
        """Full-text search; ``record`` counts a submitted search (first page only) for the insights."""
        if self.index is None:
            raise Refused(503, self.notice or "the search index is not loaded")
        # a retired code searched on its own finds the entry it was folded into
        moved = self.catalog.moved_to(query.strip()) if len(query) <= MAX_CODE_QUERY else None
        result = self.index.search(moved or query, category=category, lang=lang, limit=limit, page=page)
        if page == 1:
            result = self._error_lines_first(query, result, category=category, lang=lang, limit=limit)
        if record is not None and page == 1 and self.recorder is not None:
            self.recorder.searched(query, result.total, on_page=record == "page")
        return search_answer(result, self._base(base), query=query, category=category, page=page, limit=limit)

    def _error_lines_first(
        self, query: str, result: SearchResult, *, category: str | None, lang: str, limit: int
    ) -> SearchResult:
        """A query that is an error line an entry's signature recognises leads with that entry.

        Word ranking cannot tell `No module named 'verl'` (ENV-020) from the dozens of entries that also say
        "module" and "verl"; the signature can. Only confident matches lead, and only when a signature fires at
        all, so plain word queries cost one RE2 set pass over the query and keep their ranking.
        """
        if len(query) > MAX_ERROR_QUERY or not self.matcher.signatures.hits(normalise(query).searchable):
            return result
        codes = [
            match.code
            for match in self.matcher.diagnose(query, 3, suggest=False).matches
            if match.confidence in CONFIDENT and (category is None or self.catalog.get(match.code).category == category)
        ]
        if not codes:
            return result
        found = {hit.code: hit for hit in result.hits}
        top = result.hits[0].score if result.hits else 1.0
        leading = [found.get(code) or self._hit(code, lang, score=top) for code in codes]
        rest = [hit for hit in result.hits if hit.code not in codes]
        hits = (leading + rest)[:limit]
        return replace(result, hits=hits, total=max(result.total, len(hits)), dropped=[])

    def _hit(self, code: str, lang: str, *, score: float) -> Hit:
        entry = self.get(code)
        summary = pick(entry.meta.summary, entry.meta.summary_zh, lang)
        return Hit(
            code=code,
            title=pick(entry.meta.title, entry.meta.title_zh, lang),
            category=entry.category,
            snippet=html.escape(summary),
            score=score,
            title_zh=entry.meta.title_zh,
            summary_zh=entry.meta.summary_zh,
        )

    def opened(self, query: str) -> None:
        """A result of the search ``query`` was opened (the insights count searches nobody opened)."""
        if self.recorder is not None:
            self.recorder.opened(query)

    def entry_votes(self, code: str) -> EntryVotes:
        if self.resources.vote_counts is not None:
            return self.resources.vote_counts.entry(code, lambda: self._read_entry_votes(code))
        return self._read_entry_votes(code)

    def _read_entry_votes(self, code: str) -> EntryVotes:
        with self.session() as session:
            return entry_votes(session=session, code=code)

    def entry(self, code: str, *, lang: str = "en", base: str | None = None) -> a.ErrorOut:
        """One entry with its fixes in vote order; built once per generation, language, base URL and votes."""
        entry = self.get(code)
        votes = self.entry_votes(entry.code)
        key = (entry.code, lang, self._base(base), votes.key)

        def make() -> a.ErrorOut:
            answer = entry_answer(entry, self.catalog, votes, lang, self._base(base))
            answer._cache_key = key  # noqa: SLF001 (set once, by its maker)
            return answer

        return self.cached(("entry", *key), make)

    def markdown(self, code: str, *, lang: str = "en", base: str | None = None) -> str:
        """The entry as one Markdown document, fixes in vote order."""
        entry = self.get(code)
        ordered = ranked_fixes(entry, self._fix_stats([entry.code]))
        return entry_markdown(entry, ordered, lang, self.entry(entry.code, lang=lang, base=base).url)

    def browse(
        self, *, filters: dict | None = None, sort: str = "code", lang: str = "en", base: str | None = None
    ) -> a.BrowseOut:
        return browse_answer(self.catalog, self._fix_stats(), lang, self._base(base), filters=filters, sort=sort)

    def home(self, *, lang: str = "en") -> a.HomeOut:
        return home_answer(self.catalog, self._fix_stats(), lang)

    def categories(self, *, lang: str = "en") -> list[a.CategoryOut]:
        return categories_answer(self.catalog, lang)

    def _ballot(self) -> Ballot:
        if self.resources.ballot is None:
            raise Refused(503, "votes are taken by a running server")
        return self.resources.ballot

    def vote(
        self,
        code: str,
        fix_id: str,
        *,
        voter: str,
        client: str,
        worked: bool,
        comment: str | None = None,
        environment: dict | None = None,
    ) -> a.VoteOut:
        """Store whether a fix worked (a voter's second vote replaces the first); Refused past the limits."""
        entry = self.get(code)
        with self.session() as session:
            fix = self._ballot().cast_vote(
                session,
                entry,
                fix_id,
                voter=voter,
                client=client,
                worked=worked,
                comment=comment,
                environment=environment,
            )
        self._counted()
        return a.VoteOut(code=entry.code, fix=fix, your_vote=worked)

    def feedback(self, code: str, fingerprint: str, *, voter: str, client: str, right: bool) -> a.FeedbackOut:
        """ "This is not my error" (``right=False``) or "it was", for the error ``fingerprint``."""
        entry = self.get(code)
        with self.session() as session:
            return self._ballot().match_feedback(session, entry, fingerprint, voter=voter, client=client, right=right)

    def insights(self, *, top: int = INSIGHTS_TOP, purge: bool = False) -> a.InsightsOut:
        """What the manual could not answer, for its maintainers; ``purge`` first deletes what outlived the
        retention period (`kb insights`; the server's recorder prunes as it writes)."""
        if purge:
            retention = timedelta(days=self.settings.insights_retention_days)
            with session_scope(self.resources.engine) as session:
                purge_expired(session=session, before=utcnow() - retention)
        with self.session() as session:
            return a.InsightsOut.model_validate(insights_data(session=session, catalog=self.catalog, top=top))

    def missed_fingerprint(self, fingerprint_id: str) -> FingerprintRow | None:
        """The recorded miss with this id (what `kb new --from-fingerprint` drafts from), or None."""
        if not ID_RE.match(fingerprint_id):
            return None
        with self.session() as session:
            return fingerprint_row(session=session, fingerprint_id=fingerprint_id)

    def votes_report(self, *, top: int = 20) -> VotesReport:
        """Fixes that fail most, and entries with no working fix."""
        return votes_report(self.catalog, self._fix_stats(), top=top)

    def vote_rows(self) -> Iterator[tuple]:
        """Every vote, oldest first, without voter ids or address hashes (`kb votes export`)."""
        with self.session() as session:
            yield from export_rows(session=session)

    @staticmethod
    def is_confident(answer: a.MatchResponse) -> bool:
        return any(match.confidence in CONFIDENT for match in answer.matches)


def _open_or_none(settings: Settings):
    """The served build, or None when it cannot be read (a file of it missing or damaged)."""
    try:
        return search_index.open_generation(settings.data_dir)
    except Exception:  # whatever a damaged build raises (Whoosh, JSON, OS errors): it is rebuilt
        return None


def _rebuild(settings: Settings, *, force: bool = False) -> tuple[str | None, bool]:
    """Rebuild the index as `kb index` would; return (what is lost when that fails, whether it was rebuilt)."""
    from app.ingest import IngestError, ingest

    try:
        ingest(settings, force=force)
    except (IngestError, OSError, SQLAlchemyError) as exc:
        return (
            f"full-text suggestions are unavailable: the search index in {settings.data_dir} is missing, damaged or "
            f"older than the entries, and rebuilding it failed ({str(exc).splitlines()[-1]}); run `kb index`"
        ), False
    return None, True
