"""Loaded entries and the collection that holds them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app.entries.frontmatter import Document
from app.entries.model import CATEGORIES, EntryMeta, Fix
from app.entries.threads import Thread, thread_key


@dataclass(frozen=True)
class Entry:
    """One failure mode: validated front matter, English body, optional Chinese body."""

    meta: EntryMeta
    body: str
    path: Path
    document: Document = field(repr=False, compare=False)
    body_zh: str = ""
    fix_bodies_zh: dict[str, str] = field(default_factory=dict)
    raw: str = field(default="", repr=False, compare=False)
    raw_zh: str = field(default="", repr=False, compare=False)  # the whole <CODE>.zh.md, front matter included
    threads: tuple[Thread, ...] = ()  # the cited threads whose titles are known, in `sources` order

    @property
    def code(self) -> str:
        return self.meta.code

    @property
    def category(self) -> str:
        return self.meta.category

    @property
    def fixes(self) -> list[Fix]:
        return self.meta.fixes

    def fix(self, fix_id: str) -> Fix | None:
        """Return the fix with ``fix_id`` or None."""
        return next((fix for fix in self.meta.fixes if fix.id == fix_id), None)

    def line_of(self, *loc: str | int) -> int:
        """Return the source line of a front-matter path such as ('examples', 2)."""
        return self.document.line_of(loc)

    @property
    def content_hash(self) -> str:
        titles = "\n".join(thread.title for thread in self.threads)
        return hashlib.sha256((self.raw + "\0" + self.raw_zh + "\0" + titles).encode()).hexdigest()

    def titled_sources(self) -> list[tuple[str, str | None]]:
        """Each cited URL, in `sources` order, with its thread's title when threads.tsv has it."""
        titles = {thread.url: thread.title for thread in self.threads}
        return [(url, titles.get(thread_key(url))) for url in self.meta.sources]

    @property
    def zh_path(self) -> Path:
        """Where the Chinese body lives (whether or not it exists)."""
        return self.path.with_name(self.code + ".zh.md")


class Catalog:
    """All entries, addressable by code, in code order."""

    def __init__(self, entries: list[Entry], moved: dict[str, str] | None = None):
        self._by_code = {entry.code: entry for entry in sorted(entries, key=lambda e: _code_key(e.code))}
        # retired code -> the entry it was folded into (``moved.tsv``)
        self.moved: dict[str, str] = moved or {}

    def __len__(self) -> int:
        return len(self._by_code)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._by_code.values())

    def __contains__(self, code: object) -> bool:
        return code in self._by_code

    def get(self, code: str) -> Entry | None:
        """Return the entry with ``code`` (case-insensitive) or None."""
        return self._by_code.get(code.upper())

    def moved_to(self, code: str) -> str | None:
        """The code a retired code was folded into, or None."""
        return self.moved.get(code.upper())

    def by_category(self) -> dict[str, list[Entry]]:
        """Return entries grouped by category, in the fixed category order."""
        groups: dict[str, list[Entry]] = {category: [] for category in CATEGORIES}
        for entry in self:
            groups[entry.category].append(entry)
        return groups

    @property
    def content_hash(self) -> str:
        """One hash over every entry's text: the index is rebuilt only when it changes."""
        digest = hashlib.sha256()
        for entry in self:
            digest.update(entry.code.encode() + b"\0" + entry.content_hash.encode())
        for code, now in sorted(self.moved.items()):
            digest.update(f"moved {code} {now}".encode())
        return digest.hexdigest()


def _code_key(code: str) -> tuple[int, int]:
    category, _, number = code.partition("-")
    order = CATEGORIES.index(category) if category in CATEGORIES else len(CATEGORIES)
    return order, int(number) if number.isdigit() else 0
