"""`kb new`: the first draft of an entry for an error line the manual does not know yet.

The draft holds what can be derived from the line: the next free code of its category, the exception,
a signature with the line's variable parts (numbers, paths, addresses, ids, user and host names) made
variable, proved to match the line and no other entry's examples, and the line as the first example.
What only a person can write is marked TODO, and `kb check` refuses an entry until none is left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from app.entries import CATEGORIES, Catalog
from app.matcher import Matcher, compile_signature
from app.matcher.blocks import EXCEPTION_LINE_RE
from app.matcher.normalise import normalise
from app.matcher.signatures import specificity

TODO = "TODO:"  # marks what a person must write; `kb check` refuses an entry that still has one
FIX_ID = "todo-name-the-fix"
MIN_LITERALS = 8  # kb check's floor for a signature
MESSAGE_CHARS = 120  # the start of a long message names the failure; its tail is mostly variable detail
# Variable parts of a line, each with the RE2 pattern that stands for it; one alternation, left to right.
_VARIABLE = [
    (r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://\S+", r"\S+"),  # URL
    (r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", r"\S+@\S+"),  # user@host
    (r"\b[A-Za-z]:\\[^\s'\"]*", r"[^\s'\"]+"),  # C:\Users\name\...
    (r"(?<![\w.])(?:~|\.{1,2})?(?:[\w.@+-]*/)+[\w.@+-]*[\w@+-]", r"[^\s'\"]+"),  # a path
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", r"[\d.:]+"),  # IPv4 (and port)
    (r"(?i:\b(?:[a-z0-9-]+\.)+(?:com|net|org|io|ai|cn|local|internal|lan|edu|cluster|svc|corp|cloud)\b)", r"[\w.-]+"),
    (
        "|".join(rf"(?<=\b{key}=)[^\s,;)\]]+" for key in ("host", "node", "user", "hostname", "username")),
        r"[^\s,;)\]]+",
    ),  # host=gpu-node-17, user=alice
    (r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b", r"[0-9a-fA-Fx]+"),
    (r"\d+(?:\.\d+)*", r"[\d.]+"),  # numbers, versions, sizes (a bare integer becomes \d+)
]
VARIABLE_RE = re.compile("|".join(f"({pattern})" for pattern, _ in _VARIABLE))
SPACE_RE = re.compile(r"\s+")
# What a line talks about, to pick a category when none is given: the first that matches wins.
CATEGORY_HINTS = [
    ("NPU", r"\bnpu\b|ascend|hccl|\bcann\b|mindspeed|torch_npu"),
    ("LORA", r"lora"),
    ("VLM", r"\bvl\b|_vl|-vl|vision|image|pixel_values|multi.?modal|llava"),
    ("MEG", r"megatron|mcore|mbridge"),
    ("AGENT", r"agent|tool|sandbox"),
    ("ROLL", r"vllm|sglang|rollout|kv.?cache|eagle|wake_up|shm_broadcast|engine"),
    ("DIST", r"nccl|gloo|\bray\b|distributed|rank|placement|actor died"),
    ("CKPT", r"checkpoint|merger|state_dict|safetensors"),
    ("DATA", r"parquet|dataset|reward|tokenizer|chat_template"),
    ("CFG", r"config|override|hydra"),
    ("ENV", r"import|no module|version|install|libcu|\.so\b"),
]


class ScaffoldRefused(Exception):
    """The line cannot start a new entry; the message says why (an entry already matches it, ...)."""


@dataclass(frozen=True)
class Draft:
    code: str
    exception: str
    signature: str
    line: str
    markdown: str
    markdown_zh: str


def error_line(text: str) -> str:
    """The error line of what was given: the last exception line, else the last non-empty line, prefixes
    (Ray's worker tags, log levels, timestamps) removed."""
    lines = [line.strip() for line in normalise(text).lines if line.strip()]
    if not lines:
        raise ScaffoldRefused("the error line is empty")
    exceptions = [line for line in lines if EXCEPTION_LINE_RE.match(line)]
    return (exceptions or lines)[-1]


def split_exception(line: str) -> tuple[str, str]:
    """(exception class or `log`, message)."""
    parsed = EXCEPTION_LINE_RE.match(line)
    if parsed and parsed.group(2) is not None:
        return parsed.group(1), parsed.group(2).strip()
    return "log", line


def generalise(text: str) -> str:
    """An RE2 pattern for ``text`` with its variable parts made variable and any whitespace matching any."""
    parts, position = [], 0
    for found in VARIABLE_RE.finditer(text):
        parts.append(_literal(text[position : found.start()]))
        pattern = _VARIABLE[found.lastindex - 1][1]
        parts.append(r"\d+" if found.lastindex == len(_VARIABLE) and found.group(0).isdigit() else pattern)
        position = found.end()
    parts.append(_literal(text[position:]))
    return "".join(parts)


# The placeholders of a stored fingerprint's template (app.insights.fingerprint), as patterns and as a
# sample value that stands in the example (the paste itself was never stored).
PLACEHOLDERS = {
    "'<v>'": (r"'[^']*'", "'value'"),
    '"<v>"': (r'"[^"]*"', '"value"'),
    "<user>@<host>": (r"\S+@\S+", "user@host"),
    "<url>": (r"\S+", "https://host/path"),
    "<path>": (r"[^\s'\"]+", "/path/to/file"),
    "<ip>": (r"[\d.:]+", "10.0.0.1"),
    "<host>": (r"[\w.-]+", "node.cluster"),
    "<name>": (r"[^\s,;)\]]+", "name"),
    "<secret>": (r"\S+", "secret"),
    "<hex>": (r"[0-9a-fA-Fx-]+", "0x7f3e"),
    "<n>": (r"[\d.]+", "1"),
}
PLACEHOLDER_RE = re.compile("|".join(re.escape(name) for name in PLACEHOLDERS))


def generalise_template(template: str) -> str:
    """An RE2 pattern for a fingerprint's template: each placeholder stands for what it replaced."""
    parts, position = [], 0
    for found in PLACEHOLDER_RE.finditer(template):
        parts += [_literal(template[position : found.start()]), PLACEHOLDERS[found.group(0)][0]]
        position = found.end()
    return "".join(parts + [_literal(template[position:])])


def sample_of(template: str) -> str:
    """The template with a sample value in each placeholder."""
    return PLACEHOLDER_RE.sub(lambda found: PLACEHOLDERS[found.group(0)][1], template)


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(word) for word in SPACE_RE.split(text)) if text else ""


