"""`kb match`: the terminal diagnosis, its JSON (the API's), exit codes and bad input."""

from __future__ import annotations

import json

import httpx
import pytest

from app.cli import cli
from app.ingest import ingest
from app.web.app import create_app

KV = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
WATCHDOG = (
    "[rank1]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600112 "
    "milliseconds before timing out."
)
UNKNOWN_CRASH = """(WorkerDict pid=1234, ip=10.0.0.1) Traceback (most recent call last):
(WorkerDict pid=1234, ip=10.0.0.1)   File "/home/u/my_reward.py", line 12, in compute_score
(WorkerDict pid=1234, ip=10.0.0.1)     return float(answer.split("####")[1])
(WorkerDict pid=1234, ip=10.0.0.1) IndexError: list index out of range"""


@pytest.fixture
def kb(runner, settings):
    ingest(settings)
    env = {
        "KB_DATA_DIR": str(settings.data_dir),
        "KB_CONTENT_DIR": str(settings.content_dir),
        "KB_SECRET_KEY": settings.secret_key,
        "KB_PUBLIC_URL": "http://testserver",
        "KB_RELEASES_DIR": str(settings.verl_dir),
    }

    def invoke(*args: str, stdin: str | bytes | None = None):
        return runner.invoke(cli, ["match", *args], input=stdin, env=env)

    return invoke


