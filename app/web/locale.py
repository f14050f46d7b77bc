"""The UI language of a request, and the gettext catalogs that templates translate their strings with.

The language is `?lang=` when given (the language switch's links), else the one remembered in a cookie,
else the best of the browser's `Accept-Language`, else English. Catalogs live in `app/locale/`
(`make messages` extracts and compiles them).
"""

from __future__ import annotations

import gettext
import re
from functools import cache
from pathlib import Path

from jinja2 import pass_context
from starlette.requests import Request
from starlette.responses import Response

from app.entries import CATEGORY_NAMES
from app.search.analysis import CJK, has_cjk

LANGS = ("en", "zh")
HTML_LANGS = {"en": "en", "zh": "zh-CN"}
DEFAULT_LANG = "en"
LANG_COOKIE = "kb_lang"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
PASTE_CJK_SHARE = 0.3  # of the letters: Chinese prose, not a Chinese path inside an English traceback
# what is left after deleting everything else, counted at C speed (a 1 MiB paste in a Python loop: 36 ms)
NOT_CJK_RE = re.compile(rf"[^{CJK}]+")
NOT_LATIN_RE = re.compile(r"[^A-Za-z]+")
GETTEXT_LOCALES = {"zh": "zh_CN"}  # English is the source language: its strings need no catalog


def accepted_lang(header: str | None) -> str | None:
    """The supported language the `Accept-Language` header prefers most (any Chinese variant counts as zh)."""
    best, best_q = None, 0.0
    for part in (header or "").split(",")[:32]:
        tag, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGS and q > best_q:  # the first of equal weights wins, as the header orders them
            best, best_q = primary, q
    return best


def page_lang(request: Request) -> str:
    """`?lang=` wins, then the remembered choice, then the browser's languages, then English."""
    asked = request.query_params.get("lang")
    if asked in LANGS:
        return asked
    remembered = request.cookies.get(LANG_COOKIE)
    if remembered in LANGS:
        return remembered
    return accepted_lang(request.headers.get("accept-language")) or DEFAULT_LANG


def remember_lang(request: Request, response: Response) -> Response:
    """Keep an explicit `?lang=` choice in a cookie, and tell caches the page depends on the language."""
    asked = request.query_params.get("lang")
    if asked in LANGS:
        response.set_cookie(LANG_COOKIE, asked, max_age=365 * 24 * 3600, samesite="lax")
    vary = [value.strip() for value in response.headers.get("Vary", "").split(",") if value.strip()]
    response.headers["Vary"] = ", ".join(dict.fromkeys([*vary, "Accept-Language", "Cookie"]))
    return response


def results_lang(query: str, lang: str) -> str:
    """The language to show entry titles and summaries in: Chinese for a query in Chinese, whatever the UI's."""
    return "zh" if has_cjk(query) else lang


def paste_lang(text: str, lang: str) -> str:
    """Like ``results_lang`` for a paste, which is mostly English tracebacks: Chinese when its own words are.

    A Chinese path, a progress bar or one Chinese sentence above a long traceback leaves the UI's language;
    a paste that is mostly Chinese prose ("rollout 的时候显存不够") switches to Chinese.
    """
    cjk = len(NOT_CJK_RE.sub("", text))
    latin = len(NOT_LATIN_RE.sub("", text))
    return "zh" if cjk and cjk >= PASTE_CJK_SHARE * (cjk + latin) else lang


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled catalog of ``lang``; a missing catalog is an error, not English in disguise."""
    locale = GETTEXT_LOCALES.get(lang)
    if locale is None:
        return gettext.NullTranslations()
    return gettext.translation("messages", LOCALE_DIR, [locale])


@pass_context
def _gettext(context, message: str) -> str:
    return translations(context.get("lang") or DEFAULT_LANG).gettext(message)


@pass_context
def _ngettext(context, singular: str, plural: str, n: int) -> str:
    return translations(context.get("lang") or DEFAULT_LANG).ngettext(singular, plural, n)


@pass_context
def _html_lang(context) -> str:
    return HTML_LANGS.get(context.get("lang"), "en")


@pass_context
def _category_name(context, category: str) -> str:
    english, chinese = CATEGORY_NAMES[category]
    return chinese if context.get("lang") == "zh" else english


def install(env) -> None:
    """Give a Jinja environment `_()`, `gettext`, `ngettext` and `{% trans %}` in the page's `lang`, and
    `html_lang()` and `category_name(code)` in it too."""
    env.add_extension("jinja2.ext.i18n")
    env.install_gettext_callables(_gettext, _ngettext, newstyle=True)
    env.globals.update(html_lang=_html_lang, category_name=_category_name)
