"""Browse filters: category, training backend, rollout engine, hardware, model family and verl release.

A facet value counts the entries that name it (an entry naming no backend happens with any backend and
is counted under none); the verl release counts every entry that applies to it, including those that
apply to all releases. Each facet's counts honour the other filters, as a shop's filter sidebar does.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from weakref import WeakKeyDictionary

from packaging.version import Version

from app.entries.catalog import Catalog, Entry
from app.entries.model import CATEGORIES, applies_to_parts

# query parameter -> EntryMeta field holding the entry's values
LIST_FACETS = {"backend": "backends", "engine": "engines", "hardware": "hardware", "model": "models"}
FACETS = ("category", *LIST_FACETS, "verl")
# every verl release on the package registry, newest last (pip index versions verl, at 0.9.1)
VERL_RELEASES = (
    "0.1",
    "0.2",
    "0.2.0.post2",
    "0.3.0.post1",
    "0.4.0",
    "0.4.1",
    "0.5.0",
    "0.6.0",
    "0.6.1",
    "0.7.0",
    "0.7.1",
    "0.8.0",
    "0.9.0",
    "0.9.1",
)


def values_of(entry: Entry, facet: str) -> tuple[str, ...]:
    """The facet values an entry names (for ``verl``: the releases it applies to)."""
    if facet == "category":
        return (entry.category,)
    if facet == "verl":
        return _releases(entry.meta.applies_to)
    return tuple(getattr(entry.meta, LIST_FACETS[facet]))


@lru_cache(maxsize=1024)
def _releases(applies_to: str | None) -> tuple[str, ...]:
    """The verl releases an ``applies_to`` requirement admits (all of them when it names no verl range)."""
    if not applies_to:
        return VERL_RELEASES
    package, specifier = applies_to_parts(applies_to)
    if package != "verl":
        return VERL_RELEASES
    return tuple(release for release in VERL_RELEASES if specifier.contains(Version(release), prereleases=True))


def select(catalog: Catalog, filters: Mapping[str, str | None]) -> list[Entry]:
    """The entries that match every filter given (a None or empty filter matches all)."""
    active = {facet: value for facet, value in filters.items() if value}
    return [entry for entry, values in _table(catalog) if _matches(values, active)]


def counts(catalog: Catalog, filters: Mapping[str, str | None]) -> dict[str, list[dict]]:
    """facet -> [{"value", "count", "selected"}], each counted under the other facets' filters."""
    table = _table(catalog)
    active = {facet: value for facet, value in filters.items() if value}
    result = {}
    for facet in FACETS:
        others = {name: value for name, value in active.items() if name != facet}
        tally: dict[str, int] = {}
        for _entry, values in table:
            if _matches(values, others):
                for value in values[facet]:
                    tally[value] = tally.get(value, 0) + 1
        result[facet] = [
            {"value": value, "count": tally[value], "selected": filters.get(facet) == value}
            for value in _ordered(facet, tally)
        ]
    return result


def _matches(values: dict[str, tuple[str, ...]], active: Mapping[str, str]) -> bool:
    return all(value in values[facet] for facet, value in active.items())


# A catalog's facet values, read once: a browse page filters and counts all entries six times over.
_TABLES: WeakKeyDictionary = WeakKeyDictionary()


def _table(catalog: Catalog) -> list[tuple[Entry, dict[str, tuple[str, ...]]]]:
    table = _TABLES.get(catalog)
    if table is None:
        table = _TABLES[catalog] = [(entry, {facet: values_of(entry, facet) for facet in FACETS}) for entry in catalog]
    return table


def _ordered(facet: str, tally: dict[str, int]) -> list[str]:
    if facet == "category":
        return [category for category in CATEGORIES if category in tally]
    if facet == "verl":
        return [release for release in reversed(VERL_RELEASES) if release in tally]
    return sorted(tally, key=lambda value: (-tally[value], value))
