"""Embeds for internal wikis: an entry card, a search box, and oEmbed discovery."""

from __future__ import annotations

import re
from html import escape
from typing import Annotated
from urllib.parse import urlparse

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response

from app import answers
from app.web.deps import ManualDep, SettingsDep, base_url
from app.web.locale import results_lang
from app.web.templating import templates

router = APIRouter()
CARD_FIXES = 3
CARD_SIZE = (480, 360)
ENTRY_PATH_RE = re.compile(r"^/errors/([A-Za-z]+-\d{3})/?$")


@router.get("/embed/errors/{code}", name="embed_entry", include_in_schema=False)
def embed_entry(
    request: Request, code: str, manual: ManualDep, lang: Annotated[str, Query(pattern="^(en|zh)$")] = "en"
) -> Response:
    """A compact card: title, summary, top fixes with their counts, a link to the full entry."""
    data = manual.entry(code, lang=lang, base=base_url(request))
    return templates.TemplateResponse(
        request, "embed/card.html", {"entry": data, "lang": lang, "fixes": data.fixes[:CARD_FIXES]}
    )


@router.get("/embed/search", name="embed_search", include_in_schema=False)
def embed_search(
    request: Request,
    manual: ManualDep,
    q: Annotated[str, Query(max_length=500)] = "",
    lang: Annotated[str, Query(pattern="^(en|zh)$")] = "en",
) -> Response:
    """A search box with results, sized for a wiki sidebar."""
    data = manual.search(q, lang=results_lang(q, lang), limit=8, base=base_url(request)) if q.strip() else None
    return templates.TemplateResponse(request, "embed/search.html", {"q": q, "data": data, "lang": lang})


@router.get(
    "/oembed",
    name="oembed",
    response_model=answers.OEmbedOut,
    tags=["embed"],
    responses={status: {"model": answers.ErrorResponse} for status in (404, 422, 503)},
)
def oembed(
    request: Request,
    manual: ManualDep,
    settings: SettingsDep,
    url: Annotated[str, Query(max_length=2000)],
    format: Annotated[str, Query()] = "json",
    maxwidth: int | None = None,
    maxheight: int | None = None,
) -> answers.OEmbedOut:
    """oEmbed for entry pages: a `rich` type whose html is an iframe of the card."""
    if format != "json":
        # oEmbed suggests 501 here; a client error is the truer answer and keeps 5xx for our own faults
        raise HTTPException(422, "only format=json is supported")
    match = ENTRY_PATH_RE.match(urlparse(url).path or "")
    if not match:
        raise HTTPException(404, "the url is not an entry page of this manual")
    entry = manual.get(match.group(1))
    width = min(maxwidth or CARD_SIZE[0], CARD_SIZE[0]) if maxwidth else CARD_SIZE[0]
    height = min(maxheight or CARD_SIZE[1], CARD_SIZE[1]) if maxheight else CARD_SIZE[1]
    src = f"{settings.base_url}/embed/errors/{entry.code}"
    title = f"{entry.code}: {entry.meta.title}"
    html = (
        f'<iframe src="{escape(src)}" width="{width}" height="{height}" title="{escape(title)}" '
        f'style="border:1px solid #d0d7de;border-radius:8px" loading="lazy"></iframe>'
    )
    return answers.OEmbedOut(
        type="rich",
        version="1.0",
        title=title,
        provider_name="verl Error Manual",
        provider_url=settings.base_url,
        html=html,
        width=width,
        height=height,
        cache_age=3600,
    )
