"""The maintainers' view: `/insights` and `GET /api/v1/insights`, behind KB_INSIGHTS_TOKEN (404 when unset)."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse

from app import answers
from app.answers import dump
from app.web.deps import ManualDep, SettingsDep
from app.web.pages import render

router = APIRouter()
PRIVATE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}  # the page's URL may hold the token


def _require_token(request: Request, expected: str, *, query_allowed: bool) -> None:
    """404 when the view is off, 401 without the right token (header, or `?token=` on the page)."""
    if not expected:
        raise HTTPException(404, "not found")
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    given = value.strip() if scheme.lower() == "bearer" else ""
    if not given and query_allowed:
        given = request.query_params.get("token", "")
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(
            401,
            "this view needs the insights token (Authorization: Bearer <token>)",
            headers={"WWW-Authenticate": "Bearer"},
        )


@router.get(
    "/api/v1/insights",
    response_model=answers.InsightsOut,
    tags=["insights"],
    responses={status: {"model": answers.ErrorResponse} for status in (401, 404, 503)},
)
def insights_api(request: Request, manual: ManualDep, settings: SettingsDep) -> Response:
    """For maintainers: errors the manual missed, searches that found nothing or were not opened, matches
    users said were wrong, fixes that fail more than they work; each sorted by how many people it hit."""
    _require_token(request, settings.insights_token, query_allowed=False)
    return JSONResponse(dump(manual.insights()), headers=PRIVATE)


@router.get("/insights", name="insights_page", include_in_schema=False)
def insights_page(request: Request, manual: ManualDep, settings: SettingsDep) -> Response:
    _require_token(request, settings.insights_token, query_allowed=True)
    response = render(request, "insights.html", {"data": manual.insights(), "recording": settings.record_misses})
    response.headers.update(PRIVATE)
    return response
