"""Every document's score under a query at once, as numpy arrays.

Whoosh scores a query by walking a tree of matchers one posting at a time in Python: at 10,000 entries a search
spent four fifths of its time there (moving the union matchers, looking up each document's field length, calling
the scorer). Here a term's postings are read a block at a time and scored with Whoosh's BM25F formula over arrays
(the same statistics, the same field lengths, the same operations in the same order), and a union or an
intersection adds its children's arrays as Whoosh's matchers add their scores. A query this module does not know
(a phrase, whose score comes from its spans) is scored by Whoosh's own matcher, so every query gets Whoosh's
scores (`test_dense_scores_are_whooshs_scores` compares them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from whoosh import query as q
from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.scoring import BM25FScorer


class TermScores:
    """Each term's (document numbers, BM25F scores) for one index generation, the most recently used kept up to
    ``max_postings`` postings in all; shared by the threads searching that generation."""

    def __init__(self, max_postings: int):
        self.max_postings = max_postings
        self._items: OrderedDict[tuple[str, bytes], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, bytes], value: tuple[np.ndarray, np.ndarray]) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._held += len(value[0])
            while self._held > self.max_postings and self._items:
                _key, (ids, _scores) = self._items.popitem(last=False)
                self._held -= len(ids)


class DenseScorer:
    """Scores queries over one searcher's documents; ``lengths`` holds each scored field's length per document and
    ``terms`` the term scores already computed for this index generation."""

    def __init__(self, searcher, lengths: dict[str, np.ndarray], terms: TermScores):
        self.searcher = searcher
        self.reader = searcher.reader()
        self.count = searcher.doc_count_all()
        self.lengths = lengths
        self.terms = terms
        # a searcher over several segments numbers documents per segment: its postings cannot be read flat
        self.flat = searcher.is_atomic()

    @staticmethod
    def field_lengths(searcher, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Each document's length in each field, as the scorer reads it (Whoosh stores it rounded to a byte)."""
        count = searcher.doc_count_all()
        return {
            name: np.array([searcher.doc_field_length(docnum, name, 1) for docnum in range(count)], dtype=np.float64)
            for name in fields
        }

    def matches(self, query: q.Query) -> np.ndarray:
        """Which documents ``query`` matches (a boolean per document)."""
        return self.scores(query)[0]

    def scores(self, query: q.Query) -> tuple[np.ndarray, np.ndarray]:
        """(matched, score) per document: the score Whoosh's matcher for ``query`` gives, 0 where it does not match."""
        if not self.flat:
            return self._by_matcher(query)
        if query is q.NullQuery:
            return self._none()
        if type(query) is q.Term:
            return self._term(query)
        if type(query) is q.And or (type(query) is q.Or and not query.minmatch and not query.scale):
            return self._compound(query)  # both add their matching children's scores
        return self._by_matcher(query)

    def _none(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.count, dtype=bool), np.zeros(self.count, dtype=np.float64)

    def _term(self, query: q.Term) -> tuple[np.ndarray, np.ndarray]:
        schema = self.searcher.schema
        if query.fieldname not in schema:
            return self._none()
        try:
            text = schema[query.fieldname].to_bytes(query.text)
        except ValueError:
            return self._none()
        key = (query.fieldname, text)
        found = self.terms.get(key)
        if found is None:
            if key not in self.reader:
                return self._none()
            found = self._term_scores(*key)
            if found is None:
                return self._by_matcher(query)
            self.terms.put(key, found)
        ids, score = found
        if query.boost != 1.0:
            score = score * query.boost
        matched, scores = self._none()
        matched[ids] = True
        scores[ids] = score
        return matched, scores

    def _term_scores(self, fieldname: str, text: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's documents and BM25F scores, or None when Whoosh would not score it with BM25F."""
        scorer = self.searcher.weighting.scorer(self.searcher, fieldname, text)
        postings = self.reader.postings(fieldname, text, scorer=scorer)
        if not isinstance(scorer, BM25FScorer) or not isinstance(postings, W3LeafMatcher):
            return None
        ids, weights = _read_postings(postings)
        length = self.lengths[fieldname][ids]
        # whoosh.scoring.bm25, operation for operation
        K1, B = scorer.K1, scorer.B
        return ids, scorer.idf * ((weights * (K1 + 1)) / (weights + K1 * ((1 - B) + B * length / scorer.avgfl)))

    def _compound(self, query: q.Or | q.And) -> tuple[np.ndarray, np.ndarray]:
        subqueries = query.subqueries
        if not subqueries:
            return self._none()
        if len(subqueries) == 1:  # Whoosh's CompoundQuery.matcher: the one child alone, the compound's boost unused
            return self.scores(subqueries[0])
        parts = [self.scores(subquery) for subquery in subqueries]
        if isinstance(query, q.And):
            matched = np.logical_and.reduce([part[0] for part in parts])
        else:
            matched = np.logical_or.reduce([part[0] for part in parts])
        scores = np.zeros(self.count, dtype=np.float64)
        for _part_matched, part_scores in parts:
            scores += part_scores  # 0 where the part does not match (``scores``' contract)
        if isinstance(query, q.And):
            scores = np.where(matched, scores, 0.0)  # a document some parts lack is no match
        if query.boost != 1.0:
            scores = scores * query.boost
        return matched, scores

    def _by_matcher(self, query: q.Query) -> tuple[np.ndarray, np.ndarray]:
        """Whoosh's own matcher, one posting at a time: phrases, and whatever this module does not score itself."""
        matched, scores = self._none()
        matcher = query.matcher(self.searcher)
        while matcher.is_active():
            docnum = matcher.id()
            matched[docnum] = True
            scores[docnum] = matcher.score()
            matcher.next()
        return matched, scores


def _read_postings(postings: W3LeafMatcher) -> tuple[np.ndarray, np.ndarray]:
    """A term's document numbers and weights, a block at a time (Whoosh's leaf matcher keeps each block's arrays)."""
    ids: list[int] = []
    weights: list[float] = []  # a block holds float32s, or the doubles it was written with
    while postings.is_active():
        if postings._ids is None:
            postings._read_ids()
        if postings._weights is None:
            postings._read_weights()
        ids.extend(postings._ids[postings._i :])
        weights.extend(postings._weights[postings._i :])
        postings._next_block()
    return np.array(ids, dtype=np.int64), np.array(weights, dtype=np.float64)
