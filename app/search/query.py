"""Full-text search over the index: identifiers whole or by parts, Chinese bigrams, typo correction."""

from __future__ import annotations

import html
import queue
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
from whoosh import query as q

from app.lru import LRU
from app.search.analysis import CJK_RE, analyzer
from app.search.dense import DenseScorer, TermScores
from app.search.index import Generation
from app.search.spelling import Speller
from app.search.synonyms import Synonyms
from app.search.understand import Concept, Piece, QueryReader

FIELDS = ("head", "text")
SNIPPET_FIELDS = {
    "en": ("error_text", "summary", "body", "fixes"),
    "zh": ("summary_zh", "body_zh", "error_text", "summary"),
}
MAX_QUERY_CHARS = 2000
MAX_TERM_GROUPS = 64
POOL_SIZE = 4  # searches at once; more would only queue on the GIL
CACHE_SIZE = 2048  # results kept per index generation (a few MB at most)
CORRECT_MIN_LENGTH = 4
LONG_WORD = 6  # two edits allowed from here on; shorter words get one (and a faster look-up)
SNIPPET_CHARS = 220
PHRASE_SLOP = 2  # a stop word dropped inside a phrase leaves a gap of one position
# Re-ranking by what the query is about: the best RERANK_POOL hits by word scores are re-weighed by the share of
# the query's concepts each entry says it is about (its head: title, summary, tags, aliases) or only mentions
# (its body), so an entry whose body repeats one word cannot outrank one whose title holds them all. On 313
# development titles (dev, dev2, dev3 and the cited threads' own titles, searched without them) it put a right
# entry first for 10 more and kept the top-five count; the square root softens it: at full strength it cost
# dev.tsv three first places.
RERANK_POOL = 50
IN_BODY_ONLY = 0.5  # a concept found only in the body counts half as one the entry is about
COVERAGE_EXPONENT = 0.5
# postings whose scores are kept per index generation: about 16 bytes each, so at most ~64 MB
TERM_CACHE_POSTINGS = 4_000_000
WORD_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/:]*[A-Za-z0-9_]|[A-Za-z0-9]|[\u3400-\u9fff]+")


@dataclass(frozen=True)
class _Part:
    """One concept of a query: the user's words, its weight, and its query in both fields and in the head alone."""

    label: str
    weight: float
    query: q.Query
    head_query: q.Query


@dataclass
class Hit:
    code: str
    title: str
    category: str
    snippet: str
    score: float
    title_zh: str = ""  # shown instead of `title` to a reader of Chinese (a query in Chinese)
    summary_zh: str = ""


@dataclass
class SearchResult:
    hits: list[Hit]
    total: int
    facets: dict[str, int]
    took_ms: float
    suggestions: list[str] = field(default_factory=list)
    fuzzy: bool = False
    cached: bool = False
    # the user's words the first hit lacks, when no entry has them all (empty when one does)
    dropped: list[str] = field(default_factory=list)


