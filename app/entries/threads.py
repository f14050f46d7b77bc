"""The titles of the threads entries cite: how the people who hit a failure described it.

An issue title is what a user types into a search box ("Agent Loop Training Failed", "训练卡住"), so the
titles of an entry's source threads are searched with its body text, and its page names each source by its title.
They live in one file beside the entries (``threads.tsv``: ``url<TAB>title``) because many entries cite the
same thread; a row no entry cites is stale and fails ``kb check``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from app.entries.tables import HeaderError, table_rows

THREADS_FILE = "threads.tsv"
HEADER = "url\ttitle"
THREAD_URL_RE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+$")


@dataclass(frozen=True)
class Thread:
    url: str
    title: str
    line: int = 0  # where the row is in threads.tsv, for `kb check`


def thread_key(url: str) -> str:
    """A cited URL as the table keys it: without a #comment anchor or a ?query."""
    return re.sub(r"[#?].*$", "", url.strip())


def read_threads(path: Path) -> tuple[dict[str, Thread], list[tuple[int, str]]]:
    """Return the threads by URL and the problems found as (line, message); a missing file is an empty table."""
    try:
        rows = table_rows(path, HEADER)
    except HeaderError as exc:
        return {}, [(1, str(exc))]
    threads: dict[str, Thread] = {}
    problems: list[tuple[int, str]] = []
    for number, line in rows:
        url, tab, title = line.partition("\t")
        if not tab or not title.strip() or "\t" in title:
            problems.append((number, "a row is a thread URL, one tab, and its title"))
        elif not THREAD_URL_RE.match(url):
            problems.append((number, f"not a GitHub issue or pull request URL: {url!r}"))
        elif url in threads:
            problems.append((number, f"{url} is listed twice"))
        else:
            threads[url] = Thread(url, title.strip(), number)
    return threads, problems
