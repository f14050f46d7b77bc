"""HTML pages: they work without JavaScript; static/kb.js makes search and votes live."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.entries.model import Category
from app.lru import LRU
from app.ocr import ImageRejected
from app.votes import fix_stats, ranked_fixes
from app.web.deps import FiltersDep, SnapshotDep, StateDep, entry_url, get_entry_or_404
from app.web.entry_markdown import entry_markdown
from app.web.identity import client_address, csrf_token, form_voter, set_voter_cookie, voter_of
from app.web.match_input import PasteFormDep
from app.web.voting import VoteRefused, cast_vote
from app.web.templating import templates
from app.web.urls import url_for
from app.views import browse_data, categories_data, entry_data, search_data, uncovered_crash

router = APIRouter(include_in_schema=False)
LANG_COOKIE = "kb_lang"
TOP_FIXES = 6
# Stands for the voter's CSRF token in a cached page; random, so no entry text can contain it.
CSRF_SLOT = "csrf-" + secrets.token_hex(16)


def page_lang(request: Request) -> str:
    """`?lang=` wins, then the remembered choice, then English."""
    asked = request.query_params.get("lang")
    if asked in ("en", "zh"):
        return asked
    return "zh" if request.cookies.get(LANG_COOKIE) == "zh" else "en"


def render(request: Request, template: str, context: dict, status_code: int = 200) -> Response:
    """Render a page with the shared context (language, voter CSRF token); remember the language."""
    lang = context.get("lang") or page_lang(request)
    voter, is_new = voter_of(request)
    context = {"lang": lang, "csrf": csrf_token(request.app.state.kb.secret, voter), **context}
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    return _remember(request, response, lang, voter, is_new)


def render_cached(request: Request, pages: LRU[str], key: tuple, template: str,
                  make_context: Callable[[], dict]) -> Response:
    """Like ``render``, but the HTML is made once per ``key`` (which must name everything the page shows
    besides the language and the host) and reused with only the voter's CSRF token put in."""
    lang = page_lang(request)
    voter, is_new = voter_of(request)
    key = (template, lang, str(request.base_url), *key)
    html = pages.get(key)
    if html is None:
        context = {"request": request, "lang": lang, "csrf": CSRF_SLOT, **make_context()}
        html = templates.get_template(template).render(context)
        pages.put(key, html)
    response = HTMLResponse(html.replace(CSRF_SLOT, csrf_token(request.app.state.kb.secret, voter)))
    return _remember(request, response, lang, voter, is_new)


def _remember(request: Request, response: Response, lang: str, voter: str, is_new: bool) -> Response:
    if request.query_params.get("lang") in ("en", "zh"):
        response.set_cookie(LANG_COOKIE, lang, max_age=365 * 24 * 3600, samesite="lax")
    if is_new:
        set_voter_cookie(request, response, voter)
    return response


@router.get("/", name="home")
def home(request: Request, state: StateDep, snapshot: SnapshotDep) -> Response:
    lang = page_lang(request)
    with state.session() as session:
        stats = fix_stats(session=session)
    top = sorted(((key, stat) for key, stat in stats.items() if stat.votes_up), key=lambda kv: (-kv[1].votes_up, kv[0]))
    most_voted = []
    for (code, fix_id), stat in top[:TOP_FIXES]:
        entry = snapshot.catalog.get(code)
        fix = entry.fix(fix_id) if entry else None
        if fix:
            most_voted.append({"code": code, "fix_id": fix_id, "title": fix.title_zh if lang == "zh" else fix.title,
                               "entry_title": entry.meta.title, "votes_up": stat.votes_up, "total": stat.total})
    return render(request, "home.html", {
        "categories": categories_data(snapshot.catalog, lang), "most_voted": most_voted,
        "total": len(snapshot.catalog),
    })


@router.get("/search", name="search_page")
def search_page(request: Request, state: StateDep, snapshot: SnapshotDep,
                q: Annotated[str, Query(max_length=2000)] = "", category: Category | None = None,
                page: Annotated[int, Query(ge=1, le=1000)] = 1, fragment: bool = False) -> Response:
    lang = page_lang(request)
    result = snapshot.search.search(q, category=category, lang=lang, limit=10, page=page) if q.strip() else None
    if result is not None and page == 1 and not fragment:  # as-you-type fragments are half-typed words
        state.recorder.searched(q, result.total, on_page=True)
    data = search_data(result, lang, entry_url(request), query=q, category=category, page=page, limit=10) if result else None
    template = "_results.html" if fragment else "search.html"
    # a submitted search's result links say which search they came from: opening one counts for it
    return render(request, template, {"q": q, "category": category, "data": data, "track_opens": not fragment,
                                      "categories": categories_data(snapshot.catalog, lang)})


