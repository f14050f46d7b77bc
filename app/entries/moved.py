"""Codes that moved: an entry found to describe the same failure as another was folded into it.

Codes are stable forever (links, votes and chat answers cite them), so a retired code keeps answering: its pages
and API paths redirect to the entry it was folded into. The table lives beside the entries (``moved.tsv``:
``code<TAB>now<TAB>why``); ``kb check`` refuses a row whose old code still has a file, whose new code has none,
or that points at another moved code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.entries.model import CODE_RE
from app.entries.tables import HeaderError, table_rows

MOVED_FILE = "moved.tsv"
HEADER = "code\tnow\twhy"


@dataclass(frozen=True)
class Move:
    code: str
    now: str
    why: str
    line: int = 0  # where the row is in moved.tsv, for `kb check`


def read_moves(path: Path) -> tuple[dict[str, Move], list[tuple[int, str]]]:
    """Return the moves by old code and the problems found as (line, message); a missing file is an empty table."""
    try:
        rows = table_rows(path, HEADER)
    except HeaderError as exc:
        return {}, [(1, str(exc))]
    moves: dict[str, Move] = {}
    problems: list[tuple[int, str]] = []
    for number, line in rows:
        cells = line.split("\t")
        if len(cells) != 3 or not all(cell.strip() for cell in cells):
            problems.append((number, "a row is the old code, the code it moved to and why, tab-separated"))
            continue
        code, now, why = (cell.strip() for cell in cells)
        if not CODE_RE.match(code) or not CODE_RE.match(now):
            problems.append((number, f"not entry codes: {code!r} -> {now!r}"))
        elif code in moves:
            problems.append((number, f"{code} is listed twice"))
        else:
            moves[code] = Move(code, now, why, number)
    return moves, problems


def check_moves(moves: dict[str, Move], codes: set[str]) -> list[tuple[int, str]]:
    """A moved code has no entry of its own, and the code it moved to is an entry (not another move)."""
    problems = []
    for move in moves.values():
        if move.code in codes:
            problems.append((move.line, f"{move.code} moved to {move.now} but still has an entry: delete its files"))
        if move.now in moves:
            problems.append((move.line, f"{move.now} moved too: point {move.code} at {moves[move.now].now}"))
        elif move.now not in codes:
            problems.append((move.line, f"{move.code} moved to {move.now}, which has no entry"))
    return problems
