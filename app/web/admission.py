"""Admission control: a bounded number of requests at work, a bounded queue, and a fast 503 beyond it.

Without a bound, every request that arrives starts at once: each takes a worker thread and a database
connection, a burst exhausts both, and every request (health checks included) then waits behind it. A
slot is taken before any work starts, so a request never holds a thread or a connection while it waits.
"""

from __future__ import annotations

import asyncio
import math

from app.settings import Settings
from app.web.middleware import JSON_PATHS, error_body

# Cheap or long-lived requests that must never queue: the health probe, static files, and the MCP
# event stream (a GET that stays open while idle and would otherwise hold a slot for its lifetime).
EXEMPT_PREFIXES = ("/healthz", "/static/")


class AdmissionLimit:
    """Let ``max_concurrent_requests`` requests work at once and ``max_queued_requests`` wait for a slot."""

    def __init__(self, app, settings: Settings):
        self.app = app
        self.capacity = settings.max_concurrent_requests
        self.queue_limit = settings.max_queued_requests
        self.timeout = settings.queue_timeout
        self.retry_after = str(max(1, math.ceil(self.timeout / 4)))
        self.slots: asyncio.Semaphore | None = None  # made in the server's event loop, on first use
        self.waiting = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or _exempt(scope):
            return await self.app(scope, receive, send)
        if self.slots is None:
            self.slots = asyncio.Semaphore(self.capacity)
        if self.slots.locked():
            if self.waiting >= self.queue_limit:
                return await self._refuse(scope, send, "the manual is busy: too many requests are waiting")
            self.waiting += 1
            try:
                await asyncio.wait_for(self.slots.acquire(), self.timeout)
            except TimeoutError:
                return await self._refuse(scope, send, f"the manual is busy: no slot freed within {self.timeout:g} s")
            finally:
                self.waiting -= 1
        else:
            await self.slots.acquire()
        try:
            await self.app(scope, receive, send)
        finally:
            self.slots.release()

    async def _refuse(self, scope, send, message: str) -> None:
        if scope["path"].startswith(JSON_PATHS):
            body, media = error_body("overloaded", message), b"application/json"
        else:
            body, media = (
                f"<!doctype html><title>Busy</title><p>{message}; retry in a moment.</p>".encode(),
                b"text/html",
            )
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", media),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", self.retry_after.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _exempt(scope) -> bool:
    path = scope["path"]
    return path.startswith(EXEMPT_PREFIXES) or (path == "/mcp" and scope["method"] == "GET")
