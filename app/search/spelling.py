"""Typo correction over the manual's own words: a symmetric-delete dictionary (the SymSpell idea).

Every word and every one-letter deletion of it point back to the word; a query word's own deletions
then find candidates within two edits (transpositions included) with a few dictionary look-ups.
"""

from __future__ import annotations

import re
from collections import Counter

WORD_RE = re.compile(r"[a-z]{3,40}")


def vocabulary(texts) -> Counter:
    """Count the lowercase words of some texts."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(WORD_RE.findall(text.lower()))
    return counts


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment), small words only."""
    previous2, previous = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if previous2 is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


class Speller:
    """Known words with their counts, and the closest known word to a typo."""

    def __init__(self, counts: dict[str, int]):
        self.counts = dict(counts)
        self._index: dict[str, set[str]] = {}
        for word in self.counts:
            for key in {word} | _deletes(word):
                self._index.setdefault(key, set()).add(word)

    def __contains__(self, word: str) -> bool:
        return word in self.counts

    def correct(self, word: str, max_distance: int = 2) -> str | None:
        """The most frequent known word within ``max_distance`` edits, nearest first; None if there is none."""
        word = word.lower()
        if word in self.counts:
            return word
        candidates: set[str] = set()
        for key in {word} | _deletes(word):
            candidates |= self._index.get(key, set())
        scored = [(_distance(word, candidate), -self.counts[candidate], candidate) for candidate in candidates]
        scored = [row for row in scored if row[0] <= max_distance]
        return min(scored)[2] if scored else None
