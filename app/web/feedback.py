""" "This is not my error": the JSON API, the paste page's form and (in mcp_tools) an MCP tool, one rule."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request, Response

from app import answers
from app.web.deps import ManualDep
from app.web.identity import client_address, form_voter, set_voter_cookie, voter_of
from app.web.pages import render

router = APIRouter()
ERRORS = {status: {"model": answers.ErrorResponse} for status in (404, 413, 415, 422, 429, 503)}


@router.post(
    "/api/v1/matches/feedback", response_model=answers.FeedbackOut, status_code=201, responses=ERRORS, tags=["match"]
)
def match_feedback(
    request: Request, response: Response, body: answers.FeedbackIn, manual: ManualDep
) -> answers.FeedbackOut:
    """Say whether a match was your error (`right: false`: it was not); saying it again replaces your word.
    Counted like votes: one per voter, entry and fingerprint, under the same rate limit."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise HTTPException(415, "reports are accepted as application/json only")
    voter, is_new = voter_of(request)
    answer = manual.feedback(body.code, body.fingerprint, voter=voter, client=client_address(request), right=body.right)
    if is_new:
        set_voter_cookie(request, response, voter)
    return answer


@router.post("/matches/feedback", name="match_feedback_form", include_in_schema=False)
def match_feedback_form(
    request: Request,
    manual: ManualDep,
    code: Annotated[str, Form(max_length=16)],
    fingerprint: Annotated[str, Form(pattern=answers.FINGERPRINT_PATTERN)],
    csrf: Annotated[str, Form()] = "",
) -> Response:
    """The paste page's "This is not my error" button, without JavaScript: a form POST with a CSRF token."""
    manual.get(code)
    voter = form_voter(request, csrf, "the form expired; diagnose the paste again and report it then")
    answer = manual.feedback(code, fingerprint, voter=voter, client=client_address(request), right=False)
    return render(request, "paste.html", {"text": "", "result": None, "reported": answer.code})
