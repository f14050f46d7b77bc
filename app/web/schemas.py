"""Pydantic models of the JSON API: requests, responses and the error shape (OpenAPI is built from them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.entries.model import Category


class ErrorDetail(BaseModel):
    code: str = Field(examples=["not_found"])
    message: str = Field(examples=["no entry with code 'CFG-999'"])


class ErrorResponse(BaseModel):
    error: ErrorDetail


class FixOut(BaseModel):
    id: str
    title: str
    body: str
    body_html: str
    votes_up: int
    votes_down: int
    success_rate: float | None = Field(description="Share of 'worked' votes; null before the first vote.")
    wilson_lower_bound: float = Field(description="The order of fixes: Wilson score lower bound of the votes.")
    dead_end: bool
    dead_end_reason: Literal["content", "votes"] | None
    evidence: Literal["maintainer", "users", "source", "unconfirmed"] = Field(
        description="What the advice rests on: a maintainer said so, users confirmed it, it was read in the "
        "source, or nobody has confirmed it yet.")
    evidence_url: str | None = Field(description="The thread, PR or source that shows it.")
    content_hash: str


class CommentOut(BaseModel):
    worked: bool
    comment: str = Field(description="Plain text as the voter wrote it; render it escaped.")
    at: str | None


class EntryFixOut(FixOut):
    comments: list[CommentOut] = Field(description="The newest comments left with votes on this fix.")
    environments: dict[str, dict[str, dict[str, int]]] = Field(
        description="field (verl_version, vllm_version, sglang_version, backend, gpu) -> value -> {up, down}.")


class LinkOut(BaseModel):
    code: str
    title: str
    url: str


class ErrorSummary(BaseModel):
    code: str = Field(examples=["ROLL-001"])
    title: str
    category: Category
    summary: str
    exception: str
    url: str


class FacetValue(BaseModel):
    value: str
    count: int = Field(description="Entries with this value among those the other filters select.")
    selected: bool
    name: str | None = Field(None, description="The category's name (category facet only).")


class ErrorList(BaseModel):
    errors: list[ErrorSummary]
    total: int
    facets: dict[str, list[FacetValue]] = Field(
        description="category, backend, engine, hardware, model, verl -> values with counts.")


class ReviewOut(BaseModel):
    release: str
    date: str
    result: Literal["confirmed", "corrected"]
    note: str | None


class ErrorOut(ErrorSummary):
    title_en: str
    title_zh: str
    lang: Literal["en", "zh"]
    has_zh: bool
    body: str
    body_html: str
    signatures: list[str]
    examples: list[str]
    fixes: list[EntryFixOut]
    symptom_of: list[LinkOut]
    related: list[LinkOut]
    tags: list[str]
    applies_to: str | None
    fixed_in: str | None = Field(description="The release or PR that fixes the failure, when one does.")
    reviewed: ReviewOut | None = Field(description="When a second reader checked every fix against verl's source.")
    backends: list[str] = Field(description="Training backends it occurs with (fsdp, megatron); empty: any.")
    engines: list[str] = Field(description="Rollout engines it occurs with (vllm, sglang, hf, trtllm); empty: any.")
    hardware: list[str] = Field(description="Accelerators it occurs on (nvidia, ascend, amd); empty: any.")
    models: list[str] = Field(description="Model families it is specific to; empty: any.")
    sources: list[str]


class SearchHit(BaseModel):
    code: str
    title: str
    category: Category
    snippet: str = Field(description="HTML: matched words wrapped in <mark>, everything else escaped.")
    score: float
    url: str


class SearchOut(BaseModel):
    hits: list[SearchHit]
    total: int
    took_ms: float
    facets: dict[str, int] = Field(description="Hits per category, before the category filter.")
    page: int
    pages: int
    suggestions: list[str]
    fuzzy: bool = Field(description="True when the words matched only with a typo allowance.")


class MatchIn(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "text": "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`",
        "limit": 5,
    }]})

    text: str = Field(min_length=1, description="A traceback, an error line or a whole training log.")
    limit: int = Field(5, ge=1, le=20)


class MatchOut(BaseModel):
    code: str
    title: str
    category: Category
    summary: str
    score: float
    confidence: Literal["high", "medium", "low"]
    matched_line: str
    signature: str
    root_cause: bool = Field(description="This match is the failure the rest of the log follows from.")
    consequence_of: str | None = Field(description="Code of the match this one is a cascade of.")
    demoted_because: str | None = Field(description="Why the entry ranks lower (e.g. versions in the log).")
    block: int | None
    url: str
    fixes: list[FixOut]


class BlockOut(BaseModel):
    kind: Literal["traceback", "error"]
    exception_line: str
    first_line: int
    last_line: int
    count: int = Field(description="How many times the same error appeared (e.g. once per rank).")
    ranks: str
    frames: list[str]
    explained: bool = Field(description="Whether an entry's signature matched inside this block; a complete "
                                        "traceback that none explains is an error the manual does not cover.")
    truncated: bool = Field(description="A traceback cut before its final exception line.")


class EnvironmentOut(BaseModel):
    versions: dict[str, str]
    gpu: str | None


class MatchResponse(BaseModel):
    matches: list[MatchOut]
    blocks: list[BlockOut]
    environment: EnvironmentOut
    took_ms: float
    ocr_text: str | None = Field(None, description="For an image: the text read from it, which was matched. "
                                 "Send it back as `text`, corrected, if a character was misread.")
    ocr_ms: float | None = Field(None, description="For an image: milliseconds spent reading it.")


class MatchForm(BaseModel):
    """`multipart/form-data` for POST /api/v1/match: a screenshot (or a text part) and the limit."""

    image: bytes | None = Field(None, json_schema_extra={"format": "binary"},
                                description="A PNG, JPEG or WebP screenshot of the error.")
    text: str | None = Field(None, description="The paste, when no image is sent.")
    limit: int = Field(5, ge=1, le=20)


class VoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"worked": True, "verl_version": "0.9.1"}]})

    worked: bool
    comment: str | None = Field(None, max_length=500)
    verl_version: str | None = Field(None, max_length=40)
    vllm_version: str | None = Field(None, max_length=40)
    sglang_version: str | None = Field(None, max_length=40)
    backend: Literal["fsdp", "fsdp2", "megatron", "other"] | None = None
    gpu: str | None = Field(None, max_length=60)


class VoteOut(BaseModel):
    code: str
    fix: FixOut
    your_vote: bool


class Health(BaseModel):
    status: Literal["ok", "starting"]
    entries: int
    index: str | None
    database: bool
    detail: str | None = None
