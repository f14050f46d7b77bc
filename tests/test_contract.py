"""The answer contract: every JSON route's real answers to real requests, and every MCP tool's structured output,
are what the documents say (OpenAPI for HTTP, each tool's outputSchema for MCP)."""

from __future__ import annotations

import asyncio

import httpx
import jsonschema
import pytest
import schemathesis
from mcp import Client

from app.ingest import ingest
from app.web.app import create_app
from tests.conftest import LiveServer

TOKEN = "insights-token-" + "x" * 16
KV = "(WorkerDict pid=1, ip=10.0.0.1) ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
FORM = "application/x-www-form-urlencoded"

# (method, path template, how to call it): the real requests each JSON operation is checked with
CALLS = [
    ("GET", "/healthz", {}),
    ("GET", "/api/v1/errors", {}),
    ("GET", "/api/v1/errors", {"params": {"category": "ROLL", "lang": "zh"}}),
    ("GET", "/api/v1/errors", {"params": {"verl": "not-a-release"}}),
    ("GET", "/api/v1/errors/{code}", {"path": "/api/v1/errors/ROLL-901"}),
    ("GET", "/api/v1/errors/{code}", {"path": "/api/v1/errors/ROLL-901", "params": {"lang": "zh"}}),
    ("GET", "/api/v1/errors/{code}", {"path": "/api/v1/errors/CFG-999"}),
    ("GET", "/api/v1/search", {"params": {"q": "watchdog timeout"}}),
    ("GET", "/api/v1/search", {"params": {"q": "watchdog timeout", "compact": "1"}}),
    ("GET", "/api/v1/search", {"params": {"q": "x", "limit": "0"}}),
    ("POST", "/api/v1/match", {"json": {"text": KV}}),
    ("POST", "/api/v1/match", {"json": {"text": KV}, "params": {"compact": "1"}}),
    ("POST", "/api/v1/match", {"content": "no error in here\n", "headers": {"content-type": "text/plain"}}),
    ("POST", "/api/v1/match", {"json": {"text": "  "}}),
    ("POST", "/api/v1/match", {"files": {"image": ("shot.png", b"not an image", "image/png")}}),
    (
        "POST",
        "/api/v1/errors/{code}/fixes/{fix_id}/votes",
        {"path": "/api/v1/errors/ROLL-901/fixes/raise-gpu-memory-utilization/votes", "json": {"worked": True}},
    ),
    (
        "POST",
        "/api/v1/errors/{code}/fixes/{fix_id}/votes",
        {"path": "/api/v1/errors/ROLL-901/fixes/no-such-fix/votes", "json": {"worked": False}},
    ),
    (
        "POST",
        "/api/v1/errors/{code}/fixes/{fix_id}/votes",
        {
            "path": "/api/v1/errors/ROLL-901/fixes/raise-gpu-memory-utilization/votes",
            "content": "worked=1",
            "headers": {"content-type": FORM},
        },
    ),
    (
        "POST",
        "/api/v1/matches/feedback",
        {"json": {"code": "ROLL-901", "fingerprint": "0123456789abcdef", "right": False}},
    ),
    (
        "POST",
        "/api/v1/matches/feedback",
        {"json": {"code": "CFG-999", "fingerprint": "0123456789abcdef", "right": False}},
    ),
    ("GET", "/api/v1/insights", {"headers": {"authorization": f"Bearer {TOKEN}"}}),
    ("GET", "/api/v1/insights", {}),
    ("GET", "/oembed", {"params": {"url": "http://testserver/errors/ROLL-901"}}),
    ("GET", "/oembed", {"params": {"url": "http://testserver/about"}}),
    ("GET", "/oembed", {"params": {"url": "http://testserver/errors/ROLL-901", "format": "xml"}}),
]


@pytest.fixture
def server(settings):
    settings = settings.model_copy(update={"insights_token": TOKEN})
    ingest(settings)
    with LiveServer(create_app(settings)) as live:
        yield live


def test_every_json_route_answers_as_its_openapi_schema_says(server):
    schema = schemathesis.openapi.from_url(f"{server.url}/api/v1/openapi.json")
    operations = {(op.method.upper(), op.path): op for op in (result.ok() for result in schema.get_all_operations())}
    assert {(method, path) for method, path, _call in CALLS} == set(operations), "every documented route is called"
    statuses: dict[tuple[str, str], set[int]] = {}
    with httpx.Client(base_url=server.url, timeout=120) as http:
        for method, path, call in CALLS:
            call = dict(call)
            response = http.request(method, call.pop("path", path), **call)
            assert response.headers["content-type"].startswith("application/json"), (path, response.text[:200])
            documented = operations[(method, path)].definition.raw["responses"]
            assert str(response.status_code) in documented, (method, path, response.status_code, response.text[:200])
            response.request.read()  # a multipart body is streamed; the validator reads it
            operations[(method, path)].validate_response(response)  # raises with every difference found
            statuses.setdefault((method, path), set()).add(response.status_code)
    assert all(200 <= min(codes) < 300 for codes in statuses.values()), statuses  # each route also answered


def test_every_mcp_tool_answers_as_its_output_schema_says(live_server):
    calls = {
        "search_errors": {"query": "watchdog timeout"},
        "diagnose_log": {"text": KV},
        "get_error": {"code": "ROLL-901", "lang": "zh"},
        "report_fix_outcome": {"code": "ROLL-901", "fix_id": "raise-gpu-memory-utilization", "worked": True},
        "report_wrong_match": {"code": "ROLL-901", "fingerprint": "0123456789abcdef"},
    }

    async def run() -> list[tuple[str, dict, dict]]:
        async with Client(f"{live_server.url}/mcp") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == set(calls), "every tool is called"
            results = []
            for name, arguments in calls.items():
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content)
                results.append((name, tools[name].output_schema, result.structured_content))
            return results

    for name, output_schema, structured in asyncio.run(run()):
        assert output_schema and structured is not None, f"{name} has no structured output"
        jsonschema.validate(structured, output_schema)


def test_an_unknown_code_reaches_the_agent_as_the_tools_error(live_server):
    async def run():
        async with Client(f"{live_server.url}/mcp") as client:
            return await client.call_tool("get_error", {"code": "CFG-999"})

    result = asyncio.run(run())
    assert result.is_error and "no entry with code 'CFG-999'" in result.content[0].text
