"""Each kind of noise a real paste carries is removed, and the numbers that matter survive."""

from __future__ import annotations

import pytest

from app.matcher.normalise import normalise

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."


@pytest.mark.parametrize(
    "raw",
    [
        f"(WorkerDict pid=48211, ip=10.0.3.7) {OOM}",
        f"(TaskRunner pid=2396241) {OOM}",
        f"(main_task pid=2396241) {OOM}",
        f"(EngineCore_DP0 pid=4821) {OOM}",
        f"(raylet) {OOM}",
        f"(raylet, ip=10.0.0.2) {OOM}",
        f"[rank3]: {OOM}",
        f"[rank3]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] {OOM}",
        f"(WorkerDict pid=835, ip=172.26.143.83) [rank38]:[E809 14:59:30.411244289 ProcessGroupNCCL.cpp:629] {OOM}",
        f"INFO 11-21 19:46:53 [model_runner.py:123] {OOM}",
        f"(AsyncvLLMServer pid=729634) ERROR 05-08 15:30:47 [core.py:390] {OOM}",
        f"[2025-10-31 11:59:10,379 E 90821 90821] {OOM}",
        f"2025-01-07 12:00:01,123 - {OOM}",
        f"node-17:3221:3221 [5] {OOM}",
        f"0: {OOM}",
        f"[default0]:{OOM}",
        f"ERROR:root:{OOM}",
        f"2025-01-07 12:00:01.123 | ERROR    | verl.trainer.main_ppo:run:88 - {OOM}",
        f"trainer-1  | {OOM}",
        f"> (WorkerDict pid=48211, ip=10.0.3.7) {OOM}",
        f"> > [rank3]: {OOM}",
        f"(WorkerDict pid=9238) [2025-08-15 00:16:56 DP0 TP1] {OOM}",
        f"  0%|          | 0/5000 [00:03<?, ?it/s]{OOM}",
        f"[36m(TaskRunner pid=2396241)[0m {OOM}",
        f"(WorkerDict pid=9205, ip=10.0.3.12) {OOM} [repeated 7x across cluster]",
    ],
)
def test_log_prefixes_are_stripped(raw):
    assert normalise(raw).lines == [OOM]


def test_ansi_colours_crlf_and_tabs_are_removed():
    raw = f"\x1b[36m(WorkerDict pid=1)\x1b[0m \x1b[1;31m{OOM}\x1b[0m\r\n\tat line\r\n"
    paste = normalise(raw)
    assert paste.lines[0] == OOM
    assert paste.lines[1] == "    at line"


def test_markdown_fences_and_tracker_escaping_are_undone():
    raw = "```python\nValueError: tokenizer.pad\\_token\\_id is None &lt;pad&gt;\n```"
    assert "ValueError: tokenizer.pad_token_id is None <pad>" in normalise(raw).lines


def test_a_log_quoted_as_inline_code_loses_its_backticks_and_prefixes():
    # from an issue that wrapped a multi-line Ray log in single backticks
    raw = (
        "`(WorkerDict pid=9238) [2025-08-15 00:16:56] Scheduler hit an exception: Traceback (most recent call last):\n"
        "(WorkerDict pid=9238)     batch = self.get_next_batch_to_run()`"
    )
    assert normalise(raw).lines == [
        "Scheduler hit an exception: Traceback (most recent call last):",
        "    batch = self.get_next_batch_to_run()",
    ]


def test_inline_code_inside_a_line_is_kept():
    assert normalise("ValueError: set `data.max_prompt_length` higher").lines == [
        "ValueError: set `data.max_prompt_length` higher"
    ]


def test_ranks_are_recorded_per_line():
    raw = "\n".join(f"[rank{r}]: {OOM}" for r in (0, 3, 7))
    paste = normalise(raw)
    assert [paste.rank_of(line) for line in range(3)] == [0, 3, 7]
    assert all(line.startswith("torch.OutOfMemoryError") for line in paste.lines)


def test_a_rank_in_the_message_is_not_a_rank_prefix():
    paste = normalise("(WorkerDict pid=7) ValueError: expected shape [3] but got [4]")
    assert paste.rank_of(0) is None


def test_numbers_that_matter_survive():
    raw = (
        "torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 1234)\n"
        "NCCL error in: /torch/csrc/ProcessGroupNCCL.cpp:260, unhandled system error (run with NCCL_DEBUG=INFO), NCCL version 2.21.5\n"
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED\nKilled by signal 15 (SIGTERM)"
    )
    text = normalise(raw).text
    for kept in (
        "exitcode: -9",
        "ProcessGroupNCCL.cpp:260",
        "NCCL version 2.21.5",
        "CUBLAS_STATUS_EXECUTION_FAILED",
        "signal 15",
    ):
        assert kept in text


def test_terminal_wrapped_lines_are_joined():
    long_line = (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
        "stored in KV cache (21360). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`."
    )
    other = "x" * 200
    wrapped = []
    for line in (long_line, other + " first", other + " second", "short tail"):
        wrapped += [line[i : i + 80] for i in range(0, len(line), 80)]
    paste = normalise("\n".join(wrapped))
    assert long_line in paste.lines


def test_a_pane_of_any_width_is_unwrapped_when_several_lines_show_the_wrap():
    # a tmux pane or a resized window wraps at a width no common terminal has (97 here)
    first = "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored"
    second = (
        "RuntimeError: Expected all tensors to be on the same device, but got index is on cpu, different from others"
    )
    wrapped = []
    for line in (first, second):
        wrapped += [line[i : i + 97] for i in range(0, len(line), 97)]
    assert normalise("\n".join(wrapped)).lines == [first, second]


