"""Synthetic inputs for the benchmarks: multi-rank training logs and large entry corpora."""

from __future__ import annotations

import random
from pathlib import Path

from app.entries import Catalog, Entry, load_catalog_strict
from app.entries.frontmatter import Document
from app.settings import ROOT

CONTENT = ROOT / "content" / "errors"
WORDS = (
    "rollout",
    "actor",
    "critic",
    "reward",
    "batch",
    "gradient",
    "tensor",
    "sequence",
    "token",
    "node",
    "rank",
    "shard",
    "memory",
    "engine",
    "worker",
    "config",
    "checkpoint",
    "timeout",
    "loss",
    "kernel",
    "cache",
)


def training_log(size: int, *, seed: int = 1, ranks: int = 8) -> str:
    """A multi-rank log of about ``size`` bytes: Ray/vLLM/NCCL prefixes, metrics, one OOM and its cascade."""
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    step = 0
    while total < size:
        rank = rng.randrange(ranks)
        kind = rng.random()
        if kind < 0.5:
            line = (
                f"(WorkerDict pid={4000 + rank}, ip=10.0.0.{rank}) [rank{rank}]:INFO 11-21 19:46:{step % 60:02d} "
                f"[model_runner.py:{rng.randrange(900)}] step {step} loss={rng.random():.4f} "
                f"throughput {rng.randrange(100, 999)} tokens/s"
            )
        elif kind < 0.8:
            line = (
                f"(TaskRunner pid=2210) step:{step} - actor/pg_loss:{rng.random():.5f} - actor/grad_norm:"
                f"{rng.random() * 3:.4f} - response_length/mean:{rng.randrange(200, 900)}.0 - timing_s/gen:{rng.random() * 40:.3f}"
            )
        else:
            line = f"[2025-10-31 11:59:{step % 60:02d},379 I 90821 90821] core_worker.cc:{rng.randrange(900)}: task {rng.getrandbits(48):x} finished"
        lines.append(line)
        total += len(line) + 1
        step += 1
    middle = len(lines) * 3 // 4
    lines[middle:middle] = [
        "(WorkerDict pid=4003, ip=10.0.0.3) Traceback (most recent call last):",
        '(WorkerDict pid=4003, ip=10.0.0.3)   File "/verl/verl/workers/actor/dp_actor.py", line 401, in update_policy',
        "(WorkerDict pid=4003, ip=10.0.0.3)     loss.backward()",
        "(WorkerDict pid=4003, ip=10.0.0.3) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB. "
        "GPU 3 has a total capacity of 79.11 GiB of which 8.85 GiB is free.",
    ] + [
        f"[rank{r}]:[E419 10:42:28.858931807 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum=512, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600{r}12 "
        "milliseconds before timing out."
        for r in range(ranks)
        if r != 3
    ]
    return "\n".join(lines)


def single_line(size: int) -> str:
    """One line of ``size`` bytes that ends in a known error."""
    tail = " torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    return ("x" * max(0, size - len(tail))) + tail


def corpus(count: int, folder: Path, *, seed: int = 7) -> Catalog:
    """``count`` distinct entries derived from the real ones (codes SYN-00000...), written as files under ``folder``."""
    rng = random.Random(seed)
    real = list(load_catalog_strict(CONTENT))
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for number in range(count):
        base = real[number % len(real)]
        code = f"SYN-{number:05d}"
        noise = " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(30))
        meta = base.meta.model_copy(update={"code": code, "title": f"{base.meta.title} ({rng.choice(WORDS)} {number})"})
        body = base.body + "\n" + noise + "\n"
        path = folder / f"{code}.md"
        path.write_text(body)
        entries.append(
            Entry(
                meta=meta,
                body=body,
                path=path,
                document=Document({}, body, 1),
                body_zh=base.body_zh,
                fix_bodies_zh=base.fix_bodies_zh,
                raw=body,
            )
        )
    return Catalog(entries)


def queries(count: int = 200, *, seed: int = 3) -> list[str]:
    """Queries users type: error fragments, config keys, words, a few Chinese ones."""
    rng = random.Random(seed)
    real = list(load_catalog_strict(CONTENT))
    picked: list[str] = []
    while len(picked) < count:
        entry = rng.choice(real)
        choice = rng.random()
        if choice < 0.35:
            words = entry.meta.title.split()
            start = rng.randrange(max(1, len(words) - 2))
            picked.append(" ".join(words[start : start + 3]))
        elif choice < 0.6 and entry.meta.tags:
            picked.append(rng.choice(entry.meta.tags))
        elif choice < 0.85:
            words = entry.meta.examples[0].split()
            picked.append(" ".join(words[:4]))
        else:
            picked.append(entry.meta.title_zh[:4])
    return picked


def pip_listing() -> str:
    """A `pip list` as users paste it above their log: versions the findings read (vLLM out of verl 0.9.1's range)."""
    rows = [
        ("Package", "Version"),
        ("-" * 24, "-" * 12),
        ("verl", "0.9.1"),
        ("torch", "2.11.0"),
        ("vllm", "0.11.0"),
        ("transformers", "5.9.0"),
        ("tensordict", "0.10.0"),
        ("numpy", "2.2.6"),
        ("ray", "2.49.0"),
    ]
    return "".join(f"{name:<24} {version}\n" for name, version in rows)


def many_tracebacks_log(examples: list[str], size: int, *, non_ascii: bool, seed: int = 3) -> str:
    """A log of ``size`` bytes with each example (real error lines and tracebacks) once among metric lines;
    ``non_ascii`` adds a tqdm bar and a Chinese path to every metric line, as real logs have."""
    rnd = random.Random(seed)
    every = max(1, (size // 110) // max(1, len(examples)))
    bar, path = ("█" * 20, "/数据/模型") if non_ascii else ("#" * 20, "/data/model")
    parts: list[str] = []
    total, step, shown = 0, 0, 0
    while total < size:
        step += 1
        if step % every == 0 and shown < len(examples):
            parts.append(examples[shown].rstrip("\n") + "\n")
            shown += 1
        parts.append(
            f"(WorkerDict pid={1000 + step % 8}, ip=10.0.0.{step % 8}) step {step}: loss {rnd.random():.4f} "
            f"|{bar}| {path}/ckpt\n"
        )
        total += len(parts[-1].encode())
    return "".join(parts)
