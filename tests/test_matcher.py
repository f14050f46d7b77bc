"""Blocks, root cause over cascade, environment and unknown errors, on text shaped like real pastes."""

from __future__ import annotations

import pytest

from app.entries import load_catalog_strict
from app.ingest import ingest
from app.manual import Manual
from app.matcher import Matcher
from app.matcher.blocks import split_blocks
from app.matcher.normalise import normalise
from app.settings import ROOT
from tests.conftest import FIXTURE_CONTENT

KV = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB"
WATCHDOG = (
    "[rank{r}]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600{r}12 "
    "milliseconds before timing out."
)


@pytest.fixture
def matcher(content_dir):
    return Matcher(load_catalog_strict(content_dir))


def blocks_of(text):
    return split_blocks(normalise(text))


def test_chained_traceback_is_one_block_rooted_at_the_first_exception():
    text = """Traceback (most recent call last):
  File "/verl/verl/workers/rollout/vllm_rollout/vllm_rollout.py", line 88, in __init__
    self.inference_engine = LLM(model=model_path)
ValueError: No available memory for the cache blocks.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/verl/verl/trainer/main_ppo.py", line 64, in main
    run_ppo(config)
RuntimeError: Engine core initialization failed. See root cause above."""
    blocks = blocks_of(text)
    assert len(blocks) == 1
    assert blocks[0].exception_line == "ValueError: No available memory for the cache blocks."
    assert blocks[0].frames[0].endswith("vllm_rollout.py:__init__")


def test_ray_wrapper_is_unwrapped_to_the_inner_error():
    text = f"""Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 2822, in get
    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)
ray.exceptions.RayTaskError(ValueError): ray::WorkerDict.actor_rollout_init_model() (pid=48211, ip=10.0.3.7, actor_id=ab12)
  File "/verl/verl/single_controller/ray/base.py", line 663, in func
    return getattr(self.worker_dict[key], name)(*args, **kwargs)
  File "/verl/verl/workers/fsdp_workers.py", line 571, in init_model
    self.rollout = vLLMRollout(model_path=local_path)
{KV}"""
    blocks = blocks_of(text)
    assert [block.exception_line for block in blocks] == [KV]
    assert any("init_model" in frame for frame in blocks[0].frames)


def test_hydra_instantiation_error_keeps_the_inner_message(matcher):
    text = """Error executing job with overrides: ['actor_rollout_ref.rollout.gpu_memory_utilization=0.2']
Traceback (most recent call last):
  File "/verl/verl/trainer/main_ppo.py", line 42, in main
    run_ppo(config)
hydra.errors.InstantiationException: Error in call to target 'verl.workers.config.RolloutConfig':
ValueError('No available memory for the cache blocks')
full_key: actor_rollout_ref.rollout

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."""
    diagnosis = matcher.diagnose(text)
    assert diagnosis.matches[0].code == "ROLL-901"
    assert diagnosis.matches[0].confidence == "high"
    assert len(diagnosis.blocks) == 1


def test_cpp_terminate_and_bare_error_lines_are_blocks():
    text = """some training output
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: an illegal memory access was encountered
step 12 done
RuntimeError: NCCL communicator was aborted on rank 2."""
    lines = [block.exception_line for block in blocks_of(text)]
    assert "terminate called after throwing an instance of 'c10::Error'" in lines
    assert "RuntimeError: NCCL communicator was aborted on rank 2." in lines


def test_truncated_traceback_without_its_last_line_still_makes_a_block(matcher):
    text = """  File "/verl/verl/workers/fsdp_workers.py", line 612, in update_actor
    metrics = self.actor.update_policy(data=data)
  File "/verl/verl/workers/actor/dp_actor.py", line 401, in update_policy
    loss.backward()"""
    blocks = blocks_of(text)
    assert len(blocks) == 1 and blocks[0].kind == "traceback"
    assert any("update_policy" in frame for frame in blocks[0].frames)


def test_same_error_on_many_ranks_is_one_block():
    text = "\n".join(WATCHDOG.format(r=r) for r in range(8))
    blocks = blocks_of(text)
    assert len(blocks) == 1
    assert blocks[0].count == 8 and blocks[0].ranks_label() == "ranks 0-7"


