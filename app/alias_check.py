"""Aliases must tell their entry apart: search ranks an entry up for every word of its aliases.

An alias made only of words that most entries' titles and summaries share ('vllm 报错', 'training error')
would lift its entry for every query that says them, and an alias that several entries declare cannot
choose between them; both are refused by `kb check`.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from app.entries import Catalog, Entry, Problem
from app.search.analysis import analyzer
from app.search.index import described

# a word in the titles, summaries, tags or aliases of more than this share of the entries says little
COMMON_SHARE = 0.15
COMMON_AT_LEAST = 5  # in a handful of entries no word is common
MAX_ENTRIES_PER_ALIAS = 2


def check_aliases(catalog: Catalog) -> list[Problem]:
    """Every alias needs one word that few entries use, and no alias may be declared by more than two."""
    tokenize = analyzer()
    heads = {entry.code: set(_tokens(tokenize, described(entry))) for entry in catalog}
    frequency = Counter(token for tokens in heads.values() for token in tokens)
    common = {token for token, count in frequency.items() if count > max(COMMON_SHARE * len(catalog), COMMON_AT_LEAST)}
    declared: dict[str, list[tuple[Entry, int]]] = defaultdict(list)
    problems = []
    for entry in catalog:
        for index, alias in enumerate(entry.meta.aliases):
            tokens = _tokens(tokenize, alias)
            declared[" ".join(tokens)].append((entry, index))
            if tokens and all(token in common for token in tokens):
                problems.append(
                    _problem(
                        entry,
                        index,
                        f"aliases.{index}: {alias!r} is made of words most entries use "
                        f"({', '.join(sorted(set(tokens)))}); name what sets this failure apart",
                    )
                )
    for key, places in declared.items():
        codes = sorted({entry.code for entry, _ in places})
        if key and len(codes) > MAX_ENTRIES_PER_ALIAS:
            for entry, index in places:
                alias = entry.meta.aliases[index]
                problems.append(
                    _problem(
                        entry,
                        index,
                        f"aliases.{index}: {alias!r} is an alias of {len(codes)} entries ({', '.join(codes)})",
                    )
                )
    return problems


def _tokens(tokenize, text: str) -> list[str]:
    return [token.text for token in tokenize(text)]


def _problem(entry: Entry, index: int, message: str) -> Problem:
    return Problem(str(entry.path), entry.line_of("aliases", index), message)
