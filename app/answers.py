"""The answer contract: Pydantic models of every request and answer of the manual (JSON API, MCP, `kb match --json`,
the templates). OpenAPI is built from them; nothing else defines an answer's shape."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from app.entries.model import Category


class Answer(BaseModel):
    """An answer's model: a key it does not declare is an error (in OpenAPI: additionalProperties false)."""

    model_config = ConfigDict(extra="forbid")


class ErrorDetail(Answer):
    code: str = Field(examples=["not_found"])
    message: str = Field(examples=["no entry with code 'CFG-999'"])


class ErrorResponse(Answer):
    error: ErrorDetail


class FixOut(Answer):
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
        "source, or nobody has confirmed it yet."
    )
    evidence_url: str | None = Field(description="The thread, PR or source that shows it.")
    content_hash: str


class CommentOut(Answer):
    worked: bool
    comment: str = Field(description="Plain text as the voter wrote it; render it escaped.")
    at: str | None


class EntryFixOut(FixOut):
    comments: list[CommentOut] = Field(description="The newest comments left with votes on this fix.")
    environments: dict[str, dict[str, dict[str, int]]] = Field(
        description="field (verl_version, vllm_version, sglang_version, backend, gpu) -> value -> {up, down}."
    )


class LinkOut(Answer):
    code: str
    title: str
    url: str


class SourceOut(Answer):
    url: str
    title: str | None = Field(description="The thread's title as its reporter wrote it, when the manual has it.")


class ErrorSummary(Answer):
    code: str = Field(examples=["ROLL-001"])
    title: str
    category: Category
    summary: str
    exception: str
    url: str


class FacetValue(Answer):
    value: str
    count: int = Field(description="Entries with this value among those the other filters select.")
    selected: bool
    name: str | None = Field(None, description="The category's name (category facet only).")


class ErrorList(Answer):
    errors: list[ErrorSummary]
    total: int
    facets: dict[str, list[FacetValue]] = Field(
        description="category, backend, engine, hardware, model, verl -> values with counts."
    )


class ReviewOut(Answer):
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
    source_links: list[SourceOut] = Field(description="`sources` in the same order, each with its thread's title.")
    _cache_key: tuple = PrivateAttr(default=())

    @property
    def cache_key(self) -> tuple:
        """What this answer was built from (code, language, base URL, votes): the key of its renderings."""
        return self._cache_key


class SearchHit(Answer):
    code: str
    title: str
    category: Category
    snippet: str = Field(description="HTML: matched words wrapped in <mark>, everything else escaped.")
    score: float
    url: str
    title_zh: str = Field(
        description="The Chinese title, whatever `lang` is: a client can show it for a query "
        "in Chinese (`title` and `snippet` follow `lang`)."
    )
    summary_zh: str = Field(description="The Chinese one-sentence summary, whatever `lang` is.")


class SearchOut(Answer):
    query: str
    category: Category | None
    hits: list[SearchHit]
    total: int
    took_ms: float
    facets: dict[str, int] = Field(description="Hits per category, before the category filter.")
    page: int
    pages: int
    suggestions: list[str]
    fuzzy: bool = Field(description="True when the words matched only with a typo allowance.")
    dropped: list[str] = Field(
        description="When no entry has all the query's words: those the first hit lacks "
        "(the hits are the closest entries). Empty when an entry has them all."
    )
    limit: int


class CompactHit(Answer):
    code: str
    title: str
    url: str


class CompactSearchOut(Answer):
    """`GET /api/v1/search?compact=1`: the hits without snippets, scores or facets."""

    hits: list[CompactHit]
    total: int


class MatchIn(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "text": "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`",
                    "limit": 5,
                }
            ]
        }
    )

    text: str = Field(min_length=1, description="A traceback, an error line or a whole training log.")
    limit: int = Field(5, ge=1, le=20)


class MatchOut(Answer):
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


class BlockOut(Answer):
    kind: Literal["traceback", "error"]
    exception_line: str
    first_line: int
    last_line: int
    count: int = Field(description="How many times the same error appeared (e.g. once per rank).")
    ranks: str
    frames: list[str]
    explained: bool = Field(
        description="Whether an entry's signature matched inside this block; a complete "
        "traceback that none explains is an error the manual does not cover."
    )
    truncated: bool = Field(description="A traceback cut before its final exception line.")