def test_a_confident_match_prints_the_root_cause_and_fixes(kb, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(f"(WorkerDict pid=1, ip=10.0.0.1) {KV}\n")
    result = kb(str(log))
    assert result.exit_code == 0, result.output
    assert "ROLL-901" in result.output and "matched:" in result.output and "Fix 1" in result.output


def test_json_is_the_api_answer(kb, settings):
    text = f"(WorkerDict pid=1, ip=10.0.0.1) {KV}\n{WATCHDOG}"
    cli_answer = json.loads(kb("--json", "-", stdin=text).output)
    from fastapi.testclient import TestClient

    with TestClient(create_app(settings)) as client:
        api_answer = client.post("/api/v1/match", json={"text": text}).json()
    for answer in (cli_answer, api_answer):
        answer.pop("took_ms")
    assert cli_answer == api_answer
    assert [m["code"] for m in cli_answer["matches"]][:2] == ["ROLL-901", "DIST-901"]
    assert cli_answer["matches"][1]["consequence_of"] == "ROLL-901"


def test_a_cascade_beside_an_unknown_crash_names_that_crash(kb):
    result = kb("-", stdin=f"{UNKNOWN_CRASH}\n(WorkerDict pid=1300, ip=10.0.0.1) {WATCHDOG}")
    assert result.exit_code == 1, result.output
    assert "No entry of the manual matches this error with confidence." in result.output
    assert "The crash it does not cover (lines 1-4): IndexError: list index out of range" in result.output


@pytest.mark.parametrize("stdin", ["", "  \n\n", b""])
def test_empty_input_exits_2_with_a_message(kb, stdin):
    result = kb("-", stdin=stdin)
    assert result.exit_code == 2
    assert "the input is empty" in result.output


def test_a_missing_file_exits_2(kb, tmp_path):
    result = kb(str(tmp_path / "nope.log"))
    assert result.exit_code == 2 and "cannot read" in result.output


def test_invalid_utf8_is_diagnosed(kb):
    result = kb("--json", "-", stdin=b"\xff\xfe (WorkerDict pid=1) " + KV.encode())
    assert result.exit_code == 0
    assert json.loads(result.output)["matches"][0]["code"] == "ROLL-901"


NCCL_WORDS = "the job is stuck in a collective operation and the watchdog never fires; nccl allreduce hangs"


def test_an_entry_removed_since_the_last_index_neither_crashes_nor_is_suggested(kb, settings):
    for name in ("DIST-901.md", "DIST-901.zh.md"):
        (settings.content_dir / name).unlink()  # removed from the checkout, still in the index built before
    result = kb("-", "--json", stdin=NCCL_WORDS)
    assert result.exit_code == 1, result.output
    assert "rebuilt it" in result.output
    answer = json.loads(result.output[result.output.index("{") :])
    assert "DIST-901" not in [match["code"] for match in answer["matches"]]


def test_a_never_indexed_checkout_still_gets_full_text_suggestions(runner, settings):
    env = {
        "KB_DATA_DIR": str(settings.data_dir),
        "KB_CONTENT_DIR": str(settings.content_dir),
        "KB_SECRET_KEY": settings.secret_key,
    }
    result = runner.invoke(cli, ["match", "-", "--json"], input=NCCL_WORDS, env=env)
    assert result.exit_code == 1 and "rebuilt it" in result.output
    answer = json.loads(result.output[result.output.index("{") :])
    assert "DIST-901" in [match["code"] for match in answer["matches"]]


def test_when_no_index_can_be_built_the_user_is_told(runner, settings, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = {
        "KB_DATA_DIR": str(blocker / "data"),
        "KB_CONTENT_DIR": str(settings.content_dir),
        "KB_SECRET_KEY": settings.secret_key,
    }
    result = runner.invoke(cli, ["match", "-"], input=NCCL_WORDS, env=env)
    assert result.exit_code == 1
    assert "full-text suggestions are unavailable" in result.output


def test_server_mode_gives_the_servers_answer(runner, settings, live_server):
    env = {
        "KB_DATA_DIR": str(settings.data_dir / "elsewhere"),
        "KB_CONTENT_DIR": str(settings.content_dir),
        "KB_SECRET_KEY": settings.secret_key,
    }
    text = f"(WorkerDict pid=1, ip=10.0.0.1) {KV}"
    remote = runner.invoke(cli, ["match", "-", "--json", "--server", live_server.url], input=text, env=env)
    assert remote.exit_code == 0, remote.output
    direct = httpx.post(f"{live_server.url}/api/v1/match", json={"text": text}).json()
    answer = json.loads(remote.output)
    for one in (answer, direct):
        one.pop("took_ms")
    assert answer == direct
    assert not (settings.data_dir / "elsewhere").exists(), "server mode must not build a local index"
    by_setting = runner.invoke(cli, ["match", "-"], input=text, env={**env, "KB_SERVER": live_server.url})
    assert by_setting.exit_code == 0 and "ROLL-901" in by_setting.output


def test_server_mode_says_when_the_server_cannot_answer(runner, settings, live_server):
    from tests.servers import free_port

    env = {"KB_SECRET_KEY": settings.secret_key}
    down = runner.invoke(cli, ["match", "-", "--server", f"http://127.0.0.1:{free_port()}"], input=KV, env=env)
    assert down.exit_code == 3 and "cannot reach" in down.output
    big = ("step 1 loss 0.25\n" * 200_000) + KV  # 3.4 MB: this CLI allows it, the server (2 MiB) does not
    refused = runner.invoke(
        cli,
        ["match", "-", "--server", live_server.url],
        input=big,
        env={**env, "KB_MAX_PASTE_BYTES": str(4 * 1024 * 1024)},
    )
    assert refused.exit_code == 2 and "answered 413" in refused.output


def test_a_damaged_index_is_rebuilt(kb, settings):
    (settings.data_dir / "index" / "words.json").write_text("{not json")
    result = kb("-", stdin=KV)
    assert result.exit_code == 0, result.output
    assert "rebuilt it" in result.output and "ROLL-901" in result.output


def test_entries_that_do_not_load_exit_3_not_1(kb, settings):
    (settings.content_dir / "ROLL-902.md").write_text("---\ncode: ROLL-902\ntitle: [unclosed\n---\nbody\n")
    result = kb("-", stdin=KV)
    assert result.exit_code == 3, result.output
    assert "kb check" in result.output


def test_help_states_every_exit_code(runner):
    result = runner.invoke(cli, ["match", "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    for code, meaning in (
        ("0", "confident"),
        ("1", "no confident match"),
        ("2", "bad input"),
        ("3", "could not answer"),
    ):
        assert f"{code} " in text and meaning in text, text
