"""Turn a paste (terminal colours, log prefixes, issue-tracker escaping, wrapped lines) into clean text.

Every step is a whole-text regex pass or a C-speed string operation, never a backtracking pattern
per line, so a 1 MiB log of one line costs the same per byte as one of twenty thousand lines.
"""

from __future__ import annotations

import bisect
import html
import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, pairwise

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
FENCE_RE = re.compile(r"(?m)^[ \t]*(?:```|~~~)[\w+-]*[ \t]*$")
# A log quoted as inline code in an issue: `(WorkerDict pid=1) ...` with the backticks at the ends
# of its first and last lines, where they would hide the prefix from the prefix pass.
INLINE_CODE_EDGE_RE = re.compile(r"(?m)^([ \t]*)`{1,2}(?=\S)|(?<=\S)`{1,2}[ \t]*$")
MD_ESCAPE_RE = re.compile(r"\\([_*\[\]()#<>`|~])")
HTML_ENTITY_RE = re.compile(r"&(?:lt|gt|amp|quot|#39|#x27|apos);")
# Colour codes whose ESC byte a web page dropped, left as "[36m(TaskRunner pid=1)[0m". Only removed
# when the reset code "[0m" shows the paste really carries them.
BARE_ANSI_RE = re.compile(r"\[(?:\d{1,3};){0,4}\d{1,3}m")
# A paste copied from a rendered issue: GitHub turned file names into links (`auto_init_[hook.py](https://hook.py)`).
AUTOLINK_RE = re.compile(r"\[([^\]\n]{1,300})\]\(https?://[^)\s]{1,1000}\)")
# A Chinese input method's colon after an exception name or a key (`ValueError：...`), as a log prints it.
FULLWIDTH_COLON_RE = re.compile(r"(?<=[A-Za-z0-9_)\]'\"])\uff1a[ \t]?")
# Ray's log deduplication suffix; the line before it is the same error as the one it repeats.
RAY_REPEATED_RE = re.compile(r" ?\[repeated \d+x across cluster\]")

# Prefixes that loggers and launchers put in front of lines. Each alternative is bounded; a line's
# run of prefixes is removed in one match. Order matters only for readability.
_PREFIXES = [
    r"\((?:[A-Za-z_][\w.:]{0,80}\s+)?pid=\d+(?:,\s*ip=[\w.:\-]{1,64})?(?:,\s*[\w]+=[\w.:\-]{1,64}){0,3}\)",  # (WorkerDict pid=1, ip=..)
    r"\((?:raylet|gcs_server|autoscaler|monitor|dashboard|bundle_reservation_check_func)[\w ,=.:\-]{0,80}\)",  # (raylet)
    r"\[(?:rank|RANK|Rank)\s?\d{1,5}\]:?",  # [rank3]:
    r"\[[EWIF]\d{3,4}\s+\d\d:\d\d:\d\d(?:\.\d{1,9})?\s+(?:\d+\s+)?[\w./\-]{1,120}:\d+\]",  # [E419 10:42:28.858 file.cpp:616]
    r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\s+\d\d-\d\d\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]\s]{1,200}\]",  # vLLM
    # [2025-01-01 12:00:00,123 E 1 1] (Ray) and [2025-07-12 21:26:28 DP0 TP1] (SGLang)
    r"\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:\s?[+-]\d\d:?\d\d|Z)?(?:\s+[A-Z]\s+\d+\s+\d+)?(?:\s+[A-Z]{2,4}\d{1,4}){0,4}\]",
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?(?:\s*[|-])?",  # 2025-01-01 12:00:00
    r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\s*(?::|\||-)\s",  # "INFO: " / "ERROR | "
    r"[\w.\-]{1,80}:\d{1,7}:\d{1,7}\s+\[\d{1,5}\]",  # NCCL: host:pid:tid [rank]
    r"[IWEF]\d{4}\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w./\-]{1,120}:\d+\]",  # glog: I0101 12:00:00.123 123 file.cc:12]
    r"\d{1,4}:\s(?=\S)",  # torchrun --tee / --role prefixes: "0: Traceback"
    r"\[\d{1,4}\]:\s?",  # "[3]: " from some launchers
    r"\[default\d{1,4}\]:",  # torchrun --tee with a role name: "[default0]:"
    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):[\w.]{1,80}:",  # Python logging: "ERROR:root:"
    r"[\w.<>\-]{1,120}:[\w<>\-]{1,80}:\d{1,6} - ",  # loguru's "module:function:12 - " after its level
    r"[\w.\-]{1,80}-\d{1,3}\s+\|\s",  # docker compose: "trainer-1  | "
    r">(?:[ \t]|$)",  # a log quoted in an issue comment: "> (WorkerDict pid=1) ..."
    r"\d{1,3}%\|[^|\n]{0,120}\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?\s*\[[^\]\n]{0,80}\]",  # a tqdm bar glued to a line
]
_PREFIX_RUN = r"[ \t]*(?:(?:" + "|".join(_PREFIXES) + r")[ \t]?){1,6}"
PREFIX_RUN_RE = re.compile(_PREFIX_RUN)
# The whole-text pass anchors on a newline rather than (?m)^: a pattern that starts with a literal
# lets the regex engine skip ahead to the next line break instead of trying every character.
PREFIX_AFTER_NEWLINE_RE = re.compile(r"\n" + _PREFIX_RUN)
SOURCE_RE = re.compile(r"pid=\d+|\[(?:rank|RANK|Rank)\s?\d{1,5}\]")
RANK_RE = re.compile(r"\[(?:rank|RANK|Rank)\s?(\d{1,5})\]|\s\[(\d{1,5})\]$|^(\d{1,4}):\s")
# Terminal and web-console widths that wrap long lines: a line exactly as long as the longest, at one
# of these widths, may have been cut there by the viewer it was copied from.
WRAP_WIDTHS = frozenset({80, 100, 120, 128, 132, 140, 150, 160, 180, 200, 220, 240, 250, 256})
# At any other width, a wrap shows as several different lines of exactly the longest length, each continued
# on the next line; one such line could be a log's own longest line.
MIN_PANE_WIDTH = 60
MIN_FULL_LINES = 2
NEAR_WIDTH = 12
# A line that starts a record of its own, so it cannot be the wrapped tail of the line above. Looser
# than the block reader's patterns on purpose: a frame line cut short by the wrap still starts one.
RECORD_START_RE = re.compile(
    r"\s*(?:Traceback \(most recent call last\)|File \"|During handling of|The above exception"
    # an exception's class name starts with a capital (after any underscores): "eError:" left by a wrap
    # cut through "AttributeError" is a continuation, not a record of its own
    r"|(?:[A-Za-z_]\w{0,100}\.){0,10}_{0,2}[A-Z]\w{0,100}(?:Error|Exception|Warning)\b)"
)