@router.get("/errors", name="browse_page")
def browse_page(request: Request, state: StateDep, snapshot: SnapshotDep, filters: FiltersDep,
                sort: Annotated[str, Query(pattern="^(code|votes)$")] = "code") -> Response:
    lang = page_lang(request)
    with state.session() as session:
        data = browse_data(snapshot.catalog, session, lang, entry_url(request), filters=filters, sort=sort)
    return render(request, "errors.html", {"data": data})


@router.get("/errors/{code}.md", name="entry_markdown")
def entry_markdown_page(code: str, state: StateDep, snapshot: SnapshotDep, request: Request) -> PlainTextResponse:
    entry = get_entry_or_404(snapshot, code)
    with state.session() as session:
        ordered = ranked_fixes(entry, fix_stats(session=session, codes=[entry.code]))
    text = entry_markdown(entry, ordered, page_lang(request), str(url_for(request, "entry_page", code=entry.code)))
    return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")


@router.get("/errors/{code}", name="entry_page")
def entry_page(request: Request, code: str, state: StateDep, snapshot: SnapshotDep) -> Response:
    entry = get_entry_or_404(snapshot, code)
    if code != entry.code:
        return RedirectResponse(url_for(request, "entry_page", code=entry.code), status_code=301)
    votes = state.entry_votes(entry.code)
    voted = request.query_params.get("voted")
    if request.query_params.get("sq"):  # opened from the search page's results (see _results.html)
        state.recorder.opened(request.query_params["sq"])

    def context() -> dict:
        data = entry_data(entry, snapshot.catalog, votes, page_lang(request), entry_url(request))
        return {"entry": data, "voted": voted}

    return render_cached(request, snapshot.pages, (entry.code, voted, votes.key), "entry.html", context)


@router.get("/paste", name="paste_page")
def paste_form(request: Request) -> Response:
    return render(request, "paste.html", {"text": "", "result": None})


@router.post("/paste")
async def paste_submit(request: Request, given: PasteFormDep, state: StateDep, snapshot: SnapshotDep) -> Response:
    """Diagnose the pasted text, or the text read from an uploaded screenshot (shown in the box to correct)."""
    lang = page_lang(request)
    text, ocr_text = given.text or "", None
    try:
        if given.image is not None:
            diagnosis, result = await run_in_threadpool(state.diagnose_image, snapshot, given.image, 5, lang,
                                                        entry_url(request))
            text = ocr_text = result["ocr_text"]
        elif text.strip():
            diagnosis, result = await run_in_threadpool(state.diagnose, snapshot, text, 5, lang, entry_url(request))
        else:
            return render(request, "paste.html", {"text": "", "result": None,
                                                  "problem": "Paste an error line, a traceback or a log first."}, 422)
    except ImageRejected as rejected:
        return render(request, "paste.html", {"text": text, "result": None, "problem": rejected.message},
                      rejected.status)
    lines = diagnosis.paste.lines
    for match, raw in zip(result["matches"], diagnosis.matches):
        match["context"] = _context(lines, raw.line_index)
    return render(request, "paste.html", {"text": text, "result": result, "crash": uncovered_crash(result),
                                          "feedback": state.settings.record_misses, "ocr_text": ocr_text})


def _context(lines: list[str], index: int | None, around: int = 3) -> list[dict]:
    if index is None:
        return []
    start, stop = max(0, index - around), min(len(lines), index + around + 1)
    return [{"text": lines[i][:400], "hit": i == index} for i in range(start, stop)]


@router.post("/errors/{code}/fixes/{fix_id}/vote", name="vote_form")
def vote_form(request: Request, code: str, fix_id: str, state: StateDep, snapshot: SnapshotDep,
              worked: Annotated[str, Form(pattern="^(yes|no)$")],
              csrf: Annotated[str, Form()] = "", comment: Annotated[str, Form(max_length=500)] = "") -> Response:
    """The no-JavaScript vote: a form POST with a CSRF token, then back to the entry."""
    entry = get_entry_or_404(snapshot, code)
    voter = form_voter(request, csrf, "the form expired; reload the page and vote again")
    try:
        with state.session() as session:
            cast_vote(state, session, entry, fix_id, voter=voter, client=client_address(request),
                      worked=worked == "yes", comment=comment.strip() or None)
    except VoteRefused as refused:
        raise HTTPException(refused.status, refused.message) from None
    target = str(url_for(request, "entry_page", code=code).include_query_params(voted=fix_id)) + f"#fix-{fix_id}"
    return RedirectResponse(target, status_code=303)
