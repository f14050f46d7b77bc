"""Tokenising for search: identifiers whole and by parts, English stems, Chinese character bigrams.

Chinese is split into overlapping character bigrams (Lucene's CJK approach) rather than with jieba:
bigrams need no dictionary, cost nothing at start-up, and find every word a dictionary would.
"""

from __future__ import annotations

import re
from functools import lru_cache

from whoosh.analysis import Filter, LowercaseFilter, StemFilter, StopFilter, Token, Tokenizer

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
TOKEN_RE = re.compile(rf"[{CJK}]+|[A-Za-z0-9_]+(?:[.\-/:][A-Za-z0-9_]+)*")
CJK_RE = re.compile(rf"^[{CJK}]")
ANY_CJK_RE = re.compile(rf"[{CJK}]")
PART_RE = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+")
PATH_SPLIT_RE = re.compile(r"[./:]+")
WORD_SPLIT_RE = re.compile(r"[_\-]+")


def has_cjk(text: str) -> bool:
    """True when ``text`` holds a Chinese (CJK ideograph) character."""
    return ANY_CJK_RE.search(text or "") is not None


class CodeAwareTokenizer(Tokenizer):
    """Yield identifiers whole and, at the same position, each of their parts; CJK runs as bigrams."""

    def __call__(
        self,
        value,
        positions=False,
        chars=False,
        keeporiginal=False,
        removestops=True,
        start_pos=0,
        start_char=0,
        tokenize=True,
        mode="",
        **kwargs,
    ):
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        position = start_pos
        for match in TOKEN_RE.finditer(value):
            raw = match.group(0)
            if CJK_RE.match(raw):
                for gram, offset in _bigrams(raw):
                    for text in self._words(gram, split=False):
                        yield _emit(token, text, position, start_char + match.start() + offset, len(gram), chars)
                    position += 1
                continue
            for text in self._words(raw, split=True):
                yield _emit(token, text, position, start_char + match.start(), len(raw), chars)
            position += 1

    @staticmethod
    def _words(raw: str, *, split: bool) -> tuple[str, ...]:
        """The tokens one raw word gives at one position: an identifier and its parts, or a CJK bigram."""
        return _parts(raw) if split else (raw,)


def _bigrams(run: str):
    if len(run) == 1:
        yield run, 0
        return
    for offset in range(len(run) - 1):
        yield run[offset : offset + 2], offset


@lru_cache(maxsize=1 << 16)  # an index build splits the same identifiers thousands of times
def _parts(text: str) -> tuple[str, ...]:
    """`actor_rollout_ref.rollout.n` -> itself, every dotted sub-path, each segment and its words."""
    pieces = [text]
    segments = [segment for segment in PATH_SPLIT_RE.split(text) if segment]
    for width in range(len(segments) - 1, 1, -1):
        for start in range(len(segments) - width + 1):
            pieces.append(".".join(segments[start : start + width]))
    for segment in segments:
        pieces.append(segment)
        chunks = [chunk for chunk in WORD_SPLIT_RE.split(segment) if chunk]
        if len(chunks) > 1:
            pieces.extend(chunks)
        for chunk in chunks:
            words = PART_RE.findall(chunk)
            if len(words) > 1 and not chunk.isdigit():
                pieces.extend(word for word in words if len(word) > 1 or word.isalpha())
    seen: set[str] = set()
    return tuple(piece for piece in pieces if not (piece.lower() in seen or seen.add(piece.lower())))


def _emit(token: Token, text: str, position: int, start: int, length: int, chars: bool) -> Token:
    token.text = text
    token.original = text
    token.boost = 1.0
    token.stopped = False
    token.pos = position
    if chars:
        token.startchar = start
        token.endchar = start + length
    return token


STOP_WORDS = frozenset(StopFilter().stops)  # Whoosh's English list, for the chain and the index analyzer alike
_stem = StemFilter()._stem


def stemmed(text: str) -> str:
    """Plain English words stemmed, never identifiers (`batch_size` must stay itself) nor Chinese."""
    return _stem(text) if text.isalpha() and text.isascii() else text


class KeepIdentifiersStemFilter(Filter):
    """``stemmed`` over a token stream."""

    is_morph = True  # skipped when Whoosh builds the spelling word graph, which must hold real words

    def __call__(self, tokens):
        for token in tokens:
            token.text = stemmed(token.text)
            yield token


class IndexAnalyzer(CodeAwareTokenizer):
    """``analyzer()``'s tokens at index time, in one pass: the same texts at the same positions.

    The composed chain runs four generators per token; an index build passes every word of every entry
    through it, and a fifth of a 1,000-entry build went there. Here what a raw word becomes (its parts,
    lower-cased, stop words dropped, plain English words stemmed) is worked out once per distinct word and
    cached. Queries keep the composed chain (they need stopped tokens and character offsets); a test checks
    that both give the same tokens on every entry.
    """

    @staticmethod
    def _words(raw: str, *, split: bool) -> tuple[str, ...]:
        return _indexed(raw, split=split)


@lru_cache(maxsize=1 << 17)
def _indexed(raw: str, *, split: bool) -> tuple[str, ...]:
    """What one raw word becomes in the index: its parts, lower-cased, without stop words, English stemmed."""
    texts = []
    for part in _parts(raw) if split else (raw,):
        text = part.lower()
        if not text or text in STOP_WORDS:
            continue
        texts.append(stemmed(text))
    return tuple(texts)


def analyzer():
    """The analyzer queries go through; the index takes the same tokens from ``IndexAnalyzer``."""
    return (
        CodeAwareTokenizer()
        | LowercaseFilter()
        | StopFilter(stoplist=STOP_WORDS, minsize=1, renumber=False)
        | KeepIdentifiersStemFilter()
    )