class EnvironmentOut(Answer):
    versions: dict[str, str]
    gpu: str | None


class Evidence(Answer):
    line: int = Field(description="1-based line of the paste (prefixes such as Ray's removed).")
    text: str


class VersionDriftOut(Answer):
    kind: Literal["version_drift"]
    package: str
    found: str = Field(description="The version the paste shows.")
    supported: str = Field(description="The range the verl release declares (and the extra it comes from).")
    verl_version: str = Field(description="The verl release checked: one version or a span `0.5.0–0.6.1`.")
    verl_version_source: Literal["paste", "traceback", "pinned"] = Field(
        description="Where the release came from: stated in the paste, the releases whose files and line numbers "
        "fit the traceback, or the manual's pinned release."
    )
    admitted_by: str | None = Field(
        description="The verl releases whose declared range admits the version found "
        "(one version or a span), or null when none does."
    )
    entry: str | None = Field(description="The matched entry about this package's drift (it says what to do), or null.")
    evidence: Evidence


class RaiseSiteOut(Answer):
    kind: Literal["raise_site"]
    verl_version: str
    verl_version_source: Literal["paste", "traceback", "pinned"]
    path: str
    line: int
    function: str
    statement: str = Field(description="The `raise` or `assert` statement as written in that release.")
    condition: str = Field(description="The `if` test the raise sits under, or empty.")
    url: str = Field(description="The line at the release's tag on GitHub.")
    block: int
    located_by: Literal["frame", "message"] = Field(
        description="`frame`: the traceback's deepest frame is this line; `message`: the message fits the statement's text."
    )


class TruncatedOut(Answer):
    kind: Literal["truncated"]
    block: int
    wrapped_type: str | None = Field(description="The inner error a Ray wrapper names, e.g. OutOfMemoryError.")
    hint: str = Field(description="What the paste lacks and what to paste next.")


Finding = Annotated[VersionDriftOut | RaiseSiteOut | TruncatedOut, Field(discriminator="kind")]


class MatchResponse(Answer):
    matches: list[MatchOut]
    blocks: list[BlockOut]
    environment: EnvironmentOut
    findings: list[Finding] = Field(
        description="What the paste shows beyond the matches: version drift, the verl "
        "statement that raised, what a truncated paste lacks."
    )
    release_facts: str | None = Field(description="Why version and raise-site findings are unavailable, or null.")
    fingerprint: str | None = Field(
        description="Id of the error this answer is about (its type, message without "
        "variable parts and deepest verl frame); send it with `POST /api/v1/matches/"
        "feedback` to say a match is not your error. Null when the paste holds no error."
    )
    took_ms: float
    ocr_text: str | None = Field(
        None,
        description="For an image: the text read from it, which was matched. "
        "Send it back as `text`, corrected, if a character was misread.",
    )
    ocr_ms: float | None = Field(None, description="For an image: milliseconds spent reading it.")


class MatchForm(BaseModel):
    """`multipart/form-data` for POST /api/v1/match: a screenshot (or a text part) and the limit."""

    image: bytes | None = Field(
        None, json_schema_extra={"format": "binary"}, description="A PNG, JPEG or WebP screenshot of the error."
    )
    text: str | None = Field(None, description="The paste, when no image is sent.")
    limit: int = Field(5, ge=1, le=20)


FINGERPRINT_PATTERN = r"^[0-9a-f]{16}$"


class FeedbackIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"code": "ROLL-001", "fingerprint": "3f2a9c0d1e4b5a67", "right": False}]},
    )

    code: str = Field(max_length=16, description="The code of the match shown.")
    fingerprint: str = Field(pattern=FINGERPRINT_PATTERN, description="`fingerprint` of the match answer.")
    right: bool = Field(description="false: this is not my error; true: it was.")


class FeedbackOut(Answer):
    code: str
    fingerprint: str
    right: bool
    recorded: bool


class MissOut(Answer):
    fingerprint: str
    exception: str
    template: str = Field(
        description="The message with numbers, paths, ids, addresses, names and quoted values made placeholders."
    )
    frame: str | None = Field(description="The deepest verl frame, `verl/path.py:function`.")
    count: int = Field(description="Pastes of this error the manual had no answer for.")
    seen: int = Field(description="Pastes of this error in all.")
    first_seen: str
    last_seen: str
    verl_versions: list[str]
    command: str = Field(description="The command that starts an entry for it.")


