"""Request dependencies, named once so handler signatures read like prose."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request

from app.entries.facets import VERL_RELEASES
from app.entries.model import Backend, Category, Engine, Hardware
from app.manual import Manual
from app.settings import Settings
from app.web.state import ServerState


# These dependencies only read attributes: async, so they run on the event loop instead of taking a
# worker thread each (FastAPI sends every plain `def` dependency to the thread pool).
async def get_state(request: Request) -> ServerState:
    return request.app.state.kb


async def get_manual(request: Request) -> Manual:
    """The generation being served when the request came in: it answers the whole request."""
    manual = request.app.state.kb.manual
    if manual is None:
        raise HTTPException(503, "the manual is not ready: its content or index is not loaded yet")
    return manual


async def get_settings(request: Request) -> Settings:
    return request.app.state.kb.settings


async def browse_filters(
    category: Category | None = None,
    backend: Annotated[Backend | None, Query(description="Entries specific to this training backend.")] = None,
    engine: Annotated[Engine | None, Query(description="Entries specific to this rollout engine.")] = None,
    hardware: Annotated[Hardware | None, Query(description="Entries specific to this accelerator.")] = None,
    model: Annotated[str | None, Query(max_length=40, description="Entries specific to this model family.")] = None,
    verl: Annotated[str | None, Query(max_length=20, description="Entries that apply to this verl release.")] = None,
) -> dict[str, str | None]:
    """The browse filters of `/errors` and `/api/v1/errors`, checked once for both."""
    if verl and verl not in VERL_RELEASES:
        raise HTTPException(422, f"verl: {verl!r} is not a verl release ({', '.join(VERL_RELEASES)})")
    return {
        "category": category,
        "backend": backend,
        "engine": engine,
        "hardware": hardware,
        "model": model,
        "verl": verl,
    }


StateDep = Annotated[ServerState, Depends(get_state)]
FiltersDep = Annotated[dict, Depends(browse_filters)]
ManualDep = Annotated[Manual, Depends(get_manual)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def base_url(request: Request) -> str:
    """The manual's root as this request reached it (host, proxy prefix): entry links are built under it."""
    return str(request.base_url)
