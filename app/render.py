"""Markdown to safe HTML: raw HTML disabled, code highlighted by Pygments."""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, _attrs: str) -> str:
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    return highlight(code, lexer, FORMATTER)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # "js-default" escapes raw HTML and refuses javascript: links: entry text can never inject script.
    md = MarkdownIt("js-default", {"highlight": _highlight, "typographer": False})
    md.enable("table")
    return md


@lru_cache(maxsize=4096)
def to_html(text: str) -> str:
    """Render Markdown to HTML with raw HTML escaped."""
    return _markdown().render(text or "")
