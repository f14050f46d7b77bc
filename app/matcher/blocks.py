"""Group a normalised paste into error blocks: tracebacks (chained, Ray-wrapped, truncated) and bare error lines."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import re2

from app.matcher.normalise import Paste

TRACEBACK_START = re.compile(r"\s*Traceback \(most recent call last\):")
FRAME_RE = re.compile(r'\s*File "([^"]{1,500})", line (\d+), in (\S{1,200})')
# The tail of a frame line whose head was cut off, as when a paste starts mid-traceback:
# `models/qwen3_vl_moe/modeling_qwen3_vl_moe.py", line 391, in forward`. Nothing may follow the
# function name, so a sentence that quotes a frame is not taken for one.
FRAME_TAIL_RE = re.compile(r'\s*(?:File )?"?([^"\s][^"]{0,499})", line (\d+), in (\S{1,200})\s*$')
MAX_FRAME_LINE = 1000  # longer lines are never a frame's tail: not looked at
CHAIN_RE = re.compile(
    r"\s*(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)"
)
# Name parts are bounded so a megabyte-long line is rejected after a few hundred steps, not scanned whole.
# Python's own `Exception` (what `raise Exception("...")` prints) is a name with nothing before the suffix.
EXCEPTION_LINE_RE = re.compile(
    r"((?:[A-Za-z_]\w{0,100}\.){0,10}(?:[A-Za-z_]\w{0,100}(?:Error|Exception|Exit|Interrupt|Timeout|Warning|Failure|Died|Fault|Exhausted)"
    r"|Exception)(?:\([\w.]+\))?)(?::\s?(.*))?$"
)
# Wrappers whose message names another error: the inner one is the root cause.
WRAPPER_RE = re.compile(
    r"ray\.exceptions\.RayTaskError(?:\(\w+\))?:|ray\.exceptions\.RaySystemError:|"
    r"hydra\.errors\.InstantiationException:|torch\.distributed\.elastic\.multiprocessing\.errors\.ChildFailedError"
)
# One pass over the whole text finds every line worth a block: RE2 keeps it linear.
CANDIDATE_RE = re2.compile(
    r"(?im)^[^\n]*(?:traceback \(most recent call last\)|^\s*file \"|error|exception|failed|failure|"
    r"terminate called|watchdog|timed? ?out|segmentation fault|killed|sigterm|sigkill|signal \d|exit ?code|"
    r"exitcode|out of memory|\boom\b|assert|cannot |could not|couldn't|unable to|not found|no such|mismatch|"
    r"not supported|unsupported|invalid|illegal|abort|refused|is not divisible|must be|should be|"
    r"not implemented|no module named|not in struct|died|dead|hang|stuck|nan\b|not finite|exceeds?|too long|too large)[^\n]*$"
)
RAY_TASK_RE = re.compile(r"ray::[\w.]*?\.?(\w+)\(\)")
WRAPPED_TYPE_RE = re.compile(r"RayTaskError\((\w+)\)")
CONTEXT_BEFORE, CONTEXT_AFTER = 2, 3
NOISE_MARKERS = ("Error executing job with overrides", "Set the environment variable HYDRA_FULL_ERROR")
NUMBER_RE = re.compile(r"0x[0-9a-fA-F]+|\d+")
MAX_BLOCK_LINES = 400
MAX_MESSAGE_LINES = 8
MAX_BLOCKS = 2000
DEDUPE_CHARS = 1000  # two errors alike in their first thousand characters are one error


@dataclass
class Block:
    """One error: where it is, its root exception line and message, its frames, the ranks it came from."""

    kind: str  # traceback | error
    start: int  # first line index
    end: int  # last line index
    exception_line: str
    message: tuple[int, int]  # line range [first, last] of the root exception and its message
    frames: list[str] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)
    count: int = 1
    spans: list[tuple[int, int]] = field(default_factory=list)  # this block's lines and its duplicates'
    truncated: bool = False  # a traceback whose final exception line is missing from the paste
    wrapped_type: str = ""  # the inner type a Ray wrapper names, e.g. OutOfMemoryError
    context: list[str] = field(default_factory=list)  # frames plus Ray task names printed around the block
    known_only: bool = False  # a line that reads as no error but that an entry's signature names

    def dedupe_key(self) -> str:
        """Numbers masked: the same error on eight ranks is one block."""
        return NUMBER_RE.sub("#", self.exception_line[:DEDUPE_CHARS])

    def ranks_label(self) -> str:
        """Describe the ranks compactly, e.g. 'ranks 0-7'."""
        if not self.ranks:
            return ""
        ordered = sorted(self.ranks)
        if len(ordered) == 1:
            return f"rank {ordered[0]}"
        if ordered == list(range(ordered[0], ordered[-1] + 1)):
            return f"ranks {ordered[0]}-{ordered[-1]}"
        return "ranks " + ",".join(str(rank) for rank in ordered)


def split_blocks(paste: Paste, known_lines: set[int] = frozenset()) -> list[Block]:
    """Return tracebacks and error lines in order of appearance, duplicates merged.

    ``known_lines`` are lines an entry's signature matched: they are errors even when no error word is in them.
    """
    lines = paste.lines
    looks_like_error = {paste.line_at(match.start()) for match in CANDIDATE_RE.finditer(paste.searchable)}
    candidates = sorted(looks_like_error | set(known_lines) | _leading_cut_frame(lines))
    blocks: list[Block] = []
    covered_until = -1
    for index in candidates:
        if index <= covered_until or len(blocks) >= MAX_BLOCKS:
            continue
        text = lines[index]
        if (
            TRACEBACK_START.match(text)
            or FRAME_RE.match(text)
            or _ray_wrapper_with_frames(lines, index)
            or _cut_frame_starts_traceback(lines, index)
        ):
            block = _read_traceback(paste, index)
        elif any(marker in text for marker in NOISE_MARKERS) or not text.strip():
            continue
        else:
            block = _read_error_line(paste, index)
            block.known_only = index not in looks_like_error
        block.ranks = {rank for i in range(block.start, block.end + 1) if (rank := paste.rank_of(i)) is not None}
        block.context = block.frames + _ray_tasks(lines, block)
        blocks.append(block)
        covered_until = block.end
    return _merge_duplicates(blocks)


def _ray_wrapper_with_frames(lines: list[str], index: int) -> bool:
    """A paste that starts at Ray's `RayTaskError(X): ray::task()` line, its worker's frames below it."""
    return (
        WRAPPED_TYPE_RE.search(lines[index]) is not None
        and index + 1 < len(lines)
        and FRAME_RE.match(lines[index + 1]) is not None
    )


def _leading_cut_frame(lines: list[str]) -> set[int]:
    """The first line of a paste that starts on the cut tail of a frame line."""
    first = next((index for index, line in enumerate(lines[:50]) if line and not line.isspace()), None)
    return {first} if first is not None and _cut_frame_starts_traceback(lines, first) else set()


def _cut_frame_starts_traceback(lines: list[str], index: int) -> bool:
    """A frame line cut before `File "` at the top of the paste (or after a blank line): the traceback
    that follows starts there, so what matched on it belongs to that traceback."""
    text = lines[index]
    return (
        len(text) <= MAX_FRAME_LINE
        and (index == 0 or not lines[index - 1].strip())
        and '", line ' in text
        and FRAME_TAIL_RE.match(text) is not None
    )


def _read_error_line(paste: Paste, index: int) -> Block:
    text = paste.lines[index].strip()
    last = _message_end(paste, index) if EXCEPTION_LINE_RE.match(text) else index
    return Block("error", index, last, text, (index, last))


def _read_traceback(paste: Paste, start: int) -> Block:
    lines = paste.lines
    index = start + 1 if TRACEBACK_START.match(lines[start]) else start
    frames: list[str] = []
    root: tuple[int, int] | None = None  # message range of the root exception
    wrapper: tuple[int, int] | None = None
    end = start
    limit = min(len(lines), start + MAX_BLOCK_LINES)
    while index < limit:
        text = lines[index]
        frame = FRAME_RE.match(text) or (FRAME_TAIL_RE.match(text) if index == start else None)
        if frame:
            frames.append(f"{frame.group(1)}:{frame.group(3)}")
        elif CHAIN_RE.match(text) or TRACEBACK_START.match(text):
            pass  # a chained traceback: the whole chain is one block, its first exception the root
        elif not text or text[0] == " ":
            if not text and (root or wrapper) and not _chain_follows(lines, index + 1):
                break
        elif EXCEPTION_LINE_RE.match(text):
            last = _message_end(paste, index)
            if WRAPPER_RE.match(text):
                wrapper = wrapper or (index, last)
            elif root is None:
                root = (index, last)
            end, index = last, last + 1
            if not (WRAPPER_RE.match(text) or _chain_follows(lines, index)):
                break
            continue
        elif root or wrapper:
            break
        end = index
        index += 1
    message = root or wrapper or (end, end)
    end = max(end, message[1])
    exception_line = lines[message[0]].strip()
    wrapped = WRAPPED_TYPE_RE.search(lines[wrapper[0]]) if wrapper else None
    # Cut before its last line: no exception at all, or only a Ray wrapper that names an inner error
    # (RayTaskError(OutOfMemoryError)) whose own line never came.
    truncated = root is None and (wrapper is None or wrapped is not None)
    return Block(
        "traceback",
        start,
        end,
        exception_line,
        message,
        frames,
        truncated=truncated,
        wrapped_type=wrapped.group(1) if wrapped else "",
    )


def _ray_tasks(lines: list[str], block: Block) -> list[str]:
    """Names of Ray tasks printed in or just around a block (`ray::WorkerDict.generate_sequences()`)."""
    first, last = max(0, block.start - CONTEXT_BEFORE), min(len(lines), block.end + 1 + CONTEXT_AFTER)
    return [name for line in lines[first:last] if "ray::" in line for name in RAY_TASK_RE.findall(line)]


def _message_end(paste: Paste, index: int) -> int:
    """Last line of an exception's message: following non-blank lines that start no new record.

    A line from another process or rank (its prefix names another pid or rank) is another record,
    even when nothing but a prefix sets it apart: Ray interleaves the output of many workers.
    """
    lines = paste.lines
    last = index
    stop = min(len(lines), index + 1 + MAX_MESSAGE_LINES)
    source = paste.source_of(index)
    for following in range(index + 1, stop):
        text = lines[following]
        if not text.strip() or FRAME_RE.match(text) or TRACEBACK_START.match(text) or CHAIN_RE.match(text):
            break
        if paste.source_of(following) != source:
            break
        last = following
    return last


def _chain_follows(lines: list[str], index: int) -> bool:
    while index < len(lines) and not lines[index].strip():
        index += 1
    return index < len(lines) and bool(CHAIN_RE.match(lines[index]) or TRACEBACK_START.match(lines[index]))


def _merge_duplicates(blocks: list[Block]) -> list[Block]:
    merged: dict[str, Block] = {}
    for block in blocks:
        key = block.dedupe_key()
        if key in merged:
            kept = merged[key]
            kept.count += 1
            kept.ranks |= block.ranks
            kept.spans.append((block.start, block.end))
        else:
            block.spans = [(block.start, block.end)]
            merged[key] = block
    return list(merged.values())
