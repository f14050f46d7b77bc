"""Search finds identifiers whole and by parts, Chinese through its own text, and survives typos."""

from __future__ import annotations

import pytest

from app.entries import load_catalog_strict
from app.ingest import ingest
from app.search.index import build, open_generation
from app.search.query import SearchService


@pytest.fixture
def search(settings):
    ingest(settings)
    return SearchService(open_generation(settings.data_dir))


def codes(result):
    return [hit.code for hit in result.hits]


@pytest.mark.parametrize(
    "query,expected",
    [
        ("actor_rollout_ref.rollout.gpu_memory_utilization", "ROLL-901"),  # whole dotted key
        ("gpu_memory_utilization", "ROLL-901"),  # its last segment
        ("rollout.gpu_memory_utilization", "ROLL-901"),  # a sub-path
        ("ppo_micro_batch_size_per_gpu", "TRAIN-901"),  # an identifier inside a code span
        ("micro batch", "TRAIN-901"),  # by its parts
        ("ProcessGroupNCCL.cpp", "DIST-901"),  # a file name inside an example
        ("OutOfMemoryError", "TRAIN-901"),  # CamelCase exception
        ("DIST-901", "DIST-901"),  # the code itself
    ],
)
def test_identifiers_are_found_whole_and_by_parts(search, query, expected):
    assert codes(search.search(query))[:1] == [expected]


def test_a_whole_identifier_does_not_match_its_scattered_parts(search):
    # every fixture entry says "memory" and "size" somewhere; only one names the key
    assert codes(search.search("ppo_micro_batch_size_per_gpu")) == ["TRAIN-901"]


@pytest.mark.parametrize("query,expected", [("显存不足", "TRAIN-901"), ("超时", "DIST-901"), ("测试条目", None)])
def test_chinese_queries_find_chinese_text(search, query, expected):
    result = search.search(query, lang="zh")
    if expected is None:
        assert result.total == 3
    else:
        assert codes(result)[:1] == [expected]
        assert result.hits[0].title.startswith("测试条目")


def test_typos_are_corrected(search):
    result = search.search("watchdgo")
    assert result.fuzzy and result.suggestions == ["watchdog"] and codes(result) == ["DIST-901"]


def test_nothing_found_offers_no_fake_hits(search):
    result = search.search("qqqqxxxx")
    assert result.total == 0 and result.hits == []


def test_snippets_mark_the_words_and_escape_the_rest(search):
    snippet = search.search("cache blocks").hits[0].snippet
    assert "<mark>cache blocks</mark>" in snippet.lower() or "<mark>cache</mark>" in snippet.lower()
    assert "<script" not in snippet


def test_category_facets_and_pages(search):
    everything = search.search("entry")
    assert everything.total == 3 and everything.facets == {"DIST": 1, "ROLL": 1, "TRAIN": 1}
    narrowed = search.search("entry", category="DIST")
    assert codes(narrowed) == ["DIST-901"] and narrowed.facets == everything.facets
    first, second = search.search("entry", limit=2, page=1), search.search("entry", limit=2, page=2)
    assert len(first.hits) == 2 and len(second.hits) == 1
    assert set(codes(first)) | set(codes(second)) == {"DIST-901", "ROLL-901", "TRAIN-901"}


def test_the_index_analyzer_gives_the_query_analyzer_s_tokens_on_every_entry():
    """The index reads entries with a one-pass analyzer for speed; queries use the composed chain. A word
    tokenised differently on the two sides could never be found, so every entry's fields must agree."""
    from app.entries import load_catalog_strict
    from app.search.analysis import IndexAnalyzer, analyzer
    from app.search.index import document
    from app.settings import ROOT

    composed, fused = analyzer(), IndexAnalyzer()
    for entry in load_catalog_strict(ROOT / "content" / "errors"):
        fields = document(entry)
        for name in ("head", "text"):
            expected = [(token.text, token.pos) for token in composed(fields[name], positions=True, mode="index")]
            got = [(token.text, token.pos) for token in fused(fields[name], positions=True, mode="index")]
            assert got == expected, (entry.code, name)


def test_of_two_entries_that_fit_the_words_equally_the_one_more_threads_report_ranks_first(settings, content_dir):
    # a twin of TRAIN-901 with the same text, cited by four threads instead of one
    for suffix in (".md", ".zh.md"):
        text = (content_dir / f"TRAIN-901{suffix}").read_text(encoding="utf-8").replace("TRAIN-901", "TRAIN-902")
        (content_dir / f"TRAIN-902{suffix}").write_text(text, encoding="utf-8")
    twin = content_dir / "TRAIN-902.md"
    threads = ", ".join(f"'https://github.com/verl-project/verl/issues/{n}'" for n in (1, 2, 3, 4))
    twin.write_text(
        twin.read_text(encoding="utf-8").replace(
            "sources: ['https://github.com/verl-project/verl/issues/1']", f"sources: [{threads}]"
        ),
        encoding="utf-8",
    )
    # indexed directly: ingest would rightly refuse twins whose examples match both
    build(load_catalog_strict(content_dir), settings.data_dir)
    search = SearchService(open_generation(settings.data_dir))
    for query in ("actor update out of memory", "显存不足"):
        assert codes(search.search(query))[:2] == ["TRAIN-902", "TRAIN-901"], query
