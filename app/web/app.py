"""The application factory: nothing is opened at import; the lifespan opens and closes everything."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.manual import Moved, Refused
from app.ocr import ImageRejected
from app.settings import ROOT, Settings
from app.store.db import make_engine
from app.web import api, embed, feedback, insights, pages
from app.web.admission import AdmissionLimit
from app.web.locale import page_lang, remember_lang
from app.web.mcp_tools import build_mcp, mount_mcp
from app.web.middleware import (
    JSON_PATHS,
    BodyLimitMiddleware,
    HeadAsGetMiddleware,
    SecurityHeadersMiddleware,
    error_body,
)
from app.web.state import ServerState
from app.web.templating import templates

log = logging.getLogger("kb")
RELOAD_POLL_SECONDS = 2.0
BODY_PARSE_ERROR = "There was an error parsing the body"
STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "rate_limited",
    503: "not_ready",
}
POOL_RETRY_AFTER = "2"


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app for ``settings`` (read from the environment when omitted)."""
    settings = settings or Settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(settings)
        state = ServerState(settings, engine)
        await asyncio.to_thread(state.load)
        state.recorder.start()
        app.state.kb = state
        watcher = asyncio.create_task(_watch_index(state))
        try:
            async with mcp_server.session_manager.run():
                yield
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await asyncio.to_thread(state.recorder.close)
            engine.dispose()

    app = FastAPI(
        title="verl Error Manual",
        version="1.0",
        description="Paste a verl traceback or training log; get the root cause and the fixes that worked.",
        lifespan=lifespan,
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
    )
    app.mount("/static", StaticFiles(directory=ROOT / "static"), name="static")
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(embed.router)
    app.include_router(feedback.router)
    app.include_router(insights.router)
    _plain_logging()
    mcp_server = build_mcp(app, settings)
    mount_mcp(app, mcp_server, settings)
    _error_handlers(app)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["content-type"],
            allow_credentials=False,
        )
    app.add_middleware(AdmissionLimit, settings=settings)
    app.add_middleware(SecurityHeadersMiddleware, settings=settings)
    app.add_middleware(BodyLimitMiddleware, settings=settings)
    app.add_middleware(HeadAsGetMiddleware)
    return app


def _plain_logging() -> None:
    """Give the root logger a plain handler unless the host (uvicorn, pytest) set one already.

    The MCP library otherwise installs a Rich handler on the root logger; every exception it logs, such as
    a client that hung up mid-stream, was then rendered with syntax-highlighted tracebacks on the event
    loop, about 50 ms each: after a burst of disconnects /healthz waited seconds behind them.
    """
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


async def _watch_index(state: ServerState) -> None:
    """Pick up an index that `kb index` swapped in, without a restart and without dropping requests."""
    while True:
        await asyncio.sleep(RELOAD_POLL_SECONDS)
        try:
            if await asyncio.to_thread(state.reload_if_changed):
                log.info("serving the new index %s", state.manual.content_hash[:14])
        except Exception:  # keep serving the old generation; the next poll tries again
            log.exception("index reload failed")


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith(JSON_PATHS) or request.url.path.endswith(".json")


def _error_page(request: Request, context: dict, status_code: int, headers: dict | None = None) -> Response:
    """The HTML error page, in the language the request's pages are in."""
    context = {"lang": page_lang(request), **context}
    response = templates.TemplateResponse(request, "error.html", context, status_code=status_code, headers=headers)
    return remember_lang(request, response)


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 400 and message.startswith(BODY_PARSE_ERROR):
            # a body the JSON parser gave up on (too deeply nested, not UTF-8) is invalid input like any other
            exc = StarletteHTTPException(422, "the body is not JSON this API can read (malformed or nested too deeply)")
            message = exc.detail
        code = STATUS_CODES.get(exc.status_code, "error")
        if _wants_json(request):
            return Response(
                error_body(code, message),
                exc.status_code,
                media_type="application/json",
                headers=getattr(exc, "headers", None),
            )
        return _error_page(
            request, {"status": exc.status_code, "message": message}, exc.status_code, getattr(exc, "headers", None)
        )

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> Response:
        if isinstance(exc, Moved):
            # a retired code: the same page or API path of the entry it was folded into, query string kept
            path = re.sub(re.escape(f"/{exc.code}"), f"/{exc.now}", request.url.path, count=1, flags=re.IGNORECASE)
            target = request.url.replace(path=path)
            return RedirectResponse(str(target), 301 if request.method in ("GET", "HEAD") else 308)
        # what the manual declined (unknown code or fix, vote limits, a store that failed), said like any HTTP error
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return await http_error(request, StarletteHTTPException(exc.status, exc.message, headers=headers))

    @app.exception_handler(ImageRejected)
    async def image_rejected(request: Request, exc: ImageRejected) -> Response:
        headers = {"Retry-After": POOL_RETRY_AFTER} if exc.status == 503 else None
        if _wants_json(request):
            return Response(
                error_body(exc.code, exc.message), exc.status, media_type="application/json", headers=headers
            )
        return _error_page(request, {"status": exc.status, "message": exc.message}, exc.status, headers)

    @app.exception_handler(PoolTimeout)
    async def pool_exhausted(request: Request, exc: PoolTimeout) -> Response:
        # every pooled connection stayed busy for the whole pool timeout: say so, do not answer 500
        return Response(
            error_body("overloaded", "the database is busy; retry in a moment"),
            503,
            media_type="application/json",
            headers={"Retry-After": POOL_RETRY_AFTER},
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = f"{where}: {first.get('msg', 'invalid input')}" if where else first.get("msg", "invalid input")
        if _wants_json(request):
            return JSONResponse({"error": {"code": "invalid_input", "message": message}}, 422)
        return _error_page(request, {"status": 422, "message": message}, 422)
