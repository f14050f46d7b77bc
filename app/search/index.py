"""The Whoosh index: built into a fresh folder, swapped in by one atomic rename, served from memory."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from whoosh import index as whoosh_index
from whoosh.codec.whoosh3 import W3Codec
from whoosh.fields import ID, STORED, TEXT, Schema
from whoosh.filedb.filestore import FileStorage, copy_to_ram

from app.entries import Catalog, Entry
from app.entries.moved import MOVED_FILE
from app.entries.threads import THREADS_FILE
from app.search.analysis import IndexAnalyzer
from app.search.spelling import vocabulary

# Bump when the schema or the analyzer changes: the content hash alone would not trigger a rebuild.
SCHEMA_VERSION = "14"
CURRENT_LINK = "index"
BUILDS_DIR = "indexes"
HASH_FILE = "content.sha256"
WHOOSH_DIR = "whoosh"
WORDS_FILE = "words.json"  # word -> count, for typo correction
CONTENT_COPY = "content"  # the entries an index was built from: a server reads both from one folder
KEEP_BUILDS = 2


def schema() -> Schema:
    """Two searched fields (a short head with a boost, the long text) and the stored values pages show."""
    text = IndexAnalyzer()  # the tokens of analyzer(), which reads the queries, in one cached pass
    return Schema(
        code=ID(stored=True, unique=True),
        category=ID(stored=True),
        # code, titles, summaries, tags and aliases: a word here says more than the same word in a body; with
        # positions, for the phrases of the synonym groups ('out of memory') and Chinese words as bigrams in a row
        head=TEXT(analyzer=text, field_boost=3.0),
        # bodies (English and Chinese), exception, signatures, examples, fixes, the cited threads' titles
        text=TEXT(analyzer=text),
        title=STORED(),
        title_zh=STORED(),
        summary=STORED(),
        summary_zh=STORED(),
        body=STORED(),
        body_zh=STORED(),
        error_text=STORED(),
        fixes=STORED(),
        prevalence=STORED(),
    )


# How much more a cause reported in many threads weighs than a one-off, per doubling of its cited threads.
PREVALENCE_PER_DOUBLING = 0.15


def prevalence(entry: Entry) -> float:
    """A score factor for how often users meet this failure, read from how many threads the entry cites.

    Titles are vague ("训练 OOM", "training hangs"): several entries fit the words, and the one users meet
    most is the likelier answer. On the 83 development titles this lifted top-1 by one title in each file
    and moved none out of the top five."""
    return 1.0 + PREVALENCE_PER_DOUBLING * math.log2(1 + len(entry.meta.sources))


def described(entry: Entry) -> str:
    """What an entry says it is about (titles, summaries, tags, aliases): the head field, less the code."""
    meta = entry.meta
    return "\n".join([meta.title, meta.title_zh, meta.summary, meta.summary_zh, " ".join(meta.tags), *meta.aliases])


def document(entry: Entry) -> dict:
    """Return the Whoosh document of one entry."""
    meta = entry.meta
    fixes = "\n".join(f"{fix.title}\n{fix.body}" for fix in meta.fixes)
    fixes_zh = "\n".join([fix.title_zh for fix in meta.fixes] + list(entry.fix_bodies_zh.values()))
    error_text = "\n".join([meta.exception, *meta.examples])
    head = "\n".join([meta.code, described(entry)])
    # the cited threads' titles weigh as the body: in the head they lifted entries that cite a thread for a
    # side fact, and the development titles lost four top-1 answers; here they cost none and an issue's own
    # title still finds the entries that cite it
    threads = [thread.title for thread in entry.threads]
    return {
        "code": meta.code,
        "category": meta.category,
        "head": head,
        "text": "\n".join([entry.body, entry.body_zh, error_text, *meta.signatures, fixes, fixes_zh, *threads]),
        "title": meta.title,
        "title_zh": meta.title_zh,
        "summary": meta.summary,
        "summary_zh": meta.summary_zh,
        "body": entry.body,
        "body_zh": entry.body_zh,
        "error_text": error_text,
        "fixes": fixes,
        "prevalence": prevalence(entry),
    }


def english_text(entry: Entry) -> str:
    """The English words of an entry, for the typo corrector's vocabulary."""
    meta = entry.meta
    return "\n".join(
        [
            meta.title,
            meta.summary,
            entry.body,
            *meta.examples,
            *meta.tags,
            *meta.aliases,
            *(fix.title + "\n" + fix.body for fix in meta.fixes),
        ]
    )


