"""The tab-separated tables beside the entries (threads.tsv, moved.tsv): a header line, then one row per line."""

from __future__ import annotations

from pathlib import Path


class HeaderError(ValueError):
    """The table's first line is not its header; nothing below it is read."""


def table_rows(path: Path, header: str) -> list[tuple[int, str]]:
    """The non-blank rows below the header as (line number, text); a missing file is an empty table.

    Raises HeaderError when the first line is not ``header``."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines[0] != header:
        raise HeaderError(f"the first line must be the header {header!r}")
    return [(number, line) for number, line in enumerate(lines[1:], 2) if line.strip()]
