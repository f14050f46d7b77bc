"""Load ``content/errors`` in phases: gather every file, parse and validate all, then hand back."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from app.entries.catalog import Catalog, Entry
from app.entries.frontmatter import Document, FrontMatterError, split
from app.entries.model import EntryMeta
from app.entries.moved import MOVED_FILE, check_moves, read_moves
from app.entries.threads import THREADS_FILE, Thread, read_threads, thread_key

ZH_SUFFIX = ".zh.md"
ZH_KEYS = {"fix_bodies"}


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the content, reported as ``path:line: message``."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class ContentError(Exception):
    """The content tree has problems; nothing built from it may replace what is served."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


def load_catalog(content_dir: Path) -> tuple[Catalog, list[Problem]]:
    """Parse every entry; return the entries that validated and every problem found."""
    if not content_dir.is_dir():
        return Catalog([]), [Problem(str(content_dir), 1, "content folder does not exist")]
    texts = _gather(content_dir)
    entries: list[Entry] = []
    problems: list[Problem] = []
    for path, text in texts.items():
        if path.name.endswith(ZH_SUFFIX):
            continue
        entry = _parse_entry(path, text, texts, problems)
        if entry is not None:
            entries.append(entry)
    for path in texts:
        if path.name.endswith(ZH_SUFFIX) and path.with_name(path.name[: -len(ZH_SUFFIX)] + ".md") not in texts:
            problems.append(Problem(str(path), 1, "Chinese body without an English entry of the same code"))
    moved = content_dir / MOVED_FILE
    moves, bad_rows = read_moves(moved)
    bad_rows += check_moves(moves, {entry.code for entry in entries})
    problems += [Problem(str(moved), line, message) for line, message in bad_rows]
    return Catalog(
        _with_threads(entries, content_dir / THREADS_FILE, problems), moved={m.code: m.now for m in moves.values()}
    ), problems


def _with_threads(entries: list[Entry], path: Path, problems: list[Problem]) -> list[Entry]:
    """Give each entry the titles of the threads it cites; a listed thread no entry cites is a problem."""
    threads, bad_rows = read_threads(path)
    problems.extend(Problem(str(path), line, message) for line, message in bad_rows)
    cited = {thread_key(url) for entry in entries for url in entry.meta.sources}
    for url in sorted(set(threads) - cited):
        problems.append(Problem(str(path), threads[url].line, f"{url} is cited by no entry: drop the row"))
    return [replace(entry, threads=_cited(entry.meta.sources, threads)) if threads else entry for entry in entries]


def _cited(sources: list[str], threads: dict[str, Thread]) -> tuple[Thread, ...]:
    keys = dict.fromkeys(thread_key(url) for url in sources)  # in order, once each
    return tuple(threads[key] for key in keys if key in threads)


def load_catalog_strict(content_dir: Path) -> Catalog:
    """Load all entries or raise ContentError: loading is all-or-nothing."""
    catalog, problems = load_catalog(content_dir)
    if problems:
        raise ContentError(problems)
    return catalog


def _gather(content_dir: Path) -> dict[Path, str]:
    texts: dict[Path, str] = {}
    for path in sorted(content_dir.glob("*.md")):
        texts[path] = path.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")
    return texts


def _parse_entry(path: Path, text: str, texts: dict[Path, str], problems: list[Problem]) -> Entry | None:
    try:
        document = split(text)
    except FrontMatterError as exc:
        problems.append(Problem(str(path), exc.line, exc.message))
        return None
    if not document.data:
        problems.append(Problem(str(path), 1, "no front matter: an entry starts with '---' and its fields"))
        return None
    try:
        meta = EntryMeta.model_validate(document.data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            where = ".".join(str(part) for part in loc)
            message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(Problem(str(path), document.line_of(loc), f"{where}: {message}"))
        return None
    if path.stem != meta.code:
        problems.append(Problem(str(path), document.line_of(("code",)), f"code {meta.code} does not match file name"))
    body_zh, fix_bodies_zh = _chinese(path, texts, meta, problems)
    raw_zh = texts.get(path.with_name(path.stem + ZH_SUFFIX), "")
    return Entry(
        meta=meta,
        body=document.body.strip() + "\n",
        path=path,
        document=document,
        body_zh=body_zh,
        fix_bodies_zh=fix_bodies_zh,
        raw=text,
        raw_zh=raw_zh,
    )


def _chinese(path: Path, texts: dict[Path, str], meta: EntryMeta, problems: list[Problem]) -> tuple[str, dict]:
    zh_path = path.with_name(path.stem + ZH_SUFFIX)
    if zh_path not in texts:
        return "", {}
    try:
        document: Document = split(texts[zh_path])
    except FrontMatterError as exc:
        problems.append(Problem(str(zh_path), exc.line, exc.message))
        return "", {}
    for key in set(document.data) - ZH_KEYS:
        problems.append(Problem(str(zh_path), document.line_of((key,)), f"{key}: unknown key"))
    fix_bodies = document.data.get("fix_bodies") or {}
    if not isinstance(fix_bodies, dict):
        problems.append(Problem(str(zh_path), document.line_of(("fix_bodies",)), "fix_bodies must map fix ids to text"))
        fix_bodies = {}
    known = {fix.id for fix in meta.fixes}
    for fix_id in fix_bodies:
        if fix_id not in known:
            line = document.line_of(("fix_bodies", fix_id))
            problems.append(Problem(str(zh_path), line, f"fix_bodies: {fix_id!r} is not a fix of {meta.code}"))
    return document.body.strip() + "\n", {str(k): str(v) for k, v in fix_bodies.items()}
