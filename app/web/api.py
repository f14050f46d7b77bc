"""The JSON API under /api/v1 (contract in DESIGN.md) and /healthz."""

from __future__ import annotations

import hashlib
import json

import anyio
import anyio.to_thread
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from app.cli_report import report_text
from app.entries.model import Category
from app.web import schemas
from app.web.deps import FiltersDep, SettingsDep, SnapshotDep, StateDep, entry_url, get_entry_or_404
from app.web.identity import client_address, set_voter_cookie, voter_of
from app.web.match_input import MatchInputDep
from app.web.voting import VoteRefused, cast_vote
from app.views import browse_data, compact_match, compact_search, entry_data, search_data

router = APIRouter()
HEALTH_DATABASE_BUDGET_S = 1.0
INDEX_HEADER = "X-KB-Index"  # which index generation answered: every answer comes from exactly one
ERRORS = {status: {"model": schemas.ErrorResponse} for status in (404, 413, 422, 429, 503)}
# `compact=1` answers a trimmed shape: documented as one of the two, so the contract holds for both
COMPACT_SEARCH = {200: {"model": schemas.SearchOut | schemas.CompactSearchOut,
                        "description": "The hits; with `compact=1` only code, title and URL of each."}}
COMPACT_MATCH = {200: {"model": schemas.MatchResponse | schemas.CompactMatchResponse,
                       "description": "The diagnosis; with `compact=1` trimmed for an LLM's context; with "
                                      "`format=text` (or `Accept: text/plain`) the report `kb match` prints.",
                       "content": {"text/plain": {"schema": {"type": "string"}}}}}
Compact = Annotated[bool, Query(description="Short answer for LLM context windows: no HTML, scores or blocks.")]
Lang = Annotated[Literal["en", "zh"], Query(description="Language of titles and bodies; falls back to English.")]


@router.get("/healthz", response_model=schemas.Health, responses={503: {"model": schemas.Health}}, tags=["health"])
async def healthz(state: StateDep) -> JSONResponse:
    """200 when the database and the search index are ready, 503 with the reason otherwise; within a second."""
    snapshot = state.snapshot
    database, stalled = await _database_within(state, HEALTH_DATABASE_BUDGET_S)
    ready = snapshot is not None and database and state.error is None
    body = schemas.Health(
        status="ok" if ready else "starting", entries=len(snapshot.catalog) if snapshot else 0,
        index=snapshot.content_hash[:14] if snapshot else None, database=database, detail=state.error or stalled,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


async def _database_within(state, seconds: float) -> tuple[bool, str | None]:
    """Ask the database in a worker thread, but answer after ``seconds`` whatever it does: under a load
    that starved PostgreSQL for 8-10 s, a health check that waited with it looked like a dead server."""
    with anyio.move_on_after(seconds):
        return await anyio.to_thread.run_sync(state.database_ready, abandon_on_cancel=True), None
    return False, f"the database did not answer within {seconds:g} s"


def _cached_json(request: Request, data: dict | bytes, max_age: int = 60) -> Response:
    """JSON (a dict, or its encoded body) with an ETag; a matching If-None-Match gets 304."""
    body = data if isinstance(data, bytes) else _encode(data)
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Cache-Control": f"public, max-age={max_age}, must-revalidate", "Vary": "Accept-Language"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _encode(data: dict) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


@router.get("/api/v1/errors", response_model=schemas.ErrorList, responses=ERRORS, tags=["errors"])
def list_errors(request: Request, state: StateDep, snapshot: SnapshotDep, filters: FiltersDep,
                lang: Lang = "en") -> Response:
    """Every entry (or those matching the filters), in code order, with each filter's values and counts."""
    with state.session() as session:
        data = browse_data(snapshot.catalog, session, lang, entry_url(request), filters=filters)
    errors = [{key: row[key] for key in ("code", "title", "category", "summary", "exception", "url")} for row in data["errors"]]
    return _cached_json(request, {"errors": errors, "total": len(errors), "facets": data["facets"]})


@router.get("/api/v1/errors/{code}", response_model=schemas.ErrorOut, responses=ERRORS, tags=["errors"])
def get_error(request: Request, code: str, state: StateDep, snapshot: SnapshotDep, lang: Lang = "en") -> Response:
    """One entry with its fixes ordered by how often they worked."""
    entry = get_entry_or_404(snapshot, code)
    votes = state.entry_votes(entry.code)
    # like the entry page: the same entry with the same votes is the same answer, encoded once
    key = ("json", entry.code, lang, str(request.base_url), votes.key)
    body = snapshot.pages.get(key)
    if body is None:
        body = _encode(entry_data(entry, snapshot.catalog, votes, lang, entry_url(request)))
        snapshot.pages.put(key, body)
    return _cached_json(request, body, max_age=30)


@router.get("/api/v1/search", response_model=None, responses={**ERRORS, **COMPACT_SEARCH}, tags=["search"])
def search(request: Request, response: Response, state: StateDep, snapshot: SnapshotDep,
           q: Annotated[str, Query(max_length=2000)] = "", category: Category | None = None, lang: Lang = "en",
           limit: Annotated[int, Query(ge=1, le=100)] = 10, page: Annotated[int, Query(ge=1, le=1000)] = 1,
           compact: Compact = False):
    """Full-text search in English and Chinese; identifiers are found whole and by parts."""
    result = snapshot.search.search(q, category=category, lang=lang, limit=limit, page=page)
    if page == 1:
        state.recorder.searched(q, result.total, on_page=False)
    data = search_data(result, lang, entry_url(request), query=q, category=category, page=page, limit=limit)
    response.headers[INDEX_HEADER] = snapshot.content_hash
    return JSONResponse(compact_search(data), headers={INDEX_HEADER: snapshot.content_hash}) if compact else data


MATCH_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": schemas.MatchIn.model_json_schema()},
    "multipart/form-data": {"schema": schemas.MatchForm.model_json_schema()},
    "text/plain": {"schema": {"type": "string", "description": "The log itself (`curl --data-binary @train.log`); "
                                                               "`?limit=` sets how many matches."}},
}}}
IMAGE_ERRORS = {status: {"model": schemas.ErrorResponse} for status in (413, 415, 422, 503)}