def _head(message: str) -> str:
    """The start of a long message, cut at a word boundary."""
    if len(message) <= MESSAGE_CHARS:
        return message
    cut = message[:MESSAGE_CHARS]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def guess_category(line: str) -> str:
    lowered = line.lower()
    for category, hint in CATEGORY_HINTS:
        if re.search(hint, lowered):
            return category
    return "TRAIN"


def next_code(content_dir: Path, category: str) -> str:
    """The category's next number after the highest used by any file (codes are never reused)."""
    numbers = [
        int(path.name.split(".")[0].split("-")[1]) for path in content_dir.glob(f"{category}-[0-9][0-9][0-9]*.md")
    ]
    return f"{category}-{max(numbers, default=0) + 1:03d}"


def draft_entry(catalog: Catalog, content_dir: Path, text: str, category: str | None = None) -> Draft:
    """Draft an entry for the error line in ``text``; raise ScaffoldRefused when an entry already matches it
    or no signature can be derived that matches it and no other entry's examples."""
    line = error_line(text)
    exception, message = split_exception(line)
    given = text.strip()
    # the example is the line as the user has it (prefixes and all), unless several lines were given
    example = given if "\n" not in given else line
    return _draft(catalog, content_dir, example, exception, [generalise(_head(message)), generalise(message)], category)


def draft_from_fingerprint(
    catalog: Catalog, content_dir: Path, exception: str, template: str, category: str | None = None
) -> Draft:
    """Draft an entry for a recorded fingerprint: its template is the signature, a sample of it the example."""
    line = sample_of(template if exception == "log" else f"{exception}: {template}")
    note = f"{TODO} a sample of a recorded template (the paste was never stored): replace it with a real paste"
    return _draft(catalog, content_dir, line, exception, [generalise_template(template)], category, note)


