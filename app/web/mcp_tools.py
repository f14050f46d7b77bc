"""MCP tools at /mcp (streamable HTTP): the same data as the JSON API, for agents.

No `from __future__ import annotations` here: the tool signatures close over run-time limits."""

import base64
import binascii
from typing import Annotated

from fastapi import FastAPI
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError  # its message reaches the agent; other errors' do not
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from app import answers as a
from app.manual import Manual, Moved, Refused
from app.ocr import ImageRejected
from app.settings import Settings

MCP_VOTER_PREFIX = "mcp:"


def build_mcp(app: FastAPI, settings: Settings) -> MCPServer:
    """Create the MCP server whose tools ask the Manual being served."""
    server = MCPServer(
        name="verl-error-manual",
        version="1.0",
        instructions="Diagnose verl (LLM RL post-training) failures: call diagnose_log with a traceback or log, "
        "then get_error for the full entry; report_fix_outcome records whether a fix worked.",
    )

    def manual() -> Manual:
        served = app.state.kb.manual
        if served is None:
            raise ToolError("the manual is not ready: its index is not loaded")
        return served

    @server.tool(
        description="Full-text search of the manual (English or Chinese); identifiers match whole or by parts."
    )
    def search_errors(
        query: Annotated[str, Field(description="Words, an error message or a config key", max_length=2000)],
        category: Annotated[str | None, Field(description="ENV, CFG, DATA, ROLL, TRAIN, DIST or CKPT")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> a.SearchOut:
        return _answer(lambda: manual().search(query, category=category, limit=limit, record="api"))

    @server.tool(
        description="Diagnose a verl traceback or training log, given as text or as a screenshot (base64 "
        "PNG, JPEG or WebP): root cause first, cascades marked, fixes ranked by votes. For an "
        "image the answer's `ocr_text` is the text read from it."
    )
    async def diagnose_log(
        text: Annotated[
            str | None,
            Field(description="An error line, a traceback or a whole log", max_length=settings.max_paste_bytes),
        ] = None,
        image_base64: Annotated[
            str | None,
            Field(description="A screenshot of the error, base64-encoded", max_length=settings.max_body_bytes),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=20)] = 5,
    ) -> a.MatchResponse:
        served = manual()
        if image_base64:
            try:
                image = base64.b64decode(image_base64, validate=True)
            except binascii.Error:
                raise ToolError("image_base64 is not valid base64") from None
            try:
                return await run_in_threadpool(lambda: served.match_image(image, limit=limit))
            except ImageRejected as rejected:
                raise ToolError(f"{rejected.code}: {rejected.message}") from None
        if not (text or "").strip():
            raise ToolError("give the error as `text`, or a screenshot of it as `image_base64`")
        return await run_in_threadpool(lambda: served.match(text, limit=limit))

    @server.tool(description="One entry of the manual with its fixes ordered by how often they worked.")
    def get_error(
        code: Annotated[str, Field(description="An entry code such as ROLL-001")], lang: str = "en"
    ) -> a.ErrorOut:
        return _answer(lambda: _entry_or_its_successor(manual(), code, "zh" if lang == "zh" else "en"))

    @server.tool(
        description="Record whether a fix worked; one vote per agent session and fix, a second replaces the first."
    )
    def report_fix_outcome(
        code: str,
        fix_id: str,
        worked: bool,
        comment: Annotated[str | None, Field(max_length=500)] = None,
        reporter: Annotated[
            str, Field(description="A stable id of the user or agent reporting", min_length=1, max_length=56)
        ] = "anonymous",
    ) -> a.FixOutcomeOut:
        voted = _answer(
            lambda: manual().vote(
                code, fix_id, voter=MCP_VOTER_PREFIX + reporter, client="mcp", worked=worked, comment=comment
            )
        )
        return a.FixOutcomeOut(code=voted.code, fix=voted.fix, recorded=True)

    @server.tool(
        description="Say that a match of diagnose_log was not the user's error (right=false), or that it "
        "was (right=true): maintainers see which entries answer the wrong errors."
    )
    def report_wrong_match(
        code: Annotated[str, Field(description="The code of the match", max_length=16)],
        fingerprint: Annotated[
            str, Field(description="`fingerprint` of the diagnose_log answer", pattern=a.FINGERPRINT_PATTERN)
        ],
        right: bool = False,
        reporter: Annotated[
            str, Field(description="A stable id of the user or agent reporting", min_length=1, max_length=56)
        ] = "anonymous",
    ) -> a.FeedbackOut:
        return _answer(
            lambda: manual().feedback(code, fingerprint, voter=MCP_VOTER_PREFIX + reporter, client="mcp", right=right)
        )

    return server


def mount_mcp(app: FastAPI, server: MCPServer, settings: Settings) -> None:
    """Add the streamable-HTTP route at /mcp; Host/Origin checks allow the configured hostnames."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(settings.allowed_hosts),
        allowed_origins=[f"{scheme}://{host}" for host in settings.allowed_hosts for scheme in ("http", "https")],
    )
    mcp_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=security,
        max_request_body_size=settings.max_body_bytes + 65536,
    )
    for route in mcp_app.routes:
        app.router.routes.append(route)


def _entry_or_its_successor(manual: Manual, code: str, lang: str) -> a.ErrorOut:
    """An agent cannot follow a redirect: a retired code answers with the entry it was folded into."""
    try:
        return manual.entry(code, lang=lang)
    except Moved as moved:
        return manual.entry(moved.now, lang=lang)


def _answer(call):
    """The tool's answer, or what the manual refused (an unknown code, the vote limits) as the agent's error."""
    try:
        return call()
    except Refused as refused:
        raise ToolError(refused.message) from None