def build_hash(catalog: Catalog) -> str:
    return f"{SCHEMA_VERSION}-{catalog.content_hash}"


def current_hash(data_dir: Path) -> str | None:
    """Return the hash of the index being served, or None when there is none."""
    marker = data_dir / CURRENT_LINK / HASH_FILE
    return marker.read_text().strip() if marker.exists() else None


def build(catalog: Catalog, data_dir: Path, *, on_entry=None) -> Path:
    """Write a complete index into a new folder, then point the `index` link at it atomically.

    A failure anywhere before the final rename leaves the served index untouched.
    """
    builds = data_dir / BUILDS_DIR
    builds.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(prefix="build-", dir=builds))
    try:
        (target / WHOOSH_DIR).mkdir()
        ix = whoosh_index.create_in(str(target / WHOOSH_DIR), schema())
        writer = ix.writer(limitmb=256, codec=W3Codec(compression=0))
        for entry in catalog:
            writer.add_document(**document(entry))
            if on_entry:
                on_entry(entry)
        writer.commit(optimize=True)
        words = vocabulary(english_text(entry) for entry in catalog)
        (target / WORDS_FILE).write_text(json.dumps(words, separators=(",", ":")))
        _keep_content(catalog, target / CONTENT_COPY)
        (target / HASH_FILE).write_text(build_hash(catalog))
        _swap_link(data_dir, target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    _prune(builds, keep=target)
    return target


def _keep_content(catalog: Catalog, folder: Path) -> None:
    folder.mkdir()
    for entry in catalog:
        shutil.copy2(entry.path, folder / entry.path.name)
        if entry.raw_zh:
            shutil.copy2(entry.zh_path, folder / entry.zh_path.name)
    # the tables beside the entries: cited threads' titles, retired codes
    source = next((entry.path.parent for entry in catalog), None)
    for name in (THREADS_FILE, MOVED_FILE):
        if source is not None and (source / name).exists():
            shutil.copy2(source / name, folder / name)


def _swap_link(data_dir: Path, target: Path) -> None:
    link = data_dir / CURRENT_LINK
    if link.exists() and not link.is_symlink():
        shutil.rmtree(link)  # an index folder from an older layout
    staging = data_dir / f".{CURRENT_LINK}.{os.getpid()}.tmp"
    staging.unlink(missing_ok=True)
    staging.symlink_to(target.relative_to(data_dir))
    os.replace(staging, link)  # rename(2) is atomic: readers see the old index or the new one


def _prune(builds: Path, keep: Path) -> None:
    """Delete old builds but the newest few: a server may still be reading the previous one."""
    olds = sorted((p for p in builds.iterdir() if p != keep and p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in olds[: max(0, len(olds) - (KEEP_BUILDS - 1))]:
        shutil.rmtree(old, ignore_errors=True)


@dataclass(frozen=True)
class Generation:
    """One served build: its index (in RAM), content hash, the entries it was built from, its word counts."""

    ix: object
    content_hash: str
    content_dir: Path
    words: dict[str, int]


def open_generation(data_dir: Path) -> Generation:
    """Open the served build. The link is resolved once, so a swap in between cannot pair one build's
    index with another's content."""
    link = data_dir / CURRENT_LINK
    if not link.exists():
        raise FileNotFoundError(f"no search index at {link}; run `kb index`")
    folder = link.resolve()
    storage = copy_to_ram(FileStorage(str(folder / WHOOSH_DIR)))
    return Generation(
        storage.open_index(),
        (folder / HASH_FILE).read_text().strip(),
        folder / CONTENT_COPY,
        json.loads((folder / WORDS_FILE).read_text()),
    )
