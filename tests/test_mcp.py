"""The MCP tools through the SDK's own client against uvicorn on loopback."""

from __future__ import annotations

import asyncio
import json

import httpx
from mcp import Client

from app.ingest import ingest
from app.web.app import create_app
from tests.conftest import LiveServer

KV = "(WorkerDict pid=48211, ip=10.0.3.7) ValueError: No available memory for the cache blocks."


def _call(url: str, tool: str, arguments: dict):
    async def run():
        async with Client(f"{url}/mcp") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool(tool, arguments)
            return names, result

    return asyncio.run(run())


def _payload(result) -> dict:
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


def test_tools_are_listed_and_diagnose_log_answers(live_server):
    names, result = _call(live_server.url, "diagnose_log", {"text": KV})
    assert {"search_errors", "diagnose_log", "get_error", "report_fix_outcome"} <= names
    data = _payload(result)
    assert data["matches"][0]["code"] == "ROLL-901" and data["matches"][0]["confidence"] == "high"


def test_search_and_get_error(live_server):
    _names, found = _call(live_server.url, "search_errors", {"query": "watchdog timeout"})
    assert _payload(found)["hits"][0]["code"] == "DIST-901"
    _names, entry = _call(live_server.url, "get_error", {"code": "TRAIN-901"})
    assert _payload(entry)["title"].startswith("Test entry for a CUDA OOM")


def test_report_fix_outcome_is_stored(live_server):
    arguments = {"code": "ROLL-901", "fix_id": "raise-gpu-memory-utilization", "worked": True, "reporter": "agent-7"}
    _names, result = _call(live_server.url, "report_fix_outcome", arguments)
    assert _payload(result)["fix"]["votes_up"] == 1
    api = httpx.get(f"{live_server.url}/api/v1/errors/ROLL-901").json()
    assert api["fixes"][0]["votes_up"] == 1


def test_unknown_host_header_is_refused(live_server):
    response = httpx.post(
        f"{live_server.url}/mcp",
        headers={
            "Host": "evil.example.com",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert response.status_code in (400, 403, 421)


def test_diagnose_log_carries_the_findings(live_server):
    cut = (
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=1, ip=10.0.0.1)\n"
        '  File "/x/verl/trainer/main_ppo.py", line 1, in run\n'
    )
    _names, result = _call(live_server.url, "diagnose_log", {"text": cut})
    findings = _payload(result)["findings"]
    assert [(f["kind"], f["wrapped_type"]) for f in findings] == [("truncated", "OutOfMemoryError")]
    assert "worker's own traceback" in findings[0]["hint"]


def test_get_error_of_a_retired_code_answers_with_the_entry_it_became(settings, content_dir):
    # an agent follows no redirect: the tool answers with the entry the code was folded into
    (content_dir / "moved.tsv").write_text("code\tnow\twhy\nTRAIN-950\tTRAIN-901\tthe same failure\n")
    ingest(settings)
    with LiveServer(create_app(settings)) as server:
        _names, entry = _call(server.url, "get_error", {"code": "TRAIN-950"})
    assert _payload(entry)["code"] == "TRAIN-901"
