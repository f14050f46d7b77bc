"""Loading is all-or-nothing and a failed build never replaces the index being served."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from app.entries import ContentError, load_catalog_strict
from app.ingest import IngestError, ingest
from app.search import index as search_index
from app.store.db import make_engine


def test_loading_is_all_or_nothing(content_dir):
    (content_dir / "TRAIN-901.md").write_text("---\ncode: TRAIN-901\n---\nno fields\n")
    with pytest.raises(ContentError) as raised:
        load_catalog_strict(content_dir)
    assert any("TRAIN-901.md" in problem.path for problem in raised.value.problems)


def test_ingest_writes_database_and_index(settings):
    report = ingest(settings)
    assert report.rebuilt and report.entries == 3
    engine = make_engine(settings)
    with engine.connect() as connection:  # migrated to the newest revision: the vote table is there
        assert connection.execute(text("SELECT count(*) FROM vote")).scalar() == 0
    engine.dispose()
    assert (settings.data_dir / "index").is_symlink()


def test_unchanged_content_skips_the_rebuild(settings):
    assert ingest(settings).rebuilt
    served = (settings.data_dir / "index").resolve()
    again = ingest(settings)
    assert not again.rebuilt
    assert (settings.data_dir / "index").resolve() == served
    assert ingest(settings, force=True).rebuilt


def test_broken_content_leaves_the_served_index(settings, content_dir):
    ingest(settings)
    served, served_hash = (settings.data_dir / "index").resolve(), search_index.current_hash(settings.data_dir)
    path = content_dir / "ROLL-901.md"
    path.write_text(path.read_text().replace("'No available memory for the cache blocks'", "'(a)\\1'"))
    with pytest.raises(IngestError) as raised:
        ingest(settings)
    assert any("ROLL-901.md" in line and "RE2 rejects" in line for line in raised.value.lines)
    assert (settings.data_dir / "index").resolve() == served
    assert search_index.current_hash(settings.data_dir) == served_hash


def test_build_failure_midway_keeps_the_old_index(settings, content_dir):
    ingest(settings)
    served_hash = search_index.current_hash(settings.data_dir)
    path = content_dir / "TRAIN-901.md"
    path.write_text(path.read_text().replace("Test entry for a CUDA OOM", "Test entry for a CUDA OOM (edited)"))
    calls = []

    def explode(entry):
        calls.append(entry.code)
        if len(calls) == 2:
            raise OSError("disk full")

    from app.ingest import load_checked

    with pytest.raises(OSError):
        search_index.build(load_checked(settings), settings.data_dir, on_entry=explode)
    assert search_index.current_hash(settings.data_dir) == served_hash
    generation = search_index.open_generation(settings.data_dir)
    assert generation.content_hash == served_hash and generation.ix.doc_count() == 3
    leftovers = [p for p in (settings.data_dir / "indexes").iterdir()]
    assert len(leftovers) == 1  # the half-built folder was removed


def test_a_chinese_fix_body_edit_rebuilds_the_index(settings, content_dir):
    assert ingest(settings).rebuilt
    path = content_dir / "ROLL-901.zh.md"
    path.write_text(path.read_text().replace("gpu_memory_utilization=0.6", "gpu_memory_utilization=0.7"))
    assert ingest(settings).rebuilt
