"""What a paste cut before its error line lacks, and what to paste next."""

from __future__ import annotations

from app.matcher.blocks import Block


def truncated_findings(blocks: list[Block]) -> list[dict]:
    findings = []
    for number, block in enumerate(blocks):
        if block.kind != "traceback" or not block.truncated:
            continue
        findings.append(
            {"kind": "truncated", "block": number, "wrapped_type": block.wrapped_type or None, "hint": _hint(block)}
        )
    return findings


def _hint(block: Block) -> str:
    if block.wrapped_type:
        return (
            f"The paste stops at Ray's `RayTaskError({block.wrapped_type})` line. Paste the lines after it: "
            f"the worker's own traceback, down to the line that starts with `{block.wrapped_type}` (or with "
            f"the module path before it) and its message. Until then the suggestions below are entries about "
            f"{block.wrapped_type}, a guess."
        )
    return (
        "The traceback stops before its last line, the one that names the error "
        "(`SomeError: message`, not indented). Paste the traceback down to that line and the few lines "
        "after it; without it the suggestions below are guesses from the frames."
    )
