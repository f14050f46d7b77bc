"""`kb check` catches each kind of bad entry and names its file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.checker import check_content
from app.cli import cli


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"fixture text {old!r} not found in {path.name}"
    path.write_text(text.replace(old, new, 1))


def _line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def _messages(content_dir: Path, release) -> list[str]:
    _catalog, problems = check_content(content_dir, release)
    return [str(problem) for problem in problems]


def test_fixture_content_is_clean(content_dir, release):
    assert _messages(content_dir, release) == []


def test_an_entry_limited_to_older_releases_must_not_recognise_what_the_pinned_release_raises(content_dir, release):
    """verl 0.9.1 still raises `max_position_embeddings not found in HFModelConfig!` (rollout/utils.py): an entry
    that says it applies only before 0.8 yet recognises that line would answer a 0.9.1 paste as not applying."""
    path = content_dir / "TRAIN-901.md"
    older_only = "applies_to: 'verl<0.8'\nsignatures:\n  - 'max_position_embeddings not found in HFModelConfig'\n"
    _edit(path, "signatures:\n", older_only)
    messages = _messages(content_dir, release)
    line = _line_of(path, "applies_to:")
    assert any(
        m.startswith(
            f"{path}:{line}: applies_to: 'verl<0.8' leaves out verl {release.version}, but signatures.0 matches"
        )
        and "verl/workers/rollout/utils.py:" in m
        for m in messages
    ), messages
    _edit(path, "applies_to: 'verl<0.8'", "applies_to: 'verl>=0.7'")  # the release is admitted: nothing to say
    assert _messages(content_dir, release) == []


def test_unknown_key_is_reported_at_its_line(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "tags: [vllm, memory]", "tags: [vllm, memory]\nseverity: high")
    assert f"{path}:{_line_of(path, 'severity:')}: severity: unknown key" in _messages(content_dir, release)


def test_invalid_yaml_names_the_line(content_dir, release):
    path = content_dir / "TRAIN-901.md"
    _edit(path, "tags: [oom, memory]", "tags: [oom, memory\nbroken: : :")
    messages = _messages(content_dir, release)
    assert any(m.startswith(f"{path}:") and "invalid YAML" in m for m in messages), messages


def test_code_must_match_file_name(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "code: ROLL-901", "code: ROLL-902")
    assert f"{path}:2: code ROLL-902 does not match file name" in _messages(content_dir, release)


def test_missing_required_field(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "summary: A fixture entry whose signature is the vLLM no-cache-blocks message.\n", "")
    assert any(m.startswith(f"{path}:1: summary: Field required") for m in _messages(content_dir, release))


def test_signature_rejected_by_re2(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "'No available memory for the cache blocks'", "'No available (?=memory) for the cache blocks'")
    line = _line_of(path, "(?=memory)")
    messages = _messages(content_dir, release)
    assert any(m.startswith(f"{path}:{line}: signatures.0: RE2 rejects the pattern") for m in messages), messages


def test_catch_all_signature_is_refused(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "'No available memory for the cache blocks'", "'.*Error.*'")
    messages = _messages(content_dir, release)
    assert any("signatures.0: too generic" in m for m in messages), messages


def test_example_its_signatures_miss(content_dir, release):
    path = content_dir / "DIST-901.md"
    _edit(path, "'[Rank 2] Watchdog caught", "'[Rank 2] Watchdog noticed")
    line = _line_of(path, "Watchdog noticed")
    assert f"{path}:{line}: examples.1: no signature of DIST-901 matches it" in _messages(content_dir, release)


def test_example_that_ranks_another_entry_first(content_dir, release):
    path = content_dir / "DIST-901.md"
    # An example that also carries a more specific primary error ranks TRAIN-901 first.
    _edit(
        path,
        "  - '[Rank 2] Watchdog",
        "  - |\n    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n    [Rank 2] Watchdog",
    )
    _edit(path, "ran for 1800000 milliseconds before timing out.'", "ran for 1800000 milliseconds before timing out.")
    messages = _messages(content_dir, release)
    assert any("examples.1: ranks TRAIN-901 first, not DIST-901" in m for m in messages), messages


def test_unknown_related_code(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "related: [TRAIN-901]", "related: [TRAIN-999]")
    line = _line_of(path, "related:")
    assert f"{path}:{line}: related: TRAIN-999 is not an entry" in _messages(content_dir, release)


def test_invented_config_key_is_refused(content_dir, release):
    path = content_dir / "TRAIN-901.md"
    _edit(path, "ppo_micro_batch_size_per_gpu=1", "ppo_micro_batch_sz=1")
    line = _line_of(path, "ppo_micro_batch_sz")
    expected = f"{path}:{line}: config key actor_rollout_ref.actor.ppo_micro_batch_sz does not exist in verl 0.9.1"
    assert expected in _messages(content_dir, release)


def test_plus_prefixed_key_is_an_addition(content_dir, release):
    path = content_dir / "TRAIN-901.md"
    _edit(
        path,
        "`actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1`",
        "`+actor_rollout_ref.model.override_config.attn_implementation=eager`",
    )
    assert _messages(content_dir, release) == []


def test_invented_module_is_refused(content_dir, release):
    path = content_dir / "DIST-901.md"
    _edit(path, "on every rank's log.", "on every rank's log, then `python3 -m verl.launcher.train_ppo`.")
    line = _line_of(path, "verl.launcher")
    assert f"{path}:{line}: module verl.launcher.train_ppo does not exist in verl 0.9.1" in _messages(
        content_dir, release
    )


def test_real_module_passes(content_dir, release):
    path = content_dir / "DIST-901.md"
    _edit(path, "on every rank's log.", "on every rank's log of `python3 -m verl.trainer.main_ppo`.")
    assert _messages(content_dir, release) == []


def test_invalid_keys_must_really_be_invalid(content_dir, release):
    path = content_dir / "TRAIN-901.md"
    _edit(path, "tags: [oom, memory]", "tags: [oom, memory]\ninvalid_keys: [trainer.nnodes]")
    assert any("invalid_keys: trainer.nnodes does exist" in m for m in _messages(content_dir, release))


def test_chinese_body_is_required(content_dir, release):
    (content_dir / "DIST-901.zh.md").unlink()
    assert f"{content_dir / 'DIST-901.zh.md'}:1: Chinese body missing" in _messages(content_dir, release)


def test_body_sections_are_required(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "## How to confirm", "## Checking")
    assert any("missing section '## How to confirm'" in m for m in _messages(content_dir, release))


def test_cli_check_prints_path_line_message_and_exits_1(content_dir, runner, tmp_path, monkeypatch):
    _edit(content_dir / "ROLL-901.md", "tags: [vllm, memory]", "tags: [vllm, memory]\nseverity: high")
    monkeypatch.setenv("KB_DATA_DIR", str(Path(__file__).resolve().parent.parent / "data"))
    result = runner.invoke(cli, ["check", "--content", str(content_dir)])
    assert result.exit_code == 1
    assert re.search(r"ROLL-901\.md:\d+: severity: unknown key", result.output)


@pytest.mark.parametrize("code", ["ROLL-901", "TRAIN-901", "DIST-901"])
def test_every_problem_names_a_real_line(content_dir, release, code):
    path = content_dir / f"{code}.md"
    _edit(path, "---\n", "---\nbogus: 1\n")
    messages = _messages(content_dir, release)
    assert f"{path}:2: bogus: unknown key" in messages


def test_invented_module_reference_and_file_are_refused(content_dir, release):
    path = content_dir / "DIST-901.md"
    _edit(
        path,
        "on every rank's log.",
        "on every rank's log; see `verl.workers.fsdp_workers.Worker` and `verl/trainer/ppo_trainer.py`.",
    )
    line = _line_of(path, "fsdp_workers")
    messages = _messages(content_dir, release)
    assert f"{path}:{line}: module verl.workers.fsdp_workers.Worker does not exist in verl 0.9.1" in messages
    assert f"{path}:{line}: file verl/trainer/ppo_trainer.py does not exist in verl 0.9.1" in messages


def test_real_module_references_and_files_pass(content_dir, release):
    path = content_dir / "DIST-901.md"
    _edit(
        path, "on every rank's log.", "on every rank's log (`verl.trainer.main_ppo.main`, `verl/trainer/main_ppo.py`)."
    )
    assert _messages(content_dir, release) == []


def test_invalid_modules_name_gone_modules_and_must_be_gone(content_dir, release):
    path = content_dir / "DIST-901.md"
    _edit(path, "on every rank's log.", "on every rank's log; old releases had `verl/workers/fsdp_workers.py`.")
    _edit(path, "tags: [nccl, timeout]", "tags: [nccl, timeout]\ninvalid_modules: ['verl/workers/fsdp_workers.py']")
    assert _messages(content_dir, release) == []
    _edit(
        path,
        "invalid_modules: ['verl/workers/fsdp_workers.py']",
        "invalid_modules: ['verl/workers/fsdp_workers.py', 'verl.trainer.main_ppo']",
    )
    assert any("invalid_modules: verl.trainer.main_ppo does exist" in m for m in _messages(content_dir, release))


def test_hydra_refuses_appending_a_key_that_exists(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(
        path,
        "`actor_rollout_ref.rollout.gpu_memory_utilization=0.6`",
        "`+actor_rollout_ref.rollout.gpu_memory_utilization=0.6`",
    )
    line = _line_of(path, "body: |")
    expected = (
        f"{path}:{line}: fixes[0] (raise-gpu-memory-utilization): Hydra refuses "
        "+actor_rollout_ref.rollout.gpu_memory_utilization=0.6: Could not append to config. "
        "An item is already at 'actor_rollout_ref.rollout.gpu_memory_utilization'."
    )
    assert expected in _messages(content_dir, release)


def test_megatron_only_override_must_say_it_needs_megatron(content_dir, release):
    path = content_dir / "ROLL-901.md"
    _edit(path, "`actor_rollout_ref.rollout.gpu_memory_utilization=0.6`", "`critic.nccl_timeout=1200`")
    messages = _messages(content_dir, release)
    assert any(
        "fixes[0] (raise-gpu-memory-utilization): critic.nccl_timeout=1200 composes only with "
        "ppo_trainer model_engine=megatron; say that the fix needs it" in m
        for m in messages
    )
    _edit(path, "`critic.nccl_timeout=1200`", "with the Megatron engine: `critic.nccl_timeout=1200`")
    assert _messages(content_dir, release) == []


def test_a_code_block_composes_as_one_command_with_its_group_choice(content_dir, release):
    path = content_dir / "ROLL-901.md"
    block = (
        "Megatron runs:\n\n      ```bash\n      model_engine=megatron \\\n"
        "      actor_rollout_ref.actor.megatron.use_mbridge=True \\\n"
        "      actor_rollout_ref.rollout.gpu_memory_utilization=0.6\n      ```"
    )
    _edit(path, "`actor_rollout_ref.rollout.gpu_memory_utilization=0.6`", block)
    assert _messages(content_dir, release) == []
    _edit(
        path, "actor_rollout_ref.actor.megatron.use_mbridge=True", "actor_rollout_ref.actor.megatron.use_bridge_x=True"
    )
    assert any("Hydra refuses" in m and "use_bridge_x" in m for m in _messages(content_dir, release))


def test_every_entry_records_its_second_reading(content_dir, release):
    path = content_dir / "DIST-901.md"
    _edit(path, "reviewed:\n  release: '0.9.1'\n  date: 2026-12-01\n  result: confirmed\n", "")
    assert f"{path}:1: reviewed: no second reading of the fixes against verl's source is recorded" in _messages(
        content_dir, release
    )


def test_a_fix_must_say_what_it_rests_on(content_dir, release):
    path = content_dir / "TRAIN-901.md"
    _edit(path, "    evidence: users\n", "")
    assert any(
        m.startswith(f"{path}:") and "fixes[0].evidence: say what the fix rests on" in m
        for m in _messages(content_dir, release)
    )
