"""The body of POST /api/v1/match: JSON `{"text", "limit"}`, `multipart/form-data` with an `image` or `text`
part, or the log itself as a raw body (`curl --data-binary @train.log`, which curl labels as a form)."""

from __future__ import annotations

import email.errors
import email.parser
import email.policy
import json
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from app.answers import MatchForm, MatchIn

MULTIPART = "multipart/form-data"
FORM_FIELDS = ("image", "text", "limit")
# A node with curl but not this package sends the log as it is: `--data-binary` says
# application/x-www-form-urlencoded unless told otherwise, and a log is no form.
RAW_TYPES = ("text/plain", "application/x-www-form-urlencoded", "application/octet-stream", "")
DEFAULT_LIMIT = 5


@dataclass(frozen=True)
class MatchInput:
    text: str | None
    image: bytes | None
    limit: int


def content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


async def read_match_input(request: Request) -> MatchInput:
    """Parse either body; invalid input raises the API's 422 (the body size was bounded by the middleware)."""
    body = await request.body()
    if content_type(request) == MULTIPART:
        return _from_form(parse_form(request.headers.get("content-type", ""), body))
    if content_type(request) in RAW_TYPES:
        return MatchInput(body.decode("utf-8", "replace"), None, _query_limit(request))
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        raise HTTPException(422, "the body is not JSON this API can read (malformed or nested too deeply)") from None
    try:
        parsed = MatchIn.model_validate(payload)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from None
    return MatchInput(parsed.text, None, parsed.limit)


def _query_limit(request: Request) -> int:
    raw = request.query_params.get("limit", str(DEFAULT_LIMIT))
    if not raw.isdigit() or not 1 <= int(raw) <= 20:
        raise HTTPException(422, "limit must be a whole number from 1 to 20")
    return int(raw)


def parse_form(header: str, body: bytes) -> dict[str, bytes]:
    """The named parts of a multipart body, in memory (an uploaded screenshot never touches the disk)."""
    try:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + header.encode("latin-1") + b"\r\n\r\n" + body
        )
        if not message.is_multipart():
            raise ValueError("no parts")
        parts = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name in FORM_FIELDS and name not in parts:
                parts[name] = part.get_payload(decode=True) or b""
        return parts
    except (ValueError, TypeError, LookupError, UnicodeError, email.errors.MessageError):
        raise HTTPException(
            422, "the multipart body cannot be read; send the screenshot as a file part named `image`"
        ) from None


def _from_form(parts: dict[str, bytes]) -> MatchInput:
    try:
        text = parts["text"].decode("utf-8", "replace") if "text" in parts else None
        form = MatchForm(image=parts.get("image"), text=text, limit=parts.get("limit", b"5").decode("ascii", "replace"))
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from None
    if form.image is None and not (form.text or "").strip():
        raise HTTPException(422, "send a screenshot as the `image` part, or the paste as the `text` part")
    return MatchInput(form.text, form.image, form.limit)


# First among a route's parameters: the body is read before any dependency runs in the thread pool, while
# the request is surely still connected (a client that half-closes after sending is then still answered)
MatchInputDep = Annotated[MatchInput, Depends(read_match_input)]


async def read_paste_form(request: Request) -> MatchInput:
    """The /paste form: `text` (URL-encoded, or multipart with an `image` file part); never 4xx for a blank field."""
    body = await request.body()
    if content_type(request) == MULTIPART:
        parts = parse_form(request.headers.get("content-type", ""), body)
        text = parts.get("text", b"").decode("utf-8", "replace")
        return MatchInput(text, parts.get("image") or None, 5)
    form = await request.form()
    text = form.get("text")
    return MatchInput(text if isinstance(text, str) else "", None, 5)


PasteFormDep = Annotated[MatchInput, Depends(read_paste_form)]