class SearchService:
    """Answers queries against one opened index, with a small pool of searchers shared by all threads."""

    def __init__(self, generation: Generation, cache_size: int = CACHE_SIZE, synonyms: Synonyms | None = None):
        self.ix = generation.ix
        self.content_hash = generation.content_hash
        self.speller = Speller(generation.words)
        self._reader = QueryReader(analyzer(), synonyms if synonyms is not None else Synonyms.load())
        # the matcher's fallback searches with a log's own words: synonyms of what people type would only
        # add noise there (they pushed the right entry out of the top three for two development pastes)
        self._literal_reader = QueryReader(analyzer(), Synonyms({}))
        # a few searchers shared by all threads: each caches postings, so one per request thread (40 under
        # load) cost hundreds of MB, while more than a handful cannot run at once under the GIL anyway
        self._searchers: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(POOL_SIZE)
        with self.ix.searcher() as searcher:
            # docnum -> category and prevalence, read once: facet counts and ranking then need no stored-field reads
            stored = [searcher.stored_fields(n) for n in range(searcher.doc_count_all())]
            self._lengths = DenseScorer.field_lengths(searcher, FIELDS)
        self._category_names = sorted({fields["category"] for fields in stored})
        self._categories = np.array(
            [self._category_names.index(fields["category"]) for fields in stored], dtype=np.int64
        )
        self._prevalence = np.array([fields["prevalence"] for fields in stored], dtype=np.float64)
        # each term's scores, computed once per generation (the index never changes under it)
        self._terms = TermScores(TERM_CACHE_POSTINGS)
        # one cache per index generation: a swapped-in index comes with a new, empty cache
        self._cache: LRU[SearchResult] = LRU(cache_size)

    @contextmanager
    def _searcher(self):
        """Borrow one of at most POOL_SIZE searchers, waiting while all are in use."""
        with self._slots:
            try:
                searcher = self._searchers.get_nowait()
            except queue.Empty:
                searcher = self.ix.searcher()
            try:
                yield searcher
            finally:
                self._searchers.put(searcher)

    def search(
        self,
        text: str,
        *,
        category: str | None = None,
        lang: str = "en",
        limit: int = 10,
        page: int = 1,
        cached: bool = True,
    ) -> SearchResult:
        """Return one page of hits with snippets and category counts; a query with typos is corrected."""
        key = (text, category, lang, limit, page)
        found = self._cache.get(key) if cached else None
        if found is not None:
            return replace(found, took_ms=0.0, cached=True)
        with self._searcher() as searcher:
            result = self._search(searcher, text, category=category, lang=lang, limit=limit, page=page)
        if cached:
            self._cache.put(key, result)
        return result

    def _search(self, searcher, text: str, *, category: str | None, lang: str, limit: int, page: int) -> SearchResult:
        started = time.perf_counter()
        text = (text or "")[:MAX_QUERY_CHARS]
        dense = DenseScorer(searcher, self._lengths, self._terms)
        parts = self._parts(searcher, text)
        corrected = ""
        found, scores, matching = _scored(dense, parts)
        if not matching.any():
            corrected = self.correct(text)
            if corrected:
                parts = self._parts(searcher, corrected)
                found, scores, matching = _scored(dense, parts)
        needed = [(part.label, docs) for part, docs in zip(parts, found, strict=True) if part.weight >= 1]
        counts = np.bincount(self._categories[matching], minlength=len(self._category_names))
        facets = {name: int(count) for name, count in zip(self._category_names, counts, strict=True) if count}
        total = facets.get(category, 0) if category else int(matching.sum())
        hits: list[Hit] = []
        dropped: list[str] = []
        if total:
            wanted = matching
            if category is not None:
                wanted = matching & (self._categories == self._category_names.index(category))
            best = _best(scores, wanted, max(page * limit, RERANK_POOL), self._prevalence)
            ranked = _by_coverage(dense, best, parts, found)
            words = _highlight_words(corrected or text)
            hits = [
                _hit(searcher, docnum, score, words, lang)
                for docnum, score in ranked[(page - 1) * limit : page * limit]
            ]
            if needed and not np.logical_and.reduce([docs for _, docs in needed]).any():
                # no entry has every word: name the ones the first hit lacks
                dropped = [label for label, docs in needed if not docs[ranked[0][0]]]
        suggestions = corrected.split() if corrected else []
        return SearchResult(hits, total, facets, _ms(started), suggestions, bool(corrected and total), dropped=dropped)

    def fulltext(self, text: str, limit: int) -> list[tuple[str, float]]:
        """Return (code, score) pairs for the matcher's fallback."""
        with self._searcher() as searcher:
            parsed = self._literal_query(searcher, text[:MAX_QUERY_CHARS])
            if parsed is None:
                return []
            return [(hit["code"], float(hit.score)) for hit in searcher.search(parsed, limit=limit)]

    def correct(self, text: str) -> str:
        """Replace words the manual never uses with the closest ones it does ('memroy' -> 'memory')."""
        changed = False
        words = []
        for word in text.split():
            lowered = word.lower()
            if lowered.isalpha() and len(lowered) >= CORRECT_MIN_LENGTH and lowered not in self.speller:
                found = self.speller.correct(lowered, max_distance=2 if len(lowered) >= LONG_WORD else 1)
                if found:
                    words.append(found)
                    changed = True
                    continue
            words.append(word)
        return " ".join(words) if changed else ""

    def _parts(self, searcher, text: str) -> list[_Part]:
        """Each concept of the query with its queries in either field and in the head alone (to say which words a
        hit lacks, and what it is about). The whole query is their union: any concept matches, more score higher;
        no coordination bonus, the re-ranking by concepts (RERANK_POOL) rewards an entry for having more of them."""
        concepts = self._reader.read(text)[:MAX_TERM_GROUPS]
        reader = searcher.reader()
        return [
            _Part(
                concept.label,
                concept.weight,
                self._concept(reader, concept, literal=False),
                self._concept(reader, concept, literal=False, fields=("head",)),
            )
            for concept in concepts
        ]

    def _literal_query(self, searcher, text: str) -> q.Query | None:
        """A log's words as they are, no synonyms, repeats kept: the matcher's fallback query."""
        concepts = self._literal_reader.read(text, unique=False)[:MAX_TERM_GROUPS]
        if not concepts:
            return None
        reader = searcher.reader()
        queries = [self._concept(reader, concept, literal=True) for concept in concepts]
        return _union(queries) if len(queries) > 1 else queries[0]

    def _concept(self, reader, concept: Concept, literal: bool, fields: tuple[str, ...] = FIELDS) -> q.Query:
        """Any of a concept's alternatives, those the index holds; a light word ('does', 'error') at its weight."""
        queries = [
            self._alternative(reader, pieces, fields) for pieces in concept.alternatives if _possible(reader, pieces)
        ]
        if not queries:
            return q.NullQuery
        if len(queries) == 1 and concept.weight == 1.0:
            return queries[0]
        # normalised: Whoosh drops the boost of an Or that holds one query
        return _union(queries, boost=1.0 if literal else concept.weight).normalize()

    @staticmethod
    def _alternative(reader, pieces, fields: tuple[str, ...]) -> q.Query:
        if len(pieces) > 1 and all(piece.kind == "term" and _indexed(reader, piece.tokens[0]) for piece in pieces):
            # a phrase ('out of memory') means its words together, not each somewhere in a long body
            words = [piece.tokens[0] for piece in pieces]
            return _union([q.Phrase(name, words, slop=PHRASE_SLOP) for name in fields])
        queries = [_piece(reader, piece, fields) for piece in pieces]
        return queries[0] if len(queries) == 1 else q.And(queries)


