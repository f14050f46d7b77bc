"""HTML pages: they work without JavaScript; static/kb.js makes search and votes live."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.entries.model import Category
from app.manual import Manual
from app.ocr import ImageRejected
from app.views import entry_url, uncovered_crash
from app.web.deps import FiltersDep, ManualDep, base_url
from app.web.identity import client_address, csrf_token, form_voter, set_voter_cookie, voter_of
from app.web.locale import page_lang, paste_lang, remember_lang, results_lang, translations
from app.web.match_input import PasteFormDep
from app.web.templating import templates

router = APIRouter(include_in_schema=False)
CONTEXT_LINES = 3  # lines shown around each matched line
# Stands for the voter's CSRF token in a cached page; random, so no entry text can contain it.
CSRF_SLOT = "csrf-" + secrets.token_hex(16)


def render(request: Request, template: str, context: dict, status_code: int = 200) -> Response:
    """Render a page with the shared context (language, voter CSRF token); remember the language."""
    lang = context.get("lang") or page_lang(request)
    voter, is_new = voter_of(request)
    context = {"lang": lang, "csrf": csrf_token(request.app.state.kb.secret, voter), **context}
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    return _remember(request, response, voter, is_new)


def render_cached(
    request: Request, manual: Manual, key: tuple, template: str, make_context: Callable[[], dict]
) -> Response:
    """Like ``render``, but the HTML is made once per ``key`` (which must name everything the page shows
    besides the language and the host) and reused with only the voter's CSRF token put in."""
    lang = page_lang(request)
    voter, is_new = voter_of(request)
    key = ("page", template, lang, str(request.base_url), *key)
    html = manual.cached(
        key,
        lambda: templates.get_template(template).render(
            {"request": request, "lang": lang, "csrf": CSRF_SLOT, **make_context()}
        ),
    )
    response = HTMLResponse(html.replace(CSRF_SLOT, csrf_token(request.app.state.kb.secret, voter)))
    return _remember(request, response, voter, is_new)


def _remember(request: Request, response: Response, voter: str, is_new: bool) -> Response:
    remember_lang(request, response)
    if is_new:
        set_voter_cookie(request, response, voter)
    return response


@router.get("/", name="home")
def home(request: Request, manual: ManualDep) -> Response:
    answer = manual.home(lang=page_lang(request))
    return render(
        request, "home.html", {"categories": answer.categories, "most_voted": answer.most_voted, "total": answer.total}
    )


@router.get("/search", name="search_page")
def search_page(
    request: Request,
    manual: ManualDep,
    q: Annotated[str, Query(max_length=2000)] = "",
    category: Category | None = None,
    page: Annotated[int, Query(ge=1, le=1000)] = 1,
    fragment: bool = False,
) -> Response:
    lang = page_lang(request)
    # as-you-type fragments are half-typed words: only a submitted search counts for the insights
    # a query in Chinese gets Chinese titles and snippets in any UI language
    data = (
        manual.search(
            q,
            category=category,
            lang=results_lang(q, lang),
            limit=10,
            page=page,
            base=base_url(request),
            record=None if fragment else "page",
        )
        if q.strip()
        else None
    )
    template = "_results.html" if fragment else "search.html"
    # a submitted search's result links say which search they came from: opening one counts for it
    return render(
        request,
        template,
        {
            "q": q,
            "category": category,
            "data": data,
            "track_opens": not fragment,
            "categories": manual.categories(lang=lang),
        },
    )


@router.get("/errors", name="browse_page")
def browse_page(
    request: Request,
    manual: ManualDep,
    filters: FiltersDep,
    sort: Annotated[str, Query(pattern="^(code|votes)$")] = "code",
) -> Response:
    data = manual.browse(filters=filters, sort=sort, lang=page_lang(request), base=base_url(request))
    return render(request, "errors.html", {"data": data})


@router.get("/errors/{code}.md", name="entry_markdown")
def entry_markdown_page(code: str, manual: ManualDep, request: Request) -> PlainTextResponse:
    text = manual.markdown(code, lang=page_lang(request), base=base_url(request))
    return remember_lang(request, PlainTextResponse(text, media_type="text/markdown; charset=utf-8"))


@router.get("/errors/{code}", name="entry_page")
def entry_page(request: Request, code: str, manual: ManualDep) -> Response:
    entry = manual.entry(code, lang=page_lang(request), base=base_url(request))
    if code != entry.code:
        return RedirectResponse(entry.url, status_code=301)
    voted = request.query_params.get("voted")
    if request.query_params.get("sq"):  # opened from the search page's results (see _results.html)
        manual.opened(request.query_params["sq"])
    return render_cached(
        request, manual, (voted, *entry.cache_key), "entry.html", lambda: {"entry": entry, "voted": voted}
    )


@router.get("/paste", name="paste_page")
def paste_form(request: Request) -> Response:
    return render(request, "paste.html", {"text": "", "result": None})


@router.post("/paste")
async def paste_submit(request: Request, given: PasteFormDep, manual: ManualDep) -> Response:
    """Diagnose the pasted text, or the text read from an uploaded screenshot (shown in the box to correct)."""
    lang = page_lang(request)
    asked = {"limit": 5, "lang": lang, "base": base_url(request), "context": CONTEXT_LINES}
    text, ocr_text = given.text or "", None
    try:
        if given.image is not None:
            result = await run_in_threadpool(lambda: manual.match_image(given.image, **asked))
            text = ocr_text = result.ocr_text
        elif text.strip():
            asked["lang"] = paste_lang(text, lang)  # a paste in Chinese: Chinese titles in any UI language
            result = await run_in_threadpool(lambda: manual.match(text, **asked))
        else:
            problem = translations(lang).gettext("Paste an error line, a traceback or a log first.")
            return render(request, "paste.html", {"text": "", "result": None, "problem": problem}, 422)
    except ImageRejected as rejected:
        return render(
            request, "paste.html", {"text": text, "result": None, "problem": rejected.message}, rejected.status
        )
    return render(
        request,
        "paste.html",
        {
            "text": text,
            "result": result,
            "crash": uncovered_crash(result),
            "feedback": manual.settings.record_misses,
            "ocr_text": ocr_text,
        },
    )


@router.post("/errors/{code}/fixes/{fix_id}/vote", name="vote_form")
def vote_form(
    request: Request,
    code: str,
    fix_id: str,
    manual: ManualDep,
    worked: Annotated[str, Form(pattern="^(yes|no)$")],
    csrf: Annotated[str, Form()] = "",
    comment: Annotated[str, Form(max_length=500)] = "",
) -> Response:
    """The no-JavaScript vote: a form POST with a CSRF token, then back to the entry."""
    manual.get(code)
    voter = form_voter(request, csrf, "the form expired; reload the page and vote again")
    manual.vote(
        code,
        fix_id,
        voter=voter,
        client=client_address(request),
        worked=worked == "yes",
        comment=comment.strip() or None,
    )
    target = f"{entry_url(base_url(request), manual.get(code).code)}?voted={quote(fix_id)}#fix-{fix_id}"
    return RedirectResponse(target, status_code=303)
