"""Rank entries for a paste: signature hits on the root-cause block first, cascades after, full text last.
When a log holds only cascades, the first to appear leads: it is the nearest to what started them.

Confidence: ``high`` when a signature matched the exception (or its message) of the block that ranks
first, or ran over several lines (a frame, then the error) to end on it; ``medium`` for other signature
hits; ``low`` for full-text suggestions. A log whose final traceback no signature explains gives no
``high``: the manual may not know its real failure.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.entries import Catalog
from app.matcher.blocks import FRAME_RE, NUMBER_RE, RAY_TASK_RE, Block, split_blocks
from app.matcher.environment import Environment, excluded_reason, extract_environment
from app.matcher.normalise import Paste, normalise
from app.matcher.raised import last_statement, rebuilt_message
from app.matcher.signatures import SignatureSet

# Full-text fallback: (query text, limit) -> [(code, score)]
FullText = Callable[[str, int], list[tuple[str, float]]]
# The raise/assert statement a frame names, from the release facts: (path as printed, line, function) -> text
Statements = Callable[[str, int, str], str | None]
CONFIDENT = ("high", "medium")  # a diagnosis; ``low`` is only a suggestion

BASE_SCORE = 100.0
ON_EXCEPTION = 30.0
IN_BLOCK = 12.0
OUTSIDE_BLOCKS = -25.0
SYMPTOM_PENALTY = 45.0
EXCLUDED_PENALTY = 60.0
FRAME_BONUS = 12.0
EARLY_BONUS = 8.0
MAX_SPECIFICITY = 120
FALLBACK_QUERY_CHARS = 600
FRAGMENT_LINES_BEFORE = 3
FRAGMENT_OWN_LINES = 6
FRAGMENT_EARLIER_BLOCKS = 2
# Frames of Ray's and Python's own plumbing say nothing about which failure it was.
PLUMBING_RE = re.compile(r"/ray/_private/|/ray/_raylet|/concurrent/futures/|/asyncio/|runpy\.py|/threading\.py")
FRAGMENT_DOMINANCE = 2.0  # the best full-text hit must beat the second by this factor
FRAGMENT_POOL = 40  # full-text hits read for a truncated traceback, before those of the wrapped type go first


@dataclass
class Match:
    """One candidate entry for the paste, with why it was chosen."""

    code: str
    score: float
    confidence: str  # high | medium | low
    matched_line: str = ""
    signature: str = ""
    block: int | None = None
    consequence_of: str | None = None
    demoted_because: str | None = None
    root_cause: bool = False
    line_index: int | None = None


@dataclass
class Diagnosis:
    matches: list[Match]
    blocks: list[Block]
    environment: Environment
    took_ms: float = 0.0
    paste: Paste | None = field(default=None, repr=False)
    explained: set[int] = field(default_factory=set)  # blocks in which some entry's signature matched


@dataclass
class _Hit:
    code: str
    signature: str
    specificity: int
    line: int
    block: int | None
    on_exception: bool
    rebuilt: bool = False  # matched the message rebuilt from the statement a cut traceback stops at


class Matcher:
    """Compiled once per catalog; ``diagnose`` is pure and thread-safe."""

    def __init__(self, catalog: Catalog, fulltext: FullText | None = None, statements: Statements | None = None):
        self.catalog = catalog
        self.signatures = SignatureSet(catalog)
        self.fulltext = fulltext
        self.statements = statements

    def diagnose(self, text: str | bytes, limit: int = 5, *, suggest: bool = True) -> Diagnosis:
        """Return ranked matches for a paste, root cause first; with ``suggest``, full-text suggestions when no
        match is confident (a caller that wants only what the signatures say skips that search)."""
        started = time.perf_counter()
        paste = normalise(text)
        found = self.signatures.hits(paste.searchable)
        blocks = split_blocks(paste, {paste.line_at(start) for _sig, spans in found for start, _end in spans})
        environment = extract_environment(paste)
        hits = self._locate(paste, blocks, found) + self._rebuilt_hits(paste, blocks)
        explained = {hit.block for hit in hits if hit.block is not None}
        matches = self._rank(hits, blocks, paste, environment, explained)
        if suggest and not any(match.confidence in CONFIDENT for match in matches):
            matches += self._suggestions(blocks, paste, {match.code for match in matches}, limit)
        return Diagnosis(matches[:limit], blocks, environment, (time.perf_counter() - started) * 1000, paste, explained)

    def _locate(self, paste: Paste, blocks: list[Block], found) -> list[_Hit]:
        where = _line_map(blocks)
        hits = []
        for signature, spans in found:
            for start, end in spans:
                line = paste.line_at(start)
                block, on_exception = where.get(line, (None, False))
                if not on_exception:
                    # a signature over several lines (a frame, then the error) that ends on an error line
                    # names that error: the hit is on it, wherever its first line fell
                    last = paste.line_at(max(start, end - 1))
                    last_block, last_on_exception = where.get(last, (None, False))
                    if last_on_exception or (block is None and last_block is not None):
                        line, block, on_exception = last, last_block, last_on_exception
                hits.append(_Hit(signature.code, signature.pattern, signature.specificity, line, block, on_exception))
        return hits

    def _rebuilt_hits(self, paste: Paste, blocks: list[Block]) -> list[_Hit]:
        """Signature hits on the message each cut traceback's last statement would have printed (app/matcher/raised)."""
        hits = []
        for number, block in enumerate(blocks):
            if not (block.truncated and block.kind == "traceback"):
                continue
            statement = last_statement(paste.lines, block.start, block.end)
            if statement is None:
                continue
            frame, line, code = statement
            message = rebuilt_message(code)
            if message is None and frame is not None:
                message = self._message_of_frame(frame)
            if message is None:
                continue
            for signature, _spans in self.signatures.hits(message.encode("utf-8")):
                hits.append(
                    _Hit(
                        signature.code,
                        signature.pattern,
                        signature.specificity,
                        line,
                        number,
                        on_exception=True,
                        rebuilt=True,
                    )
                )
        return hits

    def _message_of_frame(self, frame: re.Match) -> str | None:
        """The message of the statement a frame line names, as the release facts hold it: a traceback prints
        only the first line of `raise ValueError(` whose text follows on the next ones."""
        if self.statements is None:
            return None
        statement = self.statements(frame.group(1), int(frame.group(2)), frame.group(3))
        return rebuilt_message(statement) if statement else None

    def _score(self, hit: _Hit, blocks: list[Block]) -> float:
        score = BASE_SCORE + min(hit.specificity, MAX_SPECIFICITY) / 4
        if hit.block is None:
            return score + OUTSIDE_BLOCKS
        score += ON_EXCEPTION if hit.on_exception else IN_BLOCK
        # the earliest error is the likeliest root cause; later ones are often its echo
        score += EARLY_BONUS * (1 - hit.block / len(blocks))
        if _shows_frames(blocks[hit.block], self.catalog.get(hit.code).meta.frames):
            score += FRAME_BONUS
        return score

    def _rank(
        self, hits: list[_Hit], blocks: list[Block], paste: Paste, environment: Environment, explained: set[int]
    ) -> list[Match]:
        best: dict[str, tuple[float, _Hit]] = {}
        for hit in hits:
            score = self._score(hit, blocks)
            if hit.code not in best or score > best[hit.code][0]:
                best[hit.code] = (score, hit)
        primaries = {code for code in best if not self.catalog.get(code).meta.symptom_of}
        matches = []
        for code, (score, hit) in best.items():
            meta = self.catalog.get(code).meta
            match = Match(
                code,
                score,
                "medium",
                paste.lines[hit.line].strip()[:2000],
                hit.signature,
                hit.block,
                line_index=hit.line,
            )
            if meta.symptom_of and primaries:
                match.score -= SYMPTOM_PENALTY
                causes = [cause for cause in meta.symptom_of if cause in primaries]
                match.consequence_of = causes[0] if causes else _top(primaries, best)
            reason = excluded_reason(meta.applies_to, environment)
            if reason:
                match.score -= EXCLUDED_PENALTY
                match.demoted_because = reason
            matches.append(match)
        if primaries:
            matches.sort(key=lambda m: (-m.score, m.code))
        else:
            # cascades only: the first to appear is the nearest to the failure that started them
            matches.sort(key=lambda m: (m.block is None, m.block if m.block is not None else 0, -m.score, m.code))
        self._assign_confidence(matches, best, blocks, explained)
        return matches

    def _assign_confidence(self, matches: list[Match], best: dict, blocks: list[Block], explained: set[int]) -> None:
        if not matches:
            return
        top = matches[0]
        hit = best[top.code][1]
        symptom = bool(self.catalog.get(top.code).meta.symptom_of)
        top.root_cause = not top.demoted_because and not (top.consequence_of or symptom)
        crash_after = _unexplained_crash(blocks, explained, after=-1 if hit.block is None else hit.block)
        if hit.block is None or (blocks[hit.block].known_only and crash_after):
            # a known line beside a crash the manual cannot name: the crash may be something else
            top.confidence = "low" if crash_after else "medium"
        elif symptom and _unexplained_crash(blocks, explained, after=-1):
            # a cascade (NCCL timeout, dead actor, SIGTERM) beside a crash the manual cannot name:
            # that crash is the likelier cause, so the cascade's entry is no diagnosis
            top.confidence = "low"
        elif hit.on_exception and top.root_cause and not crash_after and not hit.rebuilt:
            top.confidence = "high"
        for match in matches[1:]:
            if best[match.code][1].block is None:
                match.confidence = "low"

    def _suggestions(self, blocks: list[Block], paste: Paste, seen: set[str], limit: int) -> list[Match]:
        """Full-text suggestions, all ``low``, for a paste no signature answers with confidence.

        A traceback cut off before its last line is searched with what remains (wrapper type, the lines
        just before it, its own frames and code, Ray's plumbing left out); a clear winner (twice the
        score of the runner-up) leads, still ``low``: with the error line gone the answer never claims
        to know the failure. Otherwise the last error lines are the query.
        """
        if self.fulltext is None:
            return []
        truncated = [block for block in blocks if block.truncated and block.kind == "traceback"]
        cut = truncated[-1] if truncated else None
        fragment_results = []
        if cut is not None:
            query = _fragment_query(cut, paste, blocks)
            fragment_results = self._prefer_raised(cut, self.fulltext(query, FRAGMENT_POOL))
        suggestions = []
        lead = fragment_results[:2]
        if lead and (len(lead) == 1 or lead[0][1] >= FRAGMENT_DOMINANCE * lead[1][1]) and lead[0][0] not in seen:
            code, score = lead[0]
            suggestions.append(
                Match(
                    code,
                    round(score, 3),
                    "low",
                    paste.lines[cut.end].strip()[:2000],
                    "",
                    len(blocks) - 1,
                    line_index=cut.end,
                    demoted_because="matched on the fragments of a truncated traceback",
                )
            )
            seen = seen | {code}
        if blocks and blocks[-1] is cut:
            results = fragment_results
        else:
            parts = [block.exception_line for block in blocks[-3:]] or paste.lines[-5:]
            results = self.fulltext(NUMBER_RE.sub(" ", " ".join(parts)[:FALLBACK_QUERY_CHARS]), limit)
        return suggestions + [
            Match(code, round(score, 3), "low") for code, score in results[:limit] if code not in seen
        ]

    def _prefer_raised(self, block: Block, results: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """Entries about the type a Ray wrapper names (``RayTaskError(ModuleNotFoundError)``) go first,
        those whose frames the traceback shows first among them.

        The wrapper line and the frames survive when the paste is cut before the inner error: they
        are what is left of what was raised, and where. Full-text order is kept within each group.
        """
        if not block.wrapped_type:
            return results

        def group(result: tuple[str, float]) -> tuple[bool, bool]:
            meta = self.catalog.get(result[0]).meta
            raised = meta.exception.rsplit(".", 1)[-1] == block.wrapped_type
            framed = _shows_frames(block, meta.frames)
            return not raised, not framed

        return sorted(results, key=group)


def _shows_frames(block: Block, names: list[str]) -> bool:
    """Whether the block's frames or the Ray tasks around it name one of an entry's functions."""
    return any(name in frame for frame in block.context for name in names)


def _fragment_query(block: Block, paste: Paste, blocks: list[Block]) -> str:
    """What is left of a cut traceback, as a full-text query: the error lines printed before it, the
    lines just above it, its own code and frames (Ray's and Python's plumbing left out), and of Ray's
    task lines only the task names (their pids and actor ids are noise to full text)."""
    earlier = [other.exception_line for other in blocks if other.end < block.start][-FRAGMENT_EARLIER_BLOCKS:]
    before = [
        line.strip()
        for line in paste.lines[max(0, block.start - FRAGMENT_LINES_BEFORE) : block.start]
        if line.strip() and "ray::" not in line
    ]
    own: list[str] = []
    plumbing = False
    for line in paste.lines[block.start : block.end + 1]:
        frame = FRAME_RE.match(line)
        if frame:
            plumbing = PLUMBING_RE.search(frame.group(1)) is not None
            if not plumbing:
                own.append(frame.group(3))
        elif "ray::" in line:
            own.extend(RAY_TASK_RE.findall(line))
        elif line.strip() and not plumbing and not line.lstrip().startswith(("Traceback", "^")):
            own.append(line.strip())
    query = " ".join([block.wrapped_type, *own[-FRAGMENT_OWN_LINES:], *before, *earlier])
    return NUMBER_RE.sub(" ", query[:FALLBACK_QUERY_CHARS])


def _top(codes: set[str], best: dict) -> str:
    return max(codes, key=lambda code: (best[code][0], code))


def _line_map(blocks: list[Block]) -> dict[int, tuple[int, bool]]:
    """line index -> (block index, whether it is the root exception or its message), duplicates included."""
    where: dict[int, tuple[int, bool]] = {}
    for number, block in enumerate(blocks):
        first, last = block.message[0] - block.start, block.message[1] - block.start
        for span_start, span_end in block.spans:
            for line in range(span_start, span_end + 1):
                where.setdefault(line, (number, first <= line - span_start <= last))
    return where


def _unexplained_crash(blocks: list[Block], explained: set[int], after: int) -> bool:
    """A complete traceback after block ``after`` that no signature explains: the crash may be something else.

    A truncated traceback does not count: with its last line gone it is most often the matched error's own.
    """
    return any(
        block.kind == "traceback" and not block.truncated and number > after and number not in explained
        for number, block in enumerate(blocks)
    )