class SearchMissOut(Answer):
    query: str
    kind: Literal["empty", "unopened"] = Field(description="Found nothing, or found results nobody opened.")
    count: int
    hits: int
    opened: int


class WrongAnswerOut(Answer):
    code: str
    title: str | None
    fingerprint: str
    count: int = Field(description="Voters who said the entry was not their error.")
    right: int = Field(description="Voters who said it was.")
    exception: str | None
    template: str | None


class FailingFixOut(Answer):
    code: str
    fix_id: str
    title: str
    votes_up: int
    votes_down: int


class InsightsOut(Answer):
    misses: list[MissOut]
    searches: list[SearchMissOut]
    wrong_answers: list[WrongAnswerOut]
    failing_fixes: list[FailingFixOut]


class VoteIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"worked": True, "verl_version": "0.9.1"}]}
    )

    worked: bool
    comment: str | None = Field(None, max_length=500)
    verl_version: str | None = Field(None, max_length=40)
    vllm_version: str | None = Field(None, max_length=40)
    sglang_version: str | None = Field(None, max_length=40)
    backend: Literal["fsdp", "fsdp2", "megatron", "other"] | None = None
    gpu: str | None = Field(None, max_length=60)


class VoteOut(Answer):
    code: str
    fix: FixOut
    your_vote: bool


class Health(Answer):
    status: Literal["ok", "starting"]
    entries: int
    index: str | None
    database: bool
    detail: str | None = None


class CompactFix(Answer):
    id: str
    title: str
    body: str
    success_rate: float | None


class CompactMatch(Answer):
    code: str
    title: str
    confidence: Literal["high", "medium", "low"]
    root_cause: bool
    consequence_of: str | None
    matched_line: str
    url: str
    fixes: list[CompactFix] = Field(description="The first two fixes that are no dead end.")


class CompactMatchResponse(Answer):
    """`POST /api/v1/match?compact=1`: the answer trimmed for an LLM's context."""

    ocr_text: str | None = Field(None, description="For an image: the text read from it.")
    matches: list[CompactMatch]
    findings: list[Finding]


class FixOutcomeOut(Answer):
    """MCP `report_fix_outcome`: the fix with its new counts."""

    code: str
    fix: FixOut
    recorded: bool


class OEmbedOut(Answer):
    """oEmbed 1.0 `rich` answer for an entry page: an iframe of its card."""

    type: Literal["rich"]
    version: Literal["1.0"]
    title: str
    provider_name: str
    provider_url: str
    html: str
    width: int
    height: int
    cache_age: int


# What the pages show beyond the JSON answers: built from the same models.


class CategoryOut(Answer):
    category: Category
    name: str
    count: int


class BrowseRow(ErrorSummary):
    votes: int = Field(description="Votes on all fixes of the entry.")


class BrowseGroup(Answer):
    category: Category
    name: str
    errors: list[BrowseRow]


class BrowseOut(Answer):
    """The browse page: the entries the filters select, grouped by category, with each filter's counts."""

    groups: list[BrowseGroup]
    errors: list[BrowseRow]
    total: int
    category: Category | None
    filters: dict[str, str | None]
    facets: dict[str, list[FacetValue]]
    sort: Literal["code", "votes"]

    def as_list(self) -> ErrorList:
        """`GET /api/v1/errors`: the same entries without the page's vote totals."""
        fields = set(ErrorSummary.model_fields)
        errors = [ErrorSummary(**row.model_dump(include=fields)) for row in self.errors]
        return ErrorList(errors=errors, total=len(errors), facets=self.facets)


class MostVotedFix(Answer):
    code: str
    fix_id: str
    title: str
    entry_title: str
    votes_up: int
    total: int


class HomeOut(Answer):
    categories: list[CategoryOut]
    most_voted: list[MostVotedFix]
    total: int


class ContextLine(Answer):
    text: str
    hit: bool


class PasteMatch(MatchOut):
    context: list[ContextLine] = Field(description="The matched line with the lines around it.")


class PasteAnswer(MatchResponse):
    """The paste page: the match answer with each matched line in its context."""

    matches: list[PasteMatch]


def dump(answer: BaseModel) -> dict:
    """The JSON of an answer: fields never given (an image's `ocr_text` on a text paste) are left out."""
    return answer.model_dump(mode="json", exclude_unset=True)
