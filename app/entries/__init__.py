"""Error entries: schema, parsing, loading and the catalog."""

from app.entries.catalog import Catalog, Entry
from app.entries.loader import ContentError, Problem, load_catalog, load_catalog_strict
from app.entries.model import CATEGORIES, CATEGORY_NAMES, EntryMeta, Fix

__all__ = [
    "CATEGORIES",
    "CATEGORY_NAMES",
    "Catalog",
    "ContentError",
    "Entry",
    "EntryMeta",
    "Fix",
    "Problem",
    "load_catalog",
    "load_catalog_strict",
]
