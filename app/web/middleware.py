"""ASGI middleware: body size limit before reading, security headers on every response, HEAD as GET."""

from __future__ import annotations

import json

from app.settings import Settings

JSON_PATHS = ("/api/", "/mcp", "/oembed")
ENVELOPE_BYTES = 64 * 1024


def error_body(code: str, message: str) -> bytes:
    """The one JSON error shape used everywhere."""
    return json.dumps({"error": {"code": code, "message": message}}).encode()


class BodyLimitMiddleware:
    """Answer 413 for bodies over the limit: at once from Content-Length, or as soon as a stream exceeds it.

    A body without a declared length is read here, up to the limit, and replayed to the app: an error
    raised from inside the app's own body reading would be turned into a 400 by the framework.
    """

    def __init__(self, app, settings: Settings):
        self.app = app
        # a JSON or form envelope may wrap a paste of the full allowed size; only an upload (multipart) and
        # MCP (a base64 screenshot) may carry an image, so only they get the image's larger allowance
        self.limit = settings.max_paste_bytes + ENVELOPE_BYTES
        self.image_limit = settings.max_body_bytes + ENVELOPE_BYTES

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        carries_image = scope["path"] == "/mcp" or headers.get(b"content-type", b"").lower().startswith(b"multipart/")
        limit = self.image_limit if carries_image else self.limit
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > limit:
                return await self._too_large(send, limit)
            return await self.app(scope, receive, send)  # the server stops reading at the declared length
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            size += len(message.get("body", b""))
            if size > limit:
                return await self._too_large(send, limit)
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send, limit: int):
        setting = "KB_MAX_IMAGE_BYTES" if limit == self.image_limit else "KB_MAX_PASTE_BYTES"
        body = error_body(
            "payload_too_large", f"the body exceeds {limit} bytes ({setting} plus {ENVELOPE_BYTES} for the envelope)"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class SecurityHeadersMiddleware:
    """CSP, no sniffing, a strict referrer policy; only `/embed/*` may be framed, and only by the allowlist."""

    def __init__(self, app, settings: Settings):
        self.app = app
        self.embed_ancestors = settings.embed_frame_ancestors

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        embed = scope["path"].startswith("/embed/")
        ancestors = self.embed_ancestors if embed else "'none'"
        csp = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            f"object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors {ancestors}"
        )

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"content-security-policy"]
                headers += [
                    (b"content-security-policy", csp.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"strict-origin-when-cross-origin"),
                ]
                if not embed:
                    headers.append((b"x-frame-options", b"DENY"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGetMiddleware:
    """Answer HEAD like GET without the body (link checkers and chat unfurlers ask HEAD first).

    The routes declare GET only; the answer's headers, Content-Length included, are the GET answer's.
    """

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_headers_only(message):
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, send_headers_only)