# A traceback's frame line, complete to its function name: nothing of it can follow on the next line.
FRAME_END_RE = re.compile(r'File "[^"\n]{1,500}", line \d{1,7}, in \S{1,200}$')
# What the rest of a function name cut by a wrap looks like (`ward` of `forward`, `ule>` of `<module>`).
NAME_TAIL_RE = re.compile(r"[\w<>.]{1,200}")
# The column markers Python 3.11+ prints under a frame's code line.
CARET_LINE_RE = re.compile(r"\s*[\^~]{1,500}\s*$")


@dataclass
class Paste:
    """Normalised text, its lines, where each line starts, and the lines as they were before prefixes went."""

    text: str
    lines: list[str]
    offsets: list[int]
    # Line i of the cleaned (and unwrapped) text with its prefixes still on; None when a prefix spanned
    # a line break, so line numbers no longer correspond. Ranks and sources are read from it only for
    # the few lines that form blocks, which keeps the whole-text prefix pass free of per-line work.
    prefixed: list[str] | None = field(default=None, repr=False)

    def line_at(self, position: int) -> int:
        """Return the index of the line holding byte ``position`` of ``searchable``."""
        return bisect.bisect_right(self.byte_offsets, position) - 1

    @cached_property
    def searchable(self) -> bytes:
        """The text for RE2, as UTF-8 bytes encoded once. Given a str, RE2 encodes it and maps byte
        offsets back to characters on every call: with a few non-ASCII characters (a tqdm bar, a Chinese
        path) in a 2 MiB log that cost more than the matching itself, once per signature that hit."""
        return self.text.encode("utf-8")

    @cached_property
    def byte_offsets(self) -> list[int]:
        """Where each line starts in ``searchable`` (the character offsets when the text is ASCII)."""
        if self.text.isascii():
            return self.offsets
        return _line_starts_in_bytes(self.lines)

    def source_of(self, index: int) -> str | None:
        """Which process or rank a line's prefix names (``pid=123``, ``rank3``), or None without one."""
        prefix = self._prefix(index)
        found = SOURCE_RE.search(prefix) if prefix else None
        return found.group(0).replace(" ", "") if found else None

    def _prefix(self, index: int) -> str:
        if self.prefixed is None or index >= len(self.prefixed):
            return ""
        prefix = PREFIX_RUN_RE.match(self.prefixed[index])
        return prefix.group(0) if prefix else ""

    def rank_of(self, index: int) -> int | None:
        """The rank a line's prefix names (``[rank3]:``, NCCL's ``host:pid:tid [3]``, ``3: ``), if any."""
        prefix = self._prefix(index)
        if not prefix.strip():
            return None
        found = RANK_RE.search(prefix.rstrip())
        return int(next(group for group in found.groups() if group)) if found else None


def decode(data: bytes | str) -> str:
    """Decode bytes as UTF-8 with replacement; never fails. A str with lone surrogates (JSON allows
    "\\ud800") gets them replaced too: RE2 searches UTF-8, which cannot hold them."""
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    if data.isascii():
        return data
    try:
        data.encode("utf-8")
    except UnicodeEncodeError:
        return data.encode("utf-8", errors="replace").decode("utf-8")
    return data


