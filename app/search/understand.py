"""Read a query as the concepts a user means: their words, a symptom's synonyms, the words inside Chinese text.

A concept is found when any of its alternatives is; an alternative is found when all of its pieces are. A
piece is an English word (whole, or by its parts), a Chinese word (all of its character bigrams) or a stretch
of Chinese text that is no known word (any of its bigrams: a sentence such as 初始化模型卡住 has no single
word an entry contains, and requiring every bigram of it found nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.search.analysis import CJK, CJK_RE
from app.search.synonyms import Synonyms

SPLIT_RE = re.compile(rf"[{CJK}]+|[^{CJK}]+")
MIN_CHINESE_STRETCH = 2  # a lone character left between two known words says little on its own


@dataclass(frozen=True)
class Piece:
    tokens: tuple[str, ...]
    kind: str  # "term": (whole, part, ...); "chinese": every bigram; "chinese_any": any bigram


@dataclass(frozen=True)
class Concept:
    label: str  # the user's own words, to say which were left out
    alternatives: tuple[tuple[Piece, ...], ...]
    # a question's frame ('does', 'how to', '能否') or 'error' says little about which failure is meant
    weight: float = 1.0


LIGHT_WEIGHT = 0.3


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


class QueryReader:
    """Turn query text into concepts, expanding the words of the synonym groups."""

    def __init__(self, analyzer, synonyms: Synonyms):
        self._analyzer = analyzer
        self._chinese = synonyms.chinese_words()
        self._phrases: dict[tuple[str, ...], str] = {}
        for word, group in synonyms.other_words():
            key = tuple(tokens[0].text for tokens in self._groups(word))
            if key:
                self._phrases.setdefault(key, group)
        self._longest = max((len(key) for key in self._phrases), default=1)
        self._alternatives = {name: self._group_alternatives(words) for name, words in synonyms.groups.items()}
        self._light = synonyms.light
        for word in synonyms.light:
            if CJK_RE.match(word):
                self._chinese.append((word, ""))
        self._chinese.sort(key=lambda pair: -len(pair[0]))

    def read(self, text: str, unique: bool = True) -> list[Concept]:
        """The concepts of a query in the order the user wrote them, each once unless ``unique`` is off
        (a log line's repeated words are what the matcher's fallback ranks by)."""
        concepts: list[Concept] = []
        for match in SPLIT_RE.finditer(text):
            stretch = match.group(0)
            concepts += self._read_chinese(stretch) if CJK_RE.match(stretch) else self._read_other(stretch)
        if not unique:
            return concepts
        unique_concepts: dict[tuple, Concept] = {}
        for concept in concepts:
            unique_concepts.setdefault(concept.alternatives, concept)
        return list(unique_concepts.values())

    def _read_chinese(self, run: str) -> list[Concept]:
        concepts, rest, position = [], "", 0
        while position < len(run):
            found = next(((word, group) for word, group in self._chinese if run.startswith(word, position)), None)
            if found is None:
                rest += run[position]
                position += 1
                continue
            concepts.append(self._stretch(rest))
            rest = ""
            if found[1]:
                concepts.append(self._group_concept(found[0], found[1]))
            position += len(found[0])
        concepts.append(self._stretch(rest))
        return [concept for concept in concepts if concept is not None]

    @staticmethod
    def _stretch(text: str) -> Concept | None:
        if len(text) < MIN_CHINESE_STRETCH:
            return None
        return Concept(text, ((Piece(bigrams(text), "chinese_any"),),))

    def _read_other(self, text: str) -> list[Concept]:
        groups = self._groups(text)
        concepts, position = [], 0
        while position < len(groups):
            for width in range(min(self._longest, len(groups) - position), 0, -1):
                window = groups[position : position + width]
                group = self._phrases.get(tuple(tokens[0].text for tokens in window))
                if group:
                    label = text[window[0][0].start : window[-1][0].end]
                    concepts.append(self._group_concept(label, group))
                    position += width
                    break
            else:
                tokens = groups[position]
                label = text[tokens[0].start : tokens[0].end]
                weight = LIGHT_WEIGHT if label.lower() in self._light else 1.0
                concepts.append(Concept(label, ((_term(tokens),),), weight))
                position += 1
        return concepts

    def _group_concept(self, label: str, group: str) -> Concept:
        weight = LIGHT_WEIGHT if group in self._light else 1.0
        return Concept(label, self._alternatives[group], weight)

    def _group_alternatives(self, words: tuple[str, ...]) -> tuple[tuple[Piece, ...], ...]:
        alternatives: dict[tuple[Piece, ...], None] = {}
        for word in words:
            if CJK_RE.match(word):
                alternatives[(Piece(bigrams(word), "chinese"),)] = None
            else:
                pieces = tuple(_term(tokens) for tokens in self._groups(word))
                if pieces:
                    alternatives[pieces] = None
        return tuple(alternatives)

    def _groups(self, text: str) -> list[list[Token]]:
        """Analyzed tokens grouped by position: [whole, part, part, ...], with where each came from."""
        groups: dict[int, list[Token]] = {}
        for token in self._analyzer(text, positions=True, chars=True, mode="query"):
            groups.setdefault(token.pos, []).append(Token(token.text, token.startchar, token.endchar))
        return [groups[position] for position in sorted(groups)]


def _term(tokens: list[Token]) -> Piece:
    return Piece(tuple(dict.fromkeys(token.text for token in tokens)), "term")


def bigrams(text: str) -> tuple[str, ...]:
    """Overlapping character pairs, as the index holds Chinese text; one character is its own token."""
    if len(text) == 1:
        return (text,)
    return tuple(dict.fromkeys(text[i : i + 2] for i in range(len(text) - 1)))