def test_root_cause_ranks_above_its_cascade(matcher):
    text = "\n".join([WATCHDOG.format(r=0), f"[rank3]: {OOM}", WATCHDOG.format(r=5)])
    matches = matcher.diagnose(text).matches
    assert [m.code for m in matches[:2]] == ["TRAIN-901", "DIST-901"]
    assert matches[0].root_cause and matches[0].confidence == "high"
    assert matches[1].consequence_of == "TRAIN-901" and not matches[1].root_cause


def test_cascade_alone_is_medium_not_a_root_cause(matcher):
    matches = matcher.diagnose(WATCHDOG.format(r=1)).matches
    assert matches[0].code == "DIST-901"
    assert matches[0].confidence == "medium" and not matches[0].root_cause


def test_cascade_beside_an_unknown_crash_is_no_diagnosis(matcher):
    # a user's reward function fails on one worker; the others then time out in their next collective
    text = "\n".join(
        [
            "(WorkerDict pid=1234, ip=10.0.0.1) Traceback (most recent call last):",
            '(WorkerDict pid=1234, ip=10.0.0.1)   File "/home/u/my_reward.py", line 12, in compute_score',
            '(WorkerDict pid=1234, ip=10.0.0.1)     return float(answer.split("####")[1])',
            "(WorkerDict pid=1234, ip=10.0.0.1) IndexError: list index out of range",
            *(f"(WorkerDict pid=13{r}0, ip=10.0.0.1) {WATCHDOG.format(r=r)}" for r in (1, 2)),
        ]
    )
    diagnosis = matcher.diagnose(text)
    assert diagnosis.blocks[0].exception_line == "IndexError: list index out of range"
    assert diagnosis.blocks[0].end == 3  # the next worker's line is not part of the IndexError's message
    assert diagnosis.matches[0].code == "DIST-901" and diagnosis.matches[0].confidence == "low"


def test_a_message_continues_on_lines_of_the_same_worker():
    text = "\n".join(
        [
            f"(WorkerDict pid=7, ip=10.0.0.1) {OOM}",
            "(WorkerDict pid=7, ip=10.0.0.1) Of the allocated memory 70.02 GiB is allocated by PyTorch",
            "(WorkerDict pid=8, ip=10.0.0.1) step 3 finished",
        ]
    )
    block = blocks_of(text)[0]
    assert (block.start, block.end) == (0, 1)


def test_frames_break_ties(matcher, content_dir):
    text = f"""Traceback (most recent call last):
  File "/verl/verl/workers/actor/dp_actor.py", line 401, in update_policy
    loss.backward()
{OOM}"""
    match = matcher.diagnose(text).matches[0]
    assert match.code == "TRAIN-901" and match.confidence == "high"


def test_environment_is_extracted_and_demotes_excluded_entries(content_dir):
    path = content_dir / "ROLL-901.md"
    path.write_text(path.read_text().replace("tags: [vllm, memory]", "tags: [vllm, memory]\napplies_to: 'vllm>=0.7'"))
    matcher = Matcher(load_catalog_strict(content_dir))
    text = f"INFO 11-21 19:46:53 [__init__.py:256] vLLM version 0.6.3.post1\nNVIDIA H100 80GB HBM3 detected\n{KV}"
    diagnosis = matcher.diagnose(text)
    assert diagnosis.environment.versions["vllm"] == "0.6.3.post1"
    assert diagnosis.environment.gpu and diagnosis.environment.gpu.startswith("H100")
    match = diagnosis.matches[0]
    assert match.demoted_because == "applies to vllm>=0.7, the log shows vllm 0.6.3.post1"
    assert match.confidence != "high"


@pytest.mark.parametrize(
    "text",
    [
        'Traceback (most recent call last):\n  File "/home/u/my_reward.py", line 12, in compute_score\n'
        "    return len(solution) / total\nZeroDivisionError: division by zero",
        "OSError: [Errno 122] Disk quota exceeded: '/mnt/ckpt/global_step_40/actor/model_world_size_8_rank_3.pt'",
        "wandb: ERROR Error while calling W&B API: An internal error occurred. Please contact support. (<Response [500]>)",
    ],
)
def test_unknown_errors_get_no_confident_match(matcher, text):
    assert all(m.confidence == "low" for m in matcher.diagnose(text).matches)


def test_a_known_warning_before_an_unknown_crash_is_not_confident(matcher):
    text = f"""step 3: {KV.replace("ValueError: ", "warning: ")}
Traceback (most recent call last):
  File "/home/u/my_reward.py", line 12, in compute_score
    return len(solution) / total
ZeroDivisionError: division by zero"""
    assert all(m.confidence != "high" for m in matcher.diagnose(text).matches)


