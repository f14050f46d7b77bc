"""What the manual keeps of an error instead of the paste: its type, its message with every variable
part removed, the deepest verl frame and the verl version. Same error, same fingerprint, whichever rank,
host, path or number it came with; nothing in it can name a person, a machine or a secret.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from app.matcher import CONFIDENT, Diagnosis
from app.matcher.blocks import EXCEPTION_LINE_RE, Block

TEMPLATE_CHARS = 300
SEARCH_CHARS = 200
EXCEPTION_CHARS = 120
FRAME_CHARS = 200
LINE_CHARS = 2000  # a pathological line is cut before the masks run over it
ID_RE = re.compile(r"^[0-9a-f]{16}$")
EXCEPTION_NAME_RE = re.compile(r"^[\w.]+(?:\([\w.]+\))?$")
VERSION_RE = re.compile(r"^\d+(?:\.\d+){0,3}(?:(?:\.?(?:post|dev|rc|a|b))\d*)?$")
VERL_MODULE_RE = re.compile(r"^verl/(?![\w/.-]*(?:site|dist)-packages/)[\w/.-]+\.py$")  # not a venv named verl
FUNCTION_RE = re.compile(r"^[\w<>.]+$")

# Order matters: whole URLs and secrets go before the paths and numbers inside them are cut apart.
_PRIVATE = [
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://\S+"), "<url>"),
    (re.compile(r"\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]{4,}"), "<secret>"),  # a JWT
    (
        re.compile(
            r"\b(?:hf|sk|pk|rk|ghp|gho|ghs|ghu|github_pat|glpat|xox[abpors]|AKIA|ASIA|AIza|wandb)[-_][\w-]{6,}"
            r"|\bAKIA[A-Z0-9]{12,}"
        ),
        "<secret>",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w.~+/=-]{8,}"), r"\1 <secret>"),
    (
        re.compile(
            r"(?i)\b([\w-]*(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|credential)s?)"
            r"(['\"]?\s*[:=]\s*)['\"]?[^\s'\",;]+"
        ),
        r"\1\2<secret>",
    ),
    (re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*"), "<user>@<host>"),
    (re.compile(r"\b[A-Za-z]:\\[^\s'\"]*"), "<path>"),  # C:\Users\name\...
    (re.compile(r"(?<![\w<>])(?:~|\.{1,2})?(?:[\w.@+-]*/)+[\w.@+-]*[\w@+-]"), "<path>"),  # /home/a/x.py, a/b, ~/x
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\b(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4}\b"), "<ip>"),
    (re.compile(r"(?i)\bip-\d+-\d+-\d+-\d+\b"), "<host>"),  # cloud host names spell the address
    (
        re.compile(r"(?i)\b(?:[a-z0-9-]+\.)+(?:com|net|org|io|ai|cn|local|internal|lan|edu|cluster|svc|corp|cloud)\b"),
        "<host>",
    ),
    (
        re.compile(r"(?i)\b((?:host|hostname|node|node_name|nodename|user|username|login|owner)\s*[=:]\s*)[^\s,;)\]]+"),
        r"\1<name>",
    ),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<hex>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b"), "<hex>"),
]
# A long run of letters and digits that mixes cases and digits reads as a key, not as a word.
TOKEN_RE = re.compile(r"\b[A-Za-z0-9_-]{20,}\b")
QUOTED_RE = re.compile(r"'[^'\n]{0,500}'|\"[^\"\n]{0,500}\"")
NUMBER_RE = re.compile(r"\d+(?:\.\d+)*")
SPACE_RE = re.compile(r"\s+")


def _looks_like_token(word: str) -> bool:
    digits = sum(c.isdigit() for c in word)
    return (digits >= 3 and any(c.isupper() for c in word) and any(c.islower() for c in word)) or (
        len(word) >= 32 and digits >= 1 and "_" not in word
    )


def scrub(text: str) -> str:
    """Remove what could name a person, a machine or a secret: URLs, keys, emails, paths, addresses, ids."""
    text = text[:LINE_CHARS]
    for pattern, replacement in _PRIVATE:
        text = pattern.sub(replacement, text)
    text = TOKEN_RE.sub(lambda m: "<secret>" if _looks_like_token(m.group(0)) else m.group(0), text)
    return SPACE_RE.sub(" ", text).strip()


def search_key(query: str) -> str:
    """A search as it is stored: scrubbed, lower case, single spaces, at most 200 characters."""
    return scrub(query[:LINE_CHARS]).lower()[:SEARCH_CHARS].strip()


def template_of(message: str) -> str:
    """The message as a template: private parts, quoted values and numbers made placeholders."""
    text = scrub(message)
    text = QUOTED_RE.sub(lambda m: m.group(0)[0] + "<v>" + m.group(0)[0], text)
    text = NUMBER_RE.sub("<n>", text)
    return text[:TEMPLATE_CHARS]


def verl_frame(frames: list[str]) -> str | None:
    """The deepest frame inside the verl package, as ``verl/path.py:function`` (no directory above it)."""
    for frame in reversed(frames):
        path, _, function = frame.rpartition(":")
        module = _verl_module(path.replace("\\", "/"))
        if module and FUNCTION_RE.match(function):
            return f"{module}:{function}"[:FRAME_CHARS]
    return None


def _verl_module(path: str) -> str | None:
    """The path from the last "verl/" directory on: that part names a verl module (site-packages/verl/...,
    a checkout at ~/src/verl/verl/...); what comes before it is the user's machine."""
    start = path.rfind("/verl/")
    module = path[start + 1 :] if start >= 0 else path
    return module if VERL_MODULE_RE.match(module) else None


