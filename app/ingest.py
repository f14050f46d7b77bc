"""Content to served state, in explicit phases: load and validate all, migrate and write the
database, then build the search index aside and swap it in. A failure changes nothing served."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from app.checker import check_content
from app.entries import Catalog
from app.search import index as search_index
from app.settings import Settings
from app.store.db import make_engine, migrate


class IngestError(Exception):
    """The content cannot be served; ``lines`` say where and why."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass
class IngestReport:
    entries: int
    rebuilt: bool
    content_hash: str

    def describe(self) -> str:
        action = "index rebuilt" if self.rebuilt else "index up to date"
        return f"{self.entries} entries; {action} ({self.content_hash[:14]})"


def load_checked(settings: Settings) -> Catalog:
    """Load the content and run every check that needs no network; raise IngestError on any problem."""
    catalog, problems = check_content(settings.content_dir, release=None)
    if problems:
        raise IngestError(
            [str(problem) for problem in problems]
            + [f"refusing to index: {len(problems)} problem(s); the index being served is unchanged"]
        )
    return catalog


def ingest(settings: Settings, *, force: bool = False, progress=None) -> IngestReport:
    """Validate the content, migrate the database, rebuild the index when content changed."""
    catalog = load_checked(settings)
    engine = make_engine(settings)
    try:
        migrate(engine, settings)
    finally:
        engine.dispose()
    wanted = search_index.build_hash(catalog)
    if not force and search_index.current_hash(settings.data_dir) == wanted:
        return IngestReport(len(catalog), False, wanted)
    with progress or nullcontext() as bar:
        task = bar.add_task("Indexing entries", total=len(catalog)) if bar else None
        advance = (lambda _entry: bar.advance(task)) if bar else None
        search_index.build(catalog, settings.data_dir, on_entry=advance)
    return IngestReport(len(catalog), True, wanted)
