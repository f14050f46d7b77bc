"""All entries' signatures compiled once: an RE2 set finds which hit in one pass, then each hit is located."""

from __future__ import annotations

import re
from dataclasses import dataclass

import re2

from app.entries import Catalog

LITERAL_RE = re.compile(r"\\[dDsSwWbB]|\\.|[\[\](){}^$.*+?|]")
MAX_LOCATIONS = 64
# RE2 compiles the whole set into one program within this budget (its default, 8 MiB, held about 600
# signatures and one wide `[\s\S]{0,700}` more broke it). Only what the program needs is allocated.
SET_MAX_MEM = 256 << 20
# `kb check` wants the set to compile in a quarter of the budget, so content never lands at the edge.
HEADROOM = 4
# A space in a signature also matches a line break between the words: a text box, a web console or a narrow
# terminal wraps a long message between words ("... desired\nGPU memory utilization"), at widths the paste's
# unwrapping cannot tell (the indentation a continuation line may carry is allowed after it; lines come without
# trailing spaces). Of the entry examples re-wrapped between words at 70 columns, 31% were answered first before,
# 96% after. A class and a loop, no alternation: on the 1 MiB log of 70 real errors an alternation cost 18% more
# CPU time than plain spaces, this form 5%.
WRAPPED_SPACE = r"(?:\s[ \t]*)"


class SignatureError(ValueError):
    """A signature that RE2 refuses (backreferences, lookaround, ...), or a set too large to compile."""


@dataclass(frozen=True)
class Signature:
    code: str
    pattern: str
    compiled: object
    specificity: int  # literal characters: a longer literal is a more specific pattern


def compile_signature(pattern: str) -> object:
    """Compile with RE2 or raise SignatureError; RE2 runs in linear time, so no pattern can backtrack."""
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        message = exc.args[0] if exc.args else exc
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        raise SignatureError(str(message)) from None


def tolerate_wraps(pattern: str) -> str:
    """The pattern with each literal space (not escaped, not in a character class) also matching a line break."""
    out: list[str] = []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
            if pattern[index + 1 : index + 2] == "]":  # `[]...]`: a leading ] is a member, not the end
                out.append("]")
                index += 1
        else:
            out.append(WRAPPED_SPACE if char == " " else char)
        index += 1
    return "".join(out)


def specificity(pattern: str) -> int:
    """Count literal characters: `CUDA out of memory` beats `out of memory`."""
    return len(LITERAL_RE.sub("", pattern))


class SignatureSet:
    """Every signature of a catalog, with an RE2 set for the single detection pass."""

    def __init__(self, catalog: Catalog, max_mem: int = SET_MAX_MEM):
        self.signatures: list[Signature] = []
        options = re2.Options()
        options.log_errors = False
        options.max_mem = max_mem
        self._set = re2.Set.SearchSet(options)
        for entry in catalog:
            for pattern in entry.meta.signatures:
                tolerant = tolerate_wraps(pattern)
                compiled = compile_signature(tolerant)
                self._set.Add(tolerant)
                self.signatures.append(Signature(entry.code, pattern, compiled, specificity(pattern)))
        self._empty = not self.signatures
        if not self._empty:
            try:
                self._set.Compile()
            except re2.error:
                raise SignatureError(
                    f"the {len(self.signatures)} signatures do not fit in one RE2 set of "
                    f"{max_mem >> 20} MiB; the largest: {self.largest()}"
                ) from None

    def largest(self, count: int = 5) -> str:
        """The signatures whose compiled programs are biggest (wide gaps such as `[\\s\\S]{0,700}` cost most)."""
        ranked = sorted(self.signatures, key=lambda signature: signature.compiled.programsize, reverse=True)
        return "; ".join(f"{s.code} {s.pattern[:60]!r} ({s.compiled.programsize})" for s in ranked[:count])

    def __len__(self) -> int:
        return len(self.signatures)

    def hits(self, text: str | bytes) -> list[tuple[Signature, list[tuple[int, int]]]]:
        """Return each signature that matches ``text`` with up to 64 (start, end) spans.

        Pass a paste's ``searchable`` form (UTF-8 bytes): spans are byte offsets, which
        ``Paste.line_at`` maps to lines.
        """
        if self._empty or not text:
            return []
        found = []
        for index in sorted(self._set.Match(text) or ()):
            signature = self.signatures[index]
            spans = []
            for match in signature.compiled.finditer(text):
                spans.append(match.span())
                if len(spans) >= MAX_LOCATIONS:
                    break
            if spans:
                found.append((signature, spans))
        return found
