"""The schema of an error entry's front matter (DESIGN.md, "Entry format")."""

from __future__ import annotations

import datetime
import hashlib
import re
from typing import Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field, field_validator

CATEGORIES = ("ENV", "CFG", "DATA", "ROLL", "TRAIN", "DIST", "CKPT", "MEG", "VLM", "AGENT", "LORA", "NPU")
CATEGORY_NAMES = {
    "ENV": ("Environment & dependencies", "环境与依赖"),
    "CFG": ("Configuration", "配置"),
    "DATA": ("Data & reward", "数据与奖励"),
    "ROLL": ("Rollout (vLLM / SGLang)", "Rollout 推理（vLLM / SGLang）"),
    "TRAIN": ("Training & memory", "训练与显存"),
    "DIST": ("Distributed & communication", "分布式与通信"),
    "CKPT": ("Checkpoints & model merging", "检查点与模型合并"),
    "MEG": ("Megatron & mbridge", "Megatron 与 mbridge"),
    "VLM": ("Vision-language models", "视觉语言模型"),
    "AGENT": ("Agent loop & tool calls", "Agent 循环与工具调用"),
    "LORA": ("LoRA", "LoRA"),
    "NPU": ("Ascend NPU", "昇腾 NPU"),
}
CODE_RE = re.compile(r"^(" + "|".join(CATEGORIES) + r")-\d{3}$")
FIX_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
REQUIRED_SECTIONS = ("What you see", "Why it happens", "How to confirm")
REQUIRED_SECTIONS_ZH = ("你会看到什么", "为什么会这样", "如何确认")

Category = Literal["ENV", "CFG", "DATA", "ROLL", "TRAIN", "DIST", "CKPT", "MEG", "VLM", "AGENT", "LORA", "NPU"]
# What a fix's advice rests on, shown on its page: a maintainer said so, users confirmed it worked, it was
# read in verl's source, or nobody has confirmed it yet.
Evidence = Literal["maintainer", "users", "source", "unconfirmed"]
Backend = Literal["fsdp", "megatron"]
Engine = Literal["vllm", "sglang", "hf", "trtllm"]
Hardware = Literal["nvidia", "ascend", "amd"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fix(Strict):
    """One way out of the failure; votes attach to its stable ``id``."""

    id: str
    title: str = Field(min_length=3)
    title_zh: str = Field(min_length=1)
    body: str = Field(min_length=20)
    dead_end: bool = Field(False, description="Known not to work; kept so users stop trying it.")
    evidence: Evidence | None = Field(None, description="What the advice rests on (required by kb check).")
    evidence_url: str | None = Field(None, description="The thread, PR or source line that shows it.")

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not FIX_ID_RE.match(value):
            raise ValueError("fix id must be lowercase words joined by '-' (e.g. 'lower-gpu-memory')")
        return value

    @property
    def content_hash(self) -> str:
        """Hash of what the fix says, so votes on a rewritten fix can be told apart."""
        return hashlib.sha256((self.title + "\n" + self.body).encode()).hexdigest()[:16]


class Review(Strict):
    """A second reader checked every fix against the release's source: when, against what, and the outcome."""

    release: str = Field(pattern=r"^\d+\.\d+(?:\.\d+)?(?:\.post\d+)?$")
    date: datetime.date
    result: Literal["confirmed", "corrected"]
    note: str | None = Field(None, description="What was corrected, in a sentence.")


PACKAGE_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class EntryMeta(Strict):
    """Front matter of ``content/errors/<CODE>.md``."""

    code: str
    title: str = Field(min_length=5)
    title_zh: str = Field(min_length=2)
    category: Category
    summary: str = Field(min_length=10)
    summary_zh: str = Field(min_length=4)
    exception: str = Field(min_length=2)
    signatures: list[str] = Field(min_length=1)
    examples: list[str] = Field(min_length=2)
    symptom_of: list[str] = []
    frames: list[str] = Field(
        [], description="Function names whose presence in the traceback's frames breaks ties (e.g. update_policy)."
    )
    fixes: list[Fix] = Field(min_length=1)
    tags: list[str] = []
    aliases: list[str] = Field(
        [],
        description="How users describe this failure in their own words (issue titles, colloquial Chinese): "
        "searched with the title, so a query in those words finds the entry.",
    )
    backends: list[Backend] = Field([], description="Training backends the failure occurs with; empty: any.")
    engines: list[Engine] = Field([], description="Rollout engines the failure occurs with; empty: any.")
    hardware: list[Hardware] = Field([], description="Accelerators the failure occurs on; empty: any.")
    models: list[str] = Field([], description="Model families the failure is specific to (qwen2.5-vl, ...).")
    reviewed: Review | None = Field(None, description="The second reading of the fixes (required by kb check).")
    fixed_in: str | None = Field(None, description="The release or PR that fixes it, e.g. 'verl 0.5.0' or a PR URL.")
    applies_to: str | None = None
    drift: list[str] = Field(
        [],
        description="Packages (PyPI names) whose version drift this entry is about: a drift finding about one of "
        "them points at the entry instead of repeating it.",
    )
    related: list[str] = []
    sources: list[str] = []
    invalid_keys: list[str] = Field(
        [], description="Config keys the entry names on purpose because they do not exist in verl."
    )
    invalid_modules: list[str] = Field(
        [], description="verl modules or files the entry names on purpose because they are gone (old layouts)."
    )

    @field_validator("code")
    @classmethod
    def _code_form(cls, value: str) -> str:
        if not CODE_RE.match(value):
            raise ValueError("code must look like CFG-004 (a category and three digits)")
        return value

    @field_validator("symptom_of", "related")
    @classmethod
    def _codes_form(cls, value: list[str]) -> list[str]:
        for code in value:
            if not CODE_RE.match(code):
                raise ValueError(f"{code!r} is not an entry code")
        return value

    @field_validator("drift")
    @classmethod
    def _package_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not PACKAGE_RE.fullmatch(name):
                raise ValueError(f"{name!r} is not a PyPI name in normal form (lower case, '-' between words)")
        return value

    @field_validator("applies_to")
    @classmethod
    def _specifier(cls, value: str | None) -> str | None:
        if value is None:
            return value
        package, _, spec = _split_requirement(value)
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise ValueError(f"{value!r} is not a PEP 440 requirement like 'verl>=0.4'") from None
        if not package.strip():
            raise ValueError("applies_to names no package")
        return value

    @field_validator("sources")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        for url in value:
            if not url.startswith("https://"):
                raise ValueError(f"source {url!r} must be an https URL")
        return value

    @field_validator("fixes")
    @classmethod
    def _unique_fix_ids(cls, value: list[Fix]) -> list[Fix]:
        ids = [fix.id for fix in value]
        duplicates = {fix_id for fix_id in ids if ids.count(fix_id) > 1}
        if duplicates:
            raise ValueError(f"fix ids repeat: {', '.join(sorted(duplicates))}")
        return value


def _split_requirement(value: str) -> tuple[str, str, str]:
    match = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", value)
    if not match:
        return "", "", value
    return match.group(1), "", match.group(2)


def applies_to_parts(value: str) -> tuple[str, SpecifierSet]:
    """Split ``'verl>=0.4,<0.6'`` into the package name and its specifier set."""
    package, _, spec = _split_requirement(value)
    return package.lower(), SpecifierSet(spec)