def test_invalid_bytes_are_diagnosed_not_raised(matcher):
    diagnosis = matcher.diagnose(b"\x00\xff(WorkerDict pid=1) " + KV.encode() + b"\xc3")
    assert diagnosis.matches[0].code == "ROLL-901"


def test_a_str_with_a_lone_surrogate_is_diagnosed_not_raised(matcher):
    assert matcher.diagnose(f"\ud800 (WorkerDict pid=1) {KV}").matches[0].code == "ROLL-901"


def test_a_ray_wrapper_without_its_inner_error_is_a_truncated_block():
    text = """ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=508648, ip=10.1.200.6)
  File "/home/xxx/workdir/verl/verl/trainer/main_ppo.py", line 168, in main_task
    trainer.fit()"""
    block = blocks_of(text)[0]
    assert block.truncated and block.wrapped_type == "OutOfMemoryError"


def test_a_cut_paste_suggests_entries_about_the_wrapped_type_first(settings):
    # Real full-text search over the fixture entries: the words favour the rollout entry, the
    # wrapper says an OutOfMemoryError was raised, so the OOM entry leads (still only low).
    ingest(settings)
    manual = Manual.open(settings, fresh=True)
    text = """The rollout engine stopped while vllm was generating sequences for the cache blocks.
ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_generate_sequences() (pid=1, ip=10.0.0.1)
  File "/verl/verl/single_controller/ray/base.py", line 663, in func
    return getattr(self.worker_dict[key], name)(*args, **kwargs)"""
    without_wrapper = manual.matcher.diagnose(text.replace("(OutOfMemoryError)", "")).matches
    matches = manual.matcher.diagnose(text).matches
    assert without_wrapper[0].code == "ROLL-901"
    assert matches[0].code == "TRAIN-901"
    assert all(match.confidence == "low" for match in matches)


def test_with_cascades_only_the_first_to_appear_leads():
    # the vLLM engine died first; Ray's note that a worker died follows from it
    catalog = load_catalog_strict(ROOT / "content" / "errors")
    text = "\n".join(
        [
            "(AgentLoopWorker pid=5101) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
            "See stack trace (above) for the root cause.",
            "(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
            "the problem, check the logs for the dead worker.",
        ]
    )
    matches = Matcher(catalog).diagnose(text).matches
    assert [match.code for match in matches[:2]] == ["ROLL-005", "DIST-001"]
    assert not matches[0].root_cause and matches[0].confidence == "medium"


def test_a_peft_weight_name_in_a_vllm_traceback_is_the_vllm_entry_not_the_sglang_one():
    # the same 'base_model.model....base_layer.weight' name reaches vLLM's load_weights or SGLang's: which engine
    # raised decides the fix, so the SGLang entry (LORA-560) must not claim a vLLM traceback
    catalog = load_catalog_strict(ROOT / "content" / "errors")
    name = "'base_model.model.model.layers.0.self_attn.qkv_proj.base_layer.weight'"
    vllm_side = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/opt/verl/verl/workers/sharding_manager/fsdp_vllm.py", line 334, in update_params',
            "    model.load_weights(((name, param) for name, param in updated_params.items()))",
            '  File "/usr/local/lib/python3.10/site-packages/vllm/model_executor/models/qwen2.py", line 391, in '
            "load_weights",
            "    param = params_dict[name]",
            f"KeyError: {name}",
        ]
    )
    matcher = Matcher(catalog)
    codes = [match.code for match in matcher.diagnose(vllm_side).matches]
    assert codes[:1] == ["LORA-400"] and "LORA-560" not in codes
    assert matcher.diagnose(f"SGLang + LoRA: KeyError: {name}").matches[0].code == "LORA-560"


def test_a_signature_set_over_its_memory_budget_names_the_costliest_signature(tmp_path):
    from app.matcher import SignatureError
    from app.matcher.signatures import SignatureSet
    from tests.conftest import FIXTURE_CONTENT

    catalog = load_catalog_strict(FIXTURE_CONTENT)
    SignatureSet(catalog, max_mem=1 << 20)  # the fixture set is small
    wide = next(iter(catalog))
    wide.meta.signatures.append(
        r"in collect_data[\s\S]{0,1000}in check_consistency[\s\S]{0,1000}in verify[\s\S]{0,1000}KeyError"
    )
    with pytest.raises(SignatureError, match=rf"do not fit in one RE2 set of 1 MiB; the largest: {wide.code} "):
        SignatureSet(catalog, max_mem=1 << 20)