def test_one_longest_line_at_an_uncommon_width_is_not_taken_for_a_wrap():
    # a log's own longest line, once, is no evidence of a wrap: the line after it stays a line of its own
    longest = "step:3 - actor/pg_loss:0.26 - actor/grad_norm:0.183 - response_length/mean:320.0 - timing_s/gen:19.312"
    assert len(longest) == 102
    lines = [longest, "validation done", "step:4 - actor/pg_loss:0.25"]
    assert normalise("\n".join(lines)).lines == lines


def test_one_wrapped_error_line_is_joined_but_a_new_record_is_not():
    error = (
        "(WorkerDict pid=90412, ip=10.20.1.7) RuntimeError: Expected all tensors to be on the same device, but got "
        "index is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper)"
    )
    pieces = [error[:120], error[120:]]
    paste = normalise("\n".join([*pieces, "(WorkerDict pid=90412, ip=10.20.1.7) Traceback (most recent call last):"]))
    assert paste.lines == [error.split(") ", 1)[1], "Traceback (most recent call last):"]
    assert paste.rank_of(0) is None and paste.source_of(1) == "pid=90412"


def test_a_line_that_happens_to_be_full_width_keeps_the_next_record_apart():
    first = "(TaskRunner pid=2210) " + "step:3 - actor/pg_loss:0.26 " * 3 + "x" * 14  # 120 characters
    assert len(first) == 120
    paste = normalise("\n".join([first, "ValueError: Total available GPUs 7.0 is less than total desired GPUs 8"]))
    assert paste.lines[1] == "ValueError: Total available GPUs 7.0 is less than total desired GPUs 8"


def test_lines_of_equal_length_are_not_joined_when_identical():
    same = "[rank0]: " + "W" * 71  # 80 characters, repeated: a real log, not a wrap
    paste = normalise("\n".join([same] * 5 + ["end"]))
    assert len(paste.lines) == 6


def test_lone_surrogates_in_a_str_are_replaced():
    # a str straight from JSON can hold half a surrogate pair; RE2 cannot search it as UTF-8
    paste = normalise(f"\ud800 {OOM}")
    assert paste.lines == [f"? {OOM}"]


def test_invalid_utf8_and_nul_bytes_never_raise():
    raw = b"\xff\xfe(WorkerDict pid=1) ValueError: bad \x00byte \xc3\x28 here\n"
    paste = normalise(raw)
    assert "ValueError: bad byte" in paste.text.replace("\ufffd", "")


def test_a_wrap_cut_inside_an_exception_name_is_joined():
    # a terminal 100 columns wide cuts this line after "Attribut"; "eError: ..." looks like an exception
    # line of its own, but a class name starts with a capital, so it is the cut line's continuation
    line = (
        "(WorkerDict pid=48211, ip=10.0.3.7) (vLLMHttpServer pid=956139) (EngineCore_DP0 pid=956602) "
        "AttributeError: 'NoneType' object has no attribute 'result'"
    )
    assert line[:100].endswith("Attribut")
    paste = normalise("\n".join([line[:100], line[100:]]))
    assert paste.lines == ["AttributeError: 'NoneType' object has no attribute 'result'"]


def test_a_full_width_frame_line_keeps_its_code_line_apart():
    # a frame line that happens to fill the 120 columns is complete: the indented line under it is its
    # code, not its wrapped rest (a signature `in kl_penalty\n\s*raise` needs the two lines apart)
    frame = '  File "/opt/conda/lib/python3.10/site-packages/verl/trainer/ppo/core_algos.py", line 1203, in kl_penalty'
    frame = frame.replace("/opt/", "/opt/" + "x" * (119 - len(frame)) + "/")
    assert len(frame) == 120
    lines = ["Traceback (most recent call last):", frame, "    raise NotImplementedError", "NotImplementedError"]
    assert normalise("\n".join(lines)).lines == lines


def test_a_full_width_code_line_keeps_its_markers_apart():
    code = "    return self._call_impl(*args, **kwargs) " + "#" * 76
    assert len(code) == 120
    lines = ['  File "/x/module.py", line 1773, in _wrapped_call_impl', code, "    " + "^" * 40, "RuntimeError: boom"]
    assert normalise("\n".join(lines)).lines == lines


def test_a_frame_line_wrapped_inside_its_path_is_still_joined():
    frame = (
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/fused_moe/'
        'unquantized_fused_moe_method.py", line 238, in process_weights_after_loading'
    )
    pieces = [frame[:120], frame[120:]]
    paste = normalise("\n".join([*pieces, "    self._setup_kernel(", "ValueError: x"]))
    assert paste.lines == [frame, "    self._setup_kernel(", "ValueError: x"]


def test_a_full_width_frame_line_keeps_an_unindented_code_line_apart_but_not_a_cut_name():
    # pastes copied from a page that dropped the indentation still carry the code line on a line of its own
    frame = '  File "/opt/conda/lib/python3.10/site-packages/verl/trainer/ppo/core_algos.py", line 1203, in kl_penalty'
    frame = frame.replace("/opt/", "/opt/" + "x" * (119 - len(frame)) + "/")
    unindented = normalise("\n".join([frame, "raise NotImplementedError", "NotImplementedError"]))
    assert unindented.lines[1] == "raise NotImplementedError"
    # a wrap that cut the function name: its tail is the same line's rest
    longer = frame.replace("/opt/", "/opt/xxxx", 1)
    cut, rest = longer[:120], longer[120:]
    assert cut.endswith("in kl_pen") and rest == "alty"
    assert normalise("\n".join([cut, rest, "    raise NotImplementedError"])).lines[0] == longer
