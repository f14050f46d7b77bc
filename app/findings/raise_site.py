"""The statement in verl's own code that raised: the deepest verl frame of a traceback, or a message that
fits the text of one of the release's `raise`/`assert` statements."""

from __future__ import annotations

from dataclasses import dataclass

from app.matcher.blocks import FRAME_RE, Block
from app.releases import RaiseSite, ReleaseFacts, ReleaseLibrary, first_raise_site

SOURCE_URL = "https://github.com/verl-project/verl/blob/v{version}/{path}#L{line}"
MAX_MESSAGE_CHARS = 1000


@dataclass(frozen=True)
class Frame:
    path: str  # as printed
    line: int
    function: str

    @property
    def verl_path(self) -> str | None:
        """`verl/...py` for a frame in verl's package (installed or a checkout), else None.

        An environment may be named verl too (`envs/verl/lib/.../site-packages/ray/...`): below
        site-packages only the package's own folder counts."""
        if not self.path.endswith(".py"):
            return None
        installed = self.path.rfind("site-packages/")
        tail = self.path[installed + len("site-packages/") :] if installed >= 0 else "/" + self.path
        if installed >= 0:
            return tail if tail.startswith("verl/") else None
        marker = tail.rfind("/verl/")
        return tail[marker + 1 :] if marker >= 0 else None


def root_frames(block: Block, lines: list[str]) -> list[Frame]:
    """Frames of a traceback block printed before its root exception line (the first of a chain)."""
    frames = []
    for index in range(block.start, min(block.message[0], block.end) + 1):
        found = FRAME_RE.match(lines[index])
        if found:
            frames.append(Frame(found.group(1), int(found.group(2)), found.group(3)))
    return frames


def verl_frames(frames: list[Frame]) -> list[tuple[str, int, str]]:
    return [(frame.verl_path, frame.line, frame.function) for frame in frames if frame.verl_path]


def raise_site_finding(
    block_number: int,
    block: Block,
    frames: list[Frame],
    lines: list[str],
    releases: list[ReleaseFacts],
    library: ReleaseLibrary,
) -> dict | None:
    """The statement that raised ``block`` (its ``root_frames``): looked up in ``releases`` (the user's, as
    far as known), then in any other release whose function at that line has the printed name (a checkout
    between releases)."""
    if frames and frames[-1].verl_path:
        last = frames[-1]
        fitting = library.fitting_frame(last.verl_path, last.line, last.function, releases)
        found = first_raise_site(fitting, last.verl_path, last.line)
        if found is not None:  # a release where that very line is a raise or an assert explains it best
            return _finding(block_number, *found, "frame")
        for facts in fitting:
            text = facts.source_line(last.verl_path, last.line)  # else the line itself failed (`batch[key]`, a call)
            if text is not None and text.strip():
                site = RaiseSite(last.verl_path, last.line, last.line, last.function, "", text, "", "")
                return _finding(block_number, facts, site, "frame")
        return None
    if frames:
        return None  # raised below verl (torch, vLLM, Ray): not verl's statement
    message = _message(block, lines)
    raised = block.exception_line.split(":", 1)[0].rsplit(".", 1)[-1]
    for facts in releases:
        site = _by_template(facts, message, raised)
        if site is not None:
            return _finding(block_number, facts, site, "message")
    return None


def _message(block: Block, lines: list[str]) -> str:
    first, last = block.message
    text = " ".join(line.strip() for line in lines[first : last + 1])
    return text[:MAX_MESSAGE_CHARS]


def _by_template(facts: ReleaseFacts, message: str, raised: str) -> RaiseSite | None:
    """The raise site of type ``raised`` whose message template fits ``message`` best (most fixed text)."""
    best = None
    for template in facts.message_templates:
        if template.site.exception != raised or (best is not None and template.fixed <= best.fixed):
            continue
        if template.anchor in message and template.pattern.search(message):
            best = template
    return best.site if best else None


def _finding(block_number: int, facts: ReleaseFacts, site: RaiseSite, how: str) -> dict:
    condition, statement = _dedent(site.condition, site.statement)
    return {
        "kind": "raise_site",
        "verl_version": facts.version,
        "path": site.path,
        "line": site.line,
        "function": site.function,
        "statement": statement,
        "condition": condition,
        "url": SOURCE_URL.format(version=facts.version, path=site.path, line=site.line),
        "block": block_number,
        "located_by": how,
    }


def _dedent(condition: str, statement: str) -> tuple[str, str]:
    """Both pieces shifted left together, so the raise stays indented under its `if`."""
    lines = [line for line in (condition + "\n" + statement).splitlines() if line.strip()]
    margin = min((len(line) - len(line.lstrip(" ")) for line in lines), default=0)
    return _shift(condition, margin), _shift(statement, margin)


def _shift(text: str, margin: int) -> str:
    return "\n".join(line[margin:] for line in text.splitlines())