def _possible(reader, pieces) -> bool:
    """Whether the index holds every piece of an alternative: a synonym group brings a dozen words, and
    building matchers for the ones no entry uses made every query pay for them."""

    def present(term: str) -> bool:
        return any(reader.doc_frequency(name, term) for name in FIELDS)

    for piece in pieces:
        if piece.kind == "chinese":
            if not all(present(gram) for gram in piece.tokens):
                return False
        elif not (
            any(present(token) for token in piece.tokens) or reader.doc_frequency("code", piece.tokens[0].upper())
        ):
            return False
    return True


def _indexed(reader, term: str) -> bool:
    return any(reader.doc_frequency(name, term) for name in FIELDS)


def _piece(reader, piece: Piece, fields: tuple[str, ...]) -> q.Query:
    """One word in any of ``fields``; an identifier the manual never writes whole, by its parts."""
    if piece.kind == "chinese":
        # the bigrams of a known Chinese word in a row: a dictionary-free word match
        if len(piece.tokens) == 1:
            return _union([q.Term(name, piece.tokens[0]) for name in fields])
        return _union([q.Phrase(name, list(piece.tokens)) for name in fields])
    if piece.kind == "chinese_any":
        return _union([q.Term(name, gram) for name in fields for gram in piece.tokens])
    whole, parts = piece.tokens[0], piece.tokens[1:]
    if parts and not any(reader.doc_frequency(name, whole) for name in FIELDS):
        per_field = [q.And([q.Term(name, part) for part in parts]) for name in fields]
    else:
        per_field = [q.Term(name, whole) for name in fields]
    return _union([*per_field, q.Term("code", whole.upper(), boost=10.0)])