@dataclass(frozen=True)
class Fingerprint:
    """One kind of error, as stored: the id groups every paste of it."""

    id: str
    exception: str  # the exception class, or "log" for an error line that is no exception
    template: str
    frame: str | None
    verl_version: str | None


def fingerprint(
    exception_line: str, frames: list[str] = (), verl_version: str | None = None, wrapped_type: str = ""
) -> Fingerprint:
    """Fingerprint one error line (and the frames of its traceback); a traceback cut before its error
    line is named by the type a Ray wrapper gave, else ``truncated``."""
    line = exception_line.strip()[:LINE_CHARS]
    parsed = EXCEPTION_LINE_RE.match(line)
    exception, message = ("log" if line else wrapped_type or "truncated"), line
    if parsed and EXCEPTION_NAME_RE.match(parsed.group(1)):
        exception, message = parsed.group(1)[:EXCEPTION_CHARS], parsed.group(2) or ""
    template = template_of(message)
    frame = verl_frame(list(frames))
    key = "\n".join((exception, template, frame or ""))
    return Fingerprint(
        hashlib.sha256(key.encode()).hexdigest()[:16], exception, template, frame, _version(verl_version)
    )


def _version(version: str | None) -> str | None:
    """The release part of a version: a local label (``+cu121.alice``) can name anything."""
    if not version:
        return None
    release = version.split("+", 1)[0]
    return release if VERSION_RE.match(release) else None


@dataclass(frozen=True)
class Observation:
    """The error a diagnosis was about, and whether the manual failed to answer it."""

    fingerprint: Fingerprint
    missed: bool


def observe(diagnosis: Diagnosis) -> Observation | None:
    """Fingerprint the error a paste is about; None when the paste holds no error at all.

    A miss is a paste with no confident match, or one whose matched error is followed by a complete
    traceback no signature explains (the crash the manual does not cover). Otherwise the error is the
    block the first confident match explained.
    """
    blocks = diagnosis.blocks
    version = diagnosis.environment.versions.get("verl")
    confident = [match for match in diagnosis.matches if match.confidence in CONFIDENT]
    top = confident[0] if confident else None
    after = top.block if top is not None and top.block is not None else -1
    crash = _unexplained_crash(blocks, diagnosis.explained, after)
    if crash is not None:
        return Observation(_of_block(crash, version), True)
    if top is None:
        last = _last_error(blocks)
        return Observation(_of_block(last, version), True) if last else None
    if top.block is None or not blocks[top.block].exception_line:
        frames = blocks[top.block].frames if top.block is not None else ()
        return Observation(fingerprint(top.matched_line, frames, version), False)
    return Observation(_of_block(blocks[top.block], version), False)


def _of_block(block: Block, version: str | None) -> Fingerprint:
    return fingerprint(block.exception_line, block.frames, version, block.wrapped_type)


def _unexplained_crash(blocks: list[Block], explained: set[int], after: int) -> Block | None:
    """The last complete traceback after block ``after`` that no signature explains."""
    for number in range(len(blocks) - 1, after, -1):
        block = blocks[number]
        if block.kind == "traceback" and not block.truncated and number not in explained:
            return block
    return None


def _last_error(blocks: list[Block]) -> Block | None:
    """The last block that states its error; a traceback cut before its error line only when no other is
    left (then its frames and the type a Ray wrapper names are what tells it apart)."""
    for wanted in (lambda b: not b.truncated, lambda b: b.exception_line, lambda b: True):
        found = [block for block in blocks if wanted(block)]
        if found:
            return found[-1]
    return None


def fingerprint_id(diagnosis: Diagnosis) -> str | None:
    """The id a match answer carries, for "this is not my error" reports."""
    observation = observe(diagnosis)
    return observation.fingerprint.id if observation else None