# A paste that starts mid-traceback: the first line lost `File "/usr/.../site-packages/` to the cut.
CUT_FRAME_PASTE = """transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py", line 391, in forward
(TaskRunner pid=22930) hidden_states = self.mlp(hidden_states)
(TaskRunner pid=22930) ^^^^^^^^^^^^^^^^^^^^^^^
(TaskRunner pid=22930) File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1773, in _wrapped_call_impl
(TaskRunner pid=22930) return self._call_impl(*args, **kwargs)
RuntimeError: scatter(): Expected self.dtype to be equal to src.dtype"""
FRAME_THEN_ERROR = (
    r'(?s)modeling_qwen3_vl_moe\.py", line \d+, in forward.*?scatter\(\): Expected self\.dtype to be equal'
)


def test_a_frame_cut_before_its_file_starts_the_traceback_below_it():
    blocks = blocks_of(CUT_FRAME_PASTE)
    assert len(blocks) == 1
    assert (blocks[0].kind, blocks[0].start, blocks[0].truncated) == ("traceback", 0, False)
    assert blocks[0].exception_line.startswith("RuntimeError: scatter()")
    assert blocks[0].frames[0] == "transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py:forward"


def test_a_sentence_quoting_a_frame_is_not_a_cut_frame():
    text = 'see modeling_x.py", line 3, in forward for where it fails\nRuntimeError: boom'
    assert [block.kind for block in blocks_of(text)] == ["error"]


def test_a_signature_from_a_cut_frame_to_the_error_line_is_a_confident_diagnosis():
    catalog = load_catalog_strict(FIXTURE_CONTENT)
    entry = catalog.get("TRAIN-901")
    entry.meta.signatures.append(FRAME_THEN_ERROR)
    top = Matcher(catalog).diagnose(CUT_FRAME_PASTE).matches[0]
    assert (top.code, top.confidence) == ("TRAIN-901", "high")
    assert top.matched_line.startswith("RuntimeError: scatter()")
    # the same signature on the whole frame line, the paste uncut, answers the same
    whole = 'Traceback (most recent call last):\n  File "/usr/lib/python3/dist-packages/' + CUT_FRAME_PASTE
    assert (Matcher(catalog).diagnose(whole).matches[0].confidence) == "high"


def test_a_signature_from_a_frame_to_the_error_line_is_on_the_exception():
    catalog = load_catalog_strict(FIXTURE_CONTENT)
    signature = r"in update_policy\n(?:.*\n){0,4}?.*CUDA error: an illegal memory access"
    catalog.get("TRAIN-901").meta.signatures.append(signature)
    text = """Traceback (most recent call last):
  File "/verl/verl/workers/actor/dp_actor.py", line 410, in update_policy
    loss.backward()
RuntimeError: CUDA error: an illegal memory access was encountered"""
    top = Matcher(catalog).diagnose(text).matches[0]
    assert (top.code, top.confidence, top.line_index) == ("TRAIN-901", "high", 3)


def test_a_cut_frame_without_its_error_line_is_never_high():
    catalog = load_catalog_strict(FIXTURE_CONTENT)
    catalog.get("TRAIN-901").meta.signatures.append(r'modeling_qwen3_vl_moe\.py", line \d+, in forward')
    cut = CUT_FRAME_PASTE.rsplit("\n", 1)[0]  # the error line is gone too
    matches = Matcher(catalog).diagnose(cut).matches
    assert matches and all(match.confidence != "high" for match in matches)


def test_a_traceback_ending_in_a_bare_exception_is_complete():
    # `raise Exception("...")` prints the class with nothing before "Exception": the traceback is whole
    text = """Traceback (most recent call last):
  File "/home/user/verl/verl/utils/fsdp_utils.py", line 128, in get_fsdp_wrap_policy
    raise Exception("Could not find the transformer layer class to wrap in the model.")
Exception: Could not find the transformer layer class to wrap in the model."""
    block = blocks_of(text)[0]
    assert not block.truncated
    assert block.exception_line == "Exception: Could not find the transformer layer class to wrap in the model."
    assert [b.kind for b in blocks_of("Exceptional things happened at step 3")] == ["error"]