def _scored(dense: DenseScorer, parts: list[_Part]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Each concept's documents (the total, the category counts, the dropped words and the re-ranking need them),
    every document's word score, and which documents match at all.

    The whole query is the union of the concepts, and a union's score is the sum of its parts' scores, so summing
    the concepts' scores gives the scores of the union without building its matcher tree. Every match is scored:
    Whoosh's top-N collector swaps parts of a query for cheaper ones once its heap is full and misjudged boosted,
    phrase and light-word queries (first pages that were not the best five)."""
    found: list[np.ndarray] = []
    scores = np.zeros(dense.count, dtype=np.float64)
    for part in parts:
        matched, part_scores = dense.scores(part.query)
        found.append(matched)
        scores += part_scores
    matching = np.logical_or.reduce(found) if found else np.zeros(dense.count, dtype=bool)
    return found, scores, matching


def _best(scores: np.ndarray, wanted: np.ndarray, limit: int, prevalence: np.ndarray) -> list[tuple[int, float]]:
    """The ``limit`` best (docnum, score) pairs among the ``wanted`` documents, each score weighed by the entry's
    prevalence (``index.prevalence``); equal scores in index order."""
    docnums = np.nonzero(wanted)[0]
    weighed = scores[docnums] * prevalence[docnums]
    order = np.lexsort((docnums, -weighed))[:limit]
    return [(int(docnums[index]), float(weighed[index])) for index in order]


def _by_coverage(
    dense: DenseScorer, scored: list[tuple[int, float]], parts: list[_Part], found: list[np.ndarray]
) -> list[tuple[int, float]]:
    """(docnum, score) pairs re-weighed by the share of the query's concepts each entry is about (see RERANK_POOL),
    best first; the word score breaks ties and a light word counts at its weight. ``found``: ``_scored``."""
    total = sum(part.weight for part in parts)
    if not scored or total <= 0:
        return scored
    docnums = np.array([docnum for docnum, _ in scored], dtype=np.int64)
    covered = np.zeros(len(docnums), dtype=np.float64)
    for part, anywhere in zip(parts, found, strict=True):
        in_head = dense.matches(part.head_query)[docnums]
        covered += part.weight * np.where(in_head, 1.0, np.where(anywhere[docnums], IN_BODY_ONLY, 0.0))
    reweighed = [
        (docnum, score * (float(share) / total) ** COVERAGE_EXPONENT)
        for (docnum, score), share in zip(scored, covered, strict=True)
    ]
    return sorted(reweighed, key=lambda pair: -pair[1])


def _hit(searcher, docnum: int, score: float, words: re.Pattern | None, lang: str) -> Hit:
    stored = searcher.stored_fields(docnum)
    title = stored["title_zh"] if lang == "zh" and stored.get("title_zh") else stored["title"]
    return Hit(
        stored["code"],
        title,
        stored["category"],
        _snippet(stored, words, lang),
        round(score, 4),
        stored.get("title_zh") or "",
        stored.get("summary_zh") or "",
    )


def _union(subqueries: list, boost: float = 1.0) -> q.Or:
    """An Or that merges postings as it goes: Whoosh's automatic choice pre-loads an array as long as the
    whole index for every small Or, which made small queries cost as much as big ones."""
    union = q.Or(subqueries, boost=boost)
    union.matcher_type = q.Or.DEFAULT_MATCHER
    return union


def _highlight_words(text: str) -> re.Pattern | None:
    words = sorted(
        {word for word in WORD_RE.findall(text) if len(word) > 1 or CJK_RE.match(word)}, key=len, reverse=True
    )
    if not words:
        return None
    return re.compile("|".join(re.escape(word) for word in words[:32]), re.IGNORECASE)


def _snippet(stored: dict, words: re.Pattern | None, lang: str) -> str:
    """An escaped window of the first field that contains a query word, the words wrapped in <mark>."""
    for name in SNIPPET_FIELDS.get(lang, SNIPPET_FIELDS["en"]):
        value = stored.get(name) or ""
        found = words.search(value) if words else None
        if found:
            start = max(0, found.start() - SNIPPET_CHARS // 3)
            window = value[start : start + SNIPPET_CHARS]
            marked = words.sub(lambda m: f"\0{m.group(0)}\1", window)
            escaped = html.escape(" ".join(marked.split())).replace("\0", "<mark>").replace("\1", "</mark>")
            return ("… " if start else "") + escaped + (" …" if start + SNIPPET_CHARS < len(value) else "")
    summary = stored.get("summary_zh") if lang == "zh" else stored.get("summary")
    return html.escape(summary or stored.get("summary", ""))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