@router.post("/api/v1/match", response_model=None, openapi_extra=MATCH_BODY,
             responses={**ERRORS, **IMAGE_ERRORS, **COMPACT_MATCH}, tags=["match"])
async def match(request: Request, given: MatchInputDep, state: StateDep, snapshot: SnapshotDep,
                settings: SettingsDep, lang: Lang = "en", compact: Compact = False,
                format: Annotated[Literal["json", "text"] | None, Query(
                    description="`text`: the report `kb match` prints, for a terminal")] = None):
    """Diagnose a traceback or log, or a screenshot of one: the root cause first, cascades marked.

    Send JSON `{"text", "limit"}`, or `multipart/form-data` with an `image` part (PNG, JPEG, WebP); the text
    read from an image comes back as `ocr_text`. Neither text nor image is stored."""
    url_for = entry_url(request)
    if given.image is not None:
        _, data = await run_in_threadpool(state.diagnose_image, snapshot, given.image, given.limit, lang, url_for)
    else:
        if not given.text.strip():
            raise HTTPException(422, "text is empty: paste an error line, a traceback or a log")
        if len(given.text.encode("utf-8", "replace")) > settings.max_paste_bytes:
            raise HTTPException(413, f"the paste exceeds {settings.max_paste_bytes} bytes; send the last part of the log")
        _, data = await run_in_threadpool(state.diagnose, snapshot, given.text, given.limit, lang, url_for)
    headers = {INDEX_HEADER: snapshot.content_hash}
    if format == "text" or (format is None and _prefers_text(request)):
        return PlainTextResponse(report_text(data), headers=headers)
    return JSONResponse(compact_match(data) if compact else data, headers=headers)


def _prefers_text(request: Request) -> bool:
    """`Accept: text/plain` without JSON in it (curl's default `*/*` keeps JSON)."""
    accept = request.headers.get("accept", "")
    return "text/plain" in accept and "json" not in accept


@router.post("/api/v1/errors/{code}/fixes/{fix_id}/votes", response_model=schemas.VoteOut, status_code=201,
             responses={**ERRORS, 415: {"model": schemas.ErrorResponse}}, tags=["votes"])
def vote(request: Request, response: Response, code: str, fix_id: str, body: schemas.VoteIn, state: StateDep,
         snapshot: SnapshotDep) -> dict:
    """Say whether a fix worked; voting again replaces your earlier vote."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise HTTPException(415, "votes are accepted as application/json only")
    entry = get_entry_or_404(snapshot, code)
    voter, is_new = voter_of(request)
    try:
        with state.session() as session:
            fix = cast_vote(state, session, entry, fix_id, voter=voter, client=client_address(request),
                            worked=body.worked, comment=body.comment,
                            environment=body.model_dump(exclude={"worked", "comment"}, exclude_none=True))
    except VoteRefused as refused:
        headers = {"Retry-After": str(refused.retry_after)} if refused.retry_after else None
        raise HTTPException(refused.status, refused.message, headers=headers) from None
    if is_new:
        set_voter_cookie(request, response, voter)
    return {"code": entry.code, "fix": fix, "your_vote": body.worked}


@router.get("/llms.txt", response_class=PlainTextResponse, include_in_schema=False)
def llms_txt(request: Request, snapshot: SnapshotDep) -> str:
    """What the manual is, how to call it, and every entry with its link (for LLM agents)."""
    base = str(request.base_url).rstrip("/")
    lines = [
        "# verl Error Manual", "",
        "> Known failures of verl (LLM RL post-training) with root causes and fixes ranked by user votes.", "",
        "## API", "",
        f"- POST {base}/api/v1/match with JSON {{\"text\": \"<traceback or log>\", \"limit\": 5}}: ranked diagnosis",
        f"- GET {base}/api/v1/search?q=<words>: full-text search (English and Chinese)",
        f"- GET {base}/api/v1/errors/<CODE>: one entry with fixes; {base}/errors/<CODE>.md as Markdown",
        f"- MCP (streamable HTTP): {base}/mcp", "", "## Entries", "",
    ]
    for entry in snapshot.catalog:
        lines.append(f"- [{entry.code}: {entry.meta.title}]({base}/errors/{entry.code}.md): {entry.meta.summary}")
    return "\n".join(lines) + "\n"
