"""The message a cut traceback would have printed next, rebuilt from the statement it stops at.

Pastes are often cut (by the user, a log viewer or an issue's excerpt) right after the code line of the last
frame: `raise ValueError(f"... {name} ...")` or `assert ok, "..."`. Python would print that statement's message on
the next line, and its literal text is already on the code line. The matcher runs the signatures over the rebuilt
line, so the entry of that message can answer; an answer from a rebuilt line is never more than `medium`.
"""

from __future__ import annotations

import re

from app.matcher.blocks import FRAME_RE

RAISE_RE = re.compile(r"\s*raise\s+([A-Za-z_][\w.]{0,200})\s*\((.{0,2000})$")
ASSERT_RE = re.compile(r"\s*assert\s.{0,2000}?,\s*\(?\s*((?:[rRbBuUfF]{0,2})[\"'].{0,2000})$")
# one string literal, with its prefix (f, r, ...); the caller joins adjacent ones as Python does
STRING_RE = re.compile(r"""([rRbBuUfF]{0,2})("(?:[^"\\\n]|\\.){0,2000}"|'(?:[^'\\\n]|\\.){0,2000}')""")
# what a formatted value becomes: `{name}`, `{x!r}`, `{n:.2f}`, `{}`, `%s`, `%d`, `%.3f`
FIELD_RE = re.compile(r"\{[^{}\n]{0,200}\}|%[-#0 +]?\d*(?:\.\d+)?[sdrfgex]")
CARET_RE = re.compile(r"[\^~]+")
# a value nobody knows: digits satisfy `\d+`, `\S+`, `\w+` and `.*` in a signature alike
PLACEHOLDER = "0"


def last_statement(lines: list[str], start: int, end: int) -> tuple[re.Match | None, int, str] | None:
    """A block's last frame line (its match: path, line number, function; None when the block shows none), where
    the statement below it starts, and that statement's code: the lines after the frame line (Python 3.13 prints a
    multi-line statement whole), blank lines and the ^ markers of Python 3.11+ left out."""
    frame: re.Match | None = None
    code: list[tuple[int, str]] = []
    for index in range(end, start - 1, -1):
        frame = FRAME_RE.match(lines[index])
        if frame:
            break
        text = lines[index].strip()
        if text and not CARET_RE.fullmatch(text):
            code.append((index, text))
    if not code:
        return None
    code.reverse()
    return frame, code[0][0], "\n".join(text for _, text in code)


def rebuilt_message(code: str) -> str | None:
    """The exception line the statement ``code`` (one line or several) prints, its values unknown, or None when it
    is no `raise X("...")` or `assert ..., "..."` with a string literal."""
    code_line = " ".join(part.strip() for part in code.split("\n"))
    raised = RAISE_RE.match(code_line)
    if raised:
        kind, arguments = raised.group(1).rsplit(".", 1)[-1], raised.group(2)
    else:
        asserted = ASSERT_RE.match(code_line)
        if not asserted:
            return None
        kind, arguments = "AssertionError", asserted.group(1)
    text = _literal_text(arguments)
    return f"{kind}: {text}" if text else None


def _literal_text(arguments: str) -> str:
    """The text of the string literals that open the arguments, formatted fields replaced by the placeholder."""
    pieces = []
    for prefix, literal in _leading_literals(arguments):
        body = literal[1:-1]
        if "r" not in prefix.lower():
            body = body.replace("\\n", " ").replace('\\"', '"').replace("\\'", "'")
        pieces.append(FIELD_RE.sub(_placeholder, body))
    return "".join(pieces).strip()


def _placeholder(field: re.Match) -> str:
    """`{name=}` prints its own expression before the value; every other field prints only the value."""
    inside = field.group(0)[1:-1]
    return f"{inside[:-1]}={PLACEHOLDER}" if inside.endswith("=") else PLACEHOLDER


def _leading_literals(arguments: str) -> list[tuple[str, str]]:
    """Adjacent string literals at the start of the arguments (`"a" "b"`, `"a" + str(x) + "b"` keeps "a")."""
    found = []
    position = 0
    while True:
        while position < len(arguments) and arguments[position] in " \t":
            position += 1
        match = STRING_RE.match(arguments, position)
        if not match:
            return found
        found.append((match.group(1), match.group(2)))
        position = match.end()