def clean_text(text: str) -> str:
    """Remove colours, control bytes, CRLF, tabs, tracker escaping and links from the whole text; a full-width
    colon after a name becomes the ASCII one a log prints."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    text = CONTROL_RE.sub("", text)
    if "[0m" in text:
        text = BARE_ANSI_RE.sub("", text)
    if "across cluster]" in text:
        text = RAY_REPEATED_RE.sub("", text)
    if "&" in text:
        text = HTML_ENTITY_RE.sub(lambda m: html.unescape(m.group(0)), text)
    if "\\" in text:
        text = MD_ESCAPE_RE.sub(r"\1", text)
    if "```" in text or "~~~" in text:
        text = FENCE_RE.sub("", text)
    if "`" in text:
        text = _strip_inline_code_edges(text)
    if "](http" in text:
        text = AUTOLINK_RE.sub(r"\1", text)
    if "\uff1a" in text:
        text = FULLWIDTH_COLON_RE.sub(": ", text)
    return text


def _strip_inline_code_edges(text: str) -> str:
    """INLINE_CODE_EDGE_RE line by line, on the lines that hold a backtick only.

    The pattern never spans a newline, so this is the same as one pass over the text; but that pass tries its
    lookbehind alternative at every character, 20-30 ms on a 1 MiB log that has a handful of backticks.
    """
    return "\n".join(INLINE_CODE_EDGE_RE.sub(r"\1", line) if "`" in line else line for line in text.split("\n"))


def strip_prefixes(text: str) -> str:
    """Remove log prefixes at the start of every line, in one pass at C speed."""
    return PREFIX_AFTER_NEWLINE_RE.sub("\n", "\n" + text)[1:]


def unwrap(lines: list[str]) -> list[str]:
    """Join the physical lines a terminal wrapped at a fixed width back into logical lines.

    A line exactly as long as the longest, at a common terminal width, joins the line after it when
    that line reads as a continuation, not as a record of its own (a log prefix, a traceback line,
    an exception), and when it is not one of a run of identical lines.
    """
    width = max(map(len, lines), default=0)
    if width not in WRAP_WIDTHS and not _wrapped_at(lines, width):
        return lines
    joined: list[str] = []
    carry = ""
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else None
        previous = lines[index - 1] if index else None
        # the same full-width line twice in a row is a log's own repeated line, not a wrap
        wrapped = len(line) == width and following is not None and line not in (previous, following)
        if wrapped and _continues(following) and not _code_below(carry + line, following):
            carry += line
            continue
        joined.append(carry + line)
        carry = ""
    return joined


def _wrapped_at(lines: list[str], width: int) -> bool:
    """Whether a width no common terminal has (a tmux pane, a resized window) still shows a wrap: several
    different lines exactly that long, each followed by a line that reads as its rest, and more of them than
    lines just short of it (text broken between words ends anywhere near the width, and has lost its spaces)."""
    if width < MIN_PANE_WIDTH:
        return False
    full = {
        line
        for line, following in pairwise(lines)
        if len(line) == width and line != following and _continues(following)
    }
    near = sum(1 for line in lines if width - NEAR_WIDTH <= len(line) < width)
    return len(full) >= MIN_FULL_LINES and len(full) > near


def _code_below(line: str, following: str) -> bool:
    """Whether ``following`` is a traceback's own next line rather than the rest of ``line``: the code line
    under a frame line that ends at its function name (anything but the tail of a cut name), or the
    markers under a code line. A frame line that happens to fill the terminal's width otherwise took
    its code line along."""
    if CARET_LINE_RE.match(following):
        return True
    return not NAME_TAIL_RE.fullmatch(following) and FRAME_END_RE.search(line) is not None


def _continues(line: str) -> bool:
    """Whether a line can be the wrapped rest of the line above it."""
    if not line.strip() or RECORD_START_RE.match(line):
        return False
    prefix = PREFIX_RUN_RE.match(line)
    return not (prefix and prefix.group(0).strip())


def normalise(data: bytes | str) -> Paste:
    """Return the paste as clean, prefix-free text and lines (blank lines kept: they end messages).

    Wrapped lines are joined before prefixes go: a terminal wraps the whole physical line, prefix and all.
    """
    cleaned = clean_text(decode(data))
    prefixed = unwrap(cleaned.split("\n"))
    lines = [line.rstrip() for line in strip_prefixes("\n".join(prefixed)).split("\n")]
    if len(prefixed) != len(lines):  # a prefix spanned a line break: no rank map
        prefixed = None
    return Paste("\n".join(lines), lines, _line_starts(lines), prefixed)


def _line_starts(lines: list[str]) -> list[int]:
    return [0, *accumulate(len(line) + 1 for line in lines[:-1])] if lines else []


def _line_starts_in_bytes(lines: list[str]) -> list[int]:
    return [0, *accumulate(len(line.encode("utf-8")) + 1 for line in lines[:-1])] if lines else []
