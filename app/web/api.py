"""The JSON API under /api/v1 (contract in DESIGN.md) and /healthz."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from app import answers
from app.answers import dump
from app.cli_report import report_text
from app.entries.model import Category
from app.views import compact_match, compact_search, entry_url
from app.web.deps import FiltersDep, ManualDep, SettingsDep, StateDep, base_url
from app.web.identity import client_address, set_voter_cookie, voter_of
from app.web.match_input import MatchInputDep

router = APIRouter()
HEALTH_DATABASE_BUDGET_S = 1.0
INDEX_HEADER = "X-KB-Index"  # which index generation answered: every answer comes from exactly one
ERRORS = {status: {"model": answers.ErrorResponse} for status in (404, 413, 422, 429, 503)}
# `compact=1` answers a trimmed shape: documented as one of the two, so the contract holds for both
COMPACT_SEARCH = {
    200: {
        "model": answers.SearchOut | answers.CompactSearchOut,
        "description": "The hits; with `compact=1` only code, title and URL of each.",
    }
}
COMPACT_MATCH = {
    200: {
        "model": answers.MatchResponse | answers.CompactMatchResponse,
        "description": "The diagnosis; with `compact=1` trimmed for an LLM's context; with "
        "`format=text` (or `Accept: text/plain`) the report `kb match` prints.",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
}
Compact = Annotated[bool, Query(description="Short answer for LLM context windows: no HTML, scores or blocks.")]
Lang = Annotated[Literal["en", "zh"], Query(description="Language of titles and bodies; falls back to English.")]


@router.get("/healthz", response_model=answers.Health, responses={503: {"model": answers.Health}}, tags=["health"])
async def healthz(state: StateDep) -> JSONResponse:
    """200 when the database and the search index are ready, 503 with the reason otherwise; within a second."""
    manual = state.manual
    database, stalled = await _database_within(state, HEALTH_DATABASE_BUDGET_S)
    ready = manual is not None and database and state.error is None
    body = answers.Health(
        status="ok" if ready else "starting",
        entries=len(manual.catalog) if manual else 0,
        index=manual.content_hash[:14] if manual else None,
        database=database,
        detail=state.error or stalled,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


async def _database_within(state, seconds: float) -> tuple[bool, str | None]:
    """Ask the database in a worker thread, but answer after ``seconds`` whatever it does: under a load
    that starved PostgreSQL for 8-10 s, a health check that waited with it looked like a dead server."""
    with anyio.move_on_after(seconds):
        return await anyio.to_thread.run_sync(state.database_ready, abandon_on_cancel=True), None
    return False, f"the database did not answer within {seconds:g} s"


def _cached_json(request: Request, data: answers.BaseModel | bytes, max_age: int = 60) -> Response:
    """JSON (an answer, or its encoded body) with an ETag; a matching If-None-Match gets 304."""
    body = data if isinstance(data, bytes) else _encode(data)
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Cache-Control": f"public, max-age={max_age}, must-revalidate", "Vary": "Accept-Language"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _encode(answer: answers.BaseModel) -> bytes:
    return json.dumps(dump(answer), ensure_ascii=False, separators=(",", ":")).encode()


@router.get("/api/v1/errors", response_model=answers.ErrorList, responses=ERRORS, tags=["errors"])
def list_errors(request: Request, manual: ManualDep, filters: FiltersDep, lang: Lang = "en") -> Response:
    """Every entry (or those matching the filters), in code order, with each filter's values and counts."""
    answer = manual.browse(filters=filters, lang=lang, base=base_url(request))
    return _cached_json(request, answer.as_list())


@router.get("/api/v1/errors/{code}", response_model=answers.ErrorOut, responses=ERRORS, tags=["errors"])
def get_error(request: Request, code: str, manual: ManualDep, lang: Lang = "en") -> Response:
    """One entry with its fixes ordered by how often they worked."""
    answer = manual.entry(code, lang=lang, base=base_url(request))
    body = manual.cached(("json", *answer.cache_key), lambda: _encode(answer))  # the same answer, encoded once
    return _cached_json(request, body, max_age=30)


@router.get("/api/v1/search", response_model=None, responses={**ERRORS, **COMPACT_SEARCH}, tags=["search"])
def search(
    request: Request,
    manual: ManualDep,
    q: Annotated[str, Query(max_length=2000)] = "",
    category: Category | None = None,
    lang: Lang = "en",
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    page: Annotated[int, Query(ge=1, le=1000)] = 1,
    compact: Compact = False,
):
    """Full-text search in English and Chinese; identifiers are found whole and by parts."""
    answer = manual.search(
        q, category=category, lang=lang, limit=limit, page=page, base=base_url(request), record="api"
    )
    return JSONResponse(
        dump(compact_search(answer) if compact else answer), headers={INDEX_HEADER: manual.content_hash}
    )


MATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": answers.MatchIn.model_json_schema()},
            "multipart/form-data": {"schema": answers.MatchForm.model_json_schema()},
            "text/plain": {
                "schema": {
                    "type": "string",
                    "description": "The log itself (`curl --data-binary @train.log`); `?limit=` sets how many matches.",
                }
            },
        },
    }
}
IMAGE_ERRORS = {status: {"model": answers.ErrorResponse} for status in (413, 415, 422, 503)}


@router.post(
    "/api/v1/match",
    response_model=None,
    openapi_extra=MATCH_BODY,
    responses={**ERRORS, **IMAGE_ERRORS, **COMPACT_MATCH},
    tags=["match"],
)
async def match(
    request: Request,
    given: MatchInputDep,
    manual: ManualDep,
    settings: SettingsDep,
    lang: Lang = "en",
    compact: Compact = False,
    format: Annotated[
        Literal["json", "text"] | None, Query(description="`text`: the report `kb match` prints, for a terminal")
    ] = None,
):
    """Diagnose a traceback or log, or a screenshot of one: the root cause first, cascades marked.

    Send JSON `{"text", "limit"}`, or `multipart/form-data` with an `image` part (PNG, JPEG, WebP); the text
    read from an image comes back as `ocr_text`. Neither text nor image is stored."""
    asked = {"limit": given.limit, "lang": lang, "base": base_url(request)}
    if given.image is not None:
        answer = await run_in_threadpool(lambda: manual.match_image(given.image, **asked))
    else:
        if not given.text.strip():
            raise HTTPException(422, "text is empty: paste an error line, a traceback or a log")
        if len(given.text.encode("utf-8", "replace")) > settings.max_paste_bytes:
            raise HTTPException(
                413, f"the paste exceeds {settings.max_paste_bytes} bytes; send the last part of the log"
            )
        answer = await run_in_threadpool(lambda: manual.match(given.text, **asked))
    headers = {INDEX_HEADER: manual.content_hash}
    if format == "text" or (format is None and _prefers_text(request)):
        return PlainTextResponse(report_text(answer), headers=headers)
    return JSONResponse(dump(compact_match(answer) if compact else answer), headers=headers)


def _prefers_text(request: Request) -> bool:
    """`Accept: text/plain` without JSON in it (curl's default `*/*` keeps JSON)."""
    accept = request.headers.get("accept", "")
    return "text/plain" in accept and "json" not in accept


@router.post(
    "/api/v1/errors/{code}/fixes/{fix_id}/votes",
    response_model=answers.VoteOut,
    status_code=201,
    responses={**ERRORS, 415: {"model": answers.ErrorResponse}},
    tags=["votes"],
)
def vote(
    request: Request, response: Response, code: str, fix_id: str, body: answers.VoteIn, manual: ManualDep
) -> answers.VoteOut:
    """Say whether a fix worked; voting again replaces your earlier vote."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise HTTPException(415, "votes are accepted as application/json only")
    voter, is_new = voter_of(request)
    answer = manual.vote(
        code,
        fix_id,
        voter=voter,
        client=client_address(request),
        worked=body.worked,
        comment=body.comment,
        environment=body.model_dump(exclude={"worked", "comment"}, exclude_none=True),
    )
    if is_new:
        set_voter_cookie(request, response, voter)
    return answer


@router.get("/llms.txt", response_class=PlainTextResponse, include_in_schema=False)
def llms_txt(request: Request, manual: ManualDep) -> str:
    """What the manual is, how to call it, and every entry with its link (for LLM agents)."""
    base = str(request.base_url).rstrip("/")
    lines = [
        "# verl Error Manual",
        "",
        "> Known failures of verl (LLM RL post-training) with root causes and fixes ranked by user votes.",
        "",
        "## API",
        "",
        f'- POST {base}/api/v1/match with JSON {{"text": "<traceback or log>", "limit": 5}}: ranked diagnosis',
        f"- GET {base}/api/v1/search?q=<words>: full-text search (English and Chinese)",
        f"- GET {base}/api/v1/errors/<CODE>: one entry with fixes; {base}/errors/<CODE>.md as Markdown",
        f"- MCP (streamable HTTP): {base}/mcp",
        "",
        "## Entries",
        "",
    ]
    for entry in manual.catalog:
        lines.append(f"- [{entry.code}: {entry.meta.title}]({entry_url(base, entry.code)}.md): {entry.meta.summary}")
    return "\n".join(lines) + "\n"