def _draft(
    catalog: Catalog,
    content_dir: Path,
    line: str,
    exception: str,
    candidates: list[str],
    category: str | None,
    example_note: str = "",
) -> Draft:
    known = Matcher(catalog).signatures.hits(normalise(line).searchable)
    if known:
        codes = sorted({signature.code for signature, _spans in known})
        titles = "; ".join(f"{code} ({catalog.get(code).meta.title})" for code in codes)
        raise ScaffoldRefused(f"an entry already matches this line: {titles}")
    category = category or guess_category(line)
    if category not in CATEGORIES:
        raise ScaffoldRefused(f"{category} is not a category ({', '.join(CATEGORIES)})")
    if exception != "log":
        short_type = re.escape(exception.rsplit(".", 1)[-1])
        candidates = candidates + [short_type + r":\s*" + candidate for candidate in candidates]
    signature = _signature(catalog, line, candidates)
    code = next_code(content_dir, category)
    markdown = _markdown(code, category, exception, signature, line, example_note)
    return Draft(code, exception, signature, line, markdown, _markdown_zh())


def _signature(catalog: Catalog, line: str, candidates: list[str]) -> str:
    """The first candidate that is specific enough, matches the line and no other entry's example."""
    target = normalise(line).text
    clashes: set[str] = set()
    for candidate in dict.fromkeys(candidates):
        if specificity(candidate) < MIN_LITERALS:
            continue
        compiled = compile_signature(candidate)
        if not compiled.search(target):
            continue
        clashing = _examples_matched(catalog, compiled)
        if not clashing:
            return candidate
        clashes |= clashing
    if clashes:
        raise ScaffoldRefused(
            "every signature derived from this line also matches examples of "
            f"{', '.join(sorted(clashes))}; extend that entry, or pass a longer line"
        )
    raise ScaffoldRefused(
        "the line has too little fixed text for a signature (fewer than "
        f"{MIN_LITERALS} literal characters once numbers and paths are made variable)"
    )


def _examples_matched(catalog: Catalog, compiled) -> set[str]:
    return {
        entry.code for entry in catalog for example in entry.meta.examples if compiled.search(normalise(example).text)
    }


def _quote(text: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


def _markdown(code: str, category: str, exception: str, signature: str, line: str, example_note: str) -> str:
    note = f"  # {example_note}\n" if example_note else ""
    return f"""---
code: {code}
title: '{TODO} what fails, in a few words'
title_zh: '{TODO} 中文标题'
category: {category}
summary: '{TODO} one sentence a user can act on.'
summary_zh: '{TODO} 一句可以照做的中文摘要。'
exception: {_quote(exception)}
signatures:
  # generalised by `kb new` from the first example (numbers, paths, addresses and names made variable)
  - {_quote(signature)}
examples:
{note}  - {_quote(line)}
  - '{TODO} a second real paste of this failure, as a user posted it (a traceback, a prefixed log line)'
fixes:
  - id: {FIX_ID}
    title: '{TODO} what to do'
    title_zh: '{TODO} 怎么做'
    evidence: unconfirmed
    body: |
      {TODO} the exact override or command, and what it changes.
sources: []
# reviewed: add the second reading of every fix against verl's source (release, date, result)
---
## What you see

{TODO} the error as users see it, and where in the run it appears.

## Why it happens

{TODO} the cause, with the verl code or issue that shows it.

## How to confirm

{TODO} a check the user can run before applying the fix.
"""


def _markdown_zh() -> str:
    return f"""---
fix_bodies:
  {FIX_ID}: |
    {TODO} 修复的中文说明。
---
## 你会看到什么

{TODO} 用户看到的报错，以及它出现在训练的哪个阶段。

## 为什么会这样

{TODO} 原因，以及能说明它的 verl 代码或 issue。

## 如何确认

{TODO} 应用修复前可以运行的检查。
"""


def write_draft(draft: Draft, content_dir: Path) -> list[Path]:
    """Write ``<CODE>.md`` and ``<CODE>.zh.md``; never over an existing file."""
    paths = [content_dir / f"{draft.code}.md", content_dir / f"{draft.code}.zh.md"]
    for path, text in zip(paths, (draft.markdown, draft.markdown_zh), strict=True):
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(text)
    return paths
