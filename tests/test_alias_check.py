"""`kb check` refuses aliases that cannot tell their entry apart, at the alias's line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.alias_check import check_aliases
from app.entries import load_catalog_strict
from app.settings import ROOT


@pytest.fixture
def content(tmp_path: Path) -> Path:
    # the real entries: which words are common depends on the whole manual
    target = tmp_path / "errors"
    shutil.copytree(ROOT / "content" / "errors", target)
    return target


def _set_aliases(path: Path, aliases: list[str]) -> int:
    """Replace the entry's aliases (or add them after its tags); return the line they are on."""
    lines = path.read_text(encoding="utf-8").splitlines()
    new = "aliases: [" + ", ".join(f"'{alias}'" for alias in aliases) + "]"
    at = next((n for n, line in enumerate(lines) if line.startswith("aliases:")), None)
    if at is None:
        at = next(n for n, line in enumerate(lines) if line.startswith("tags:")) + 1
        lines.insert(at, new)
    else:
        lines[at] = new
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return at + 1


def _messages(content: Path) -> list[str]:
    return [str(problem) for problem in check_aliases(load_catalog_strict(content))]


def test_the_manual_s_aliases_pass(content):
    assert _messages(content) == []


def test_an_alias_of_words_most_entries_use_is_refused(content):
    path = content / "ROLL-011.md"
    line = _set_aliases(path, ["vllm 升级 失败", "rollout engine OOM while generating"])
    messages = _messages(content)
    assert [m for m in messages if m.startswith(f"{path}:")] == [
        f"{path}:{line}: aliases.0: 'vllm 升级 失败' is made of words most entries use (vllm, 升级, 失败); "
        "name what sets this failure apart"
    ]


def test_an_alias_three_entries_declare_is_refused_in_each(content):
    alias = "weight sync stalls after resharding"
    paths = [content / f"{code}.md" for code in ("ROLL-011", "DIST-002", "CKPT-110")]
    lines = {path: _set_aliases(path, [alias]) for path in paths}
    messages = _messages(content)
    for path in paths:
        assert (
            f"{path}:{lines[path]}: aliases.0: {alias!r} is an alias of 3 entries (CKPT-110, DIST-002, ROLL-011)"
            in messages
        )
    # two entries may share one: the same words can name a cause and its usual consequence
    _set_aliases(paths[2], ["checkpoint write fails on a full disk"])
    assert not any(alias in m for m in _messages(content))
