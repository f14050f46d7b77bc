"""The human-readable diagnosis `kb match` prints in a terminal (and the API sends with `?format=text`)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from app.answers import MatchResponse
from app.matcher import CONFIDENT
from app.views import uncovered_crash

FIXES_SHOWN = 3
REPORT_WIDTH = 100


def report_text(result: MatchResponse) -> str:
    """The report `kb match` prints, as plain text (no colour codes) for `?format=text` on the API."""
    buffer = io.StringIO()
    print_diagnosis(
        Console(file=buffer, width=REPORT_WIDTH, color_system=None, force_terminal=False, emoji=False, highlight=False),
        result,
    )
    return buffer.getvalue()


def print_diagnosis(console: Console, result: MatchResponse) -> None:
    """Root cause first with its matched line and top fixes; then cascades and other candidates."""
    matches = result.matches
    confident = [m for m in matches if m.confidence in CONFIDENT]
    if not confident:
        console.print("No entry of the manual matches this error with confidence.", style="bold yellow")
        for finding in result.findings:
            if finding.kind == "truncated":
                console.print(f"The paste is cut short: {finding.hint}", markup=False)
        crash = uncovered_crash(result)
        if crash:
            console.print(
                f"The crash it does not cover (lines {crash.first_line}-{crash.last_line}): "
                f"{crash.exception_line[:300]}",
                markup=False,
            )
        for match in matches:
            console.print(f"  maybe {match.code}: {match.title}  ({match.url})", markup=False)
        _findings(console, result)
        _environment(console, result)
        return
    first = confident[0]
    heading = Text(f"{first.code}  {first.title}", style="bold")
    body = Text()
    body.append(f"{first.summary}\n\n")
    body.append("matched: ", style="dim")
    body.append(first.matched_line[:300] + "\n", style="red")
    body.append(f"confidence {first.confidence} · {first.url}", style="dim")
    console.print(
        Panel(body, title=heading, title_align="left", border_style="green" if first.root_cause else "yellow")
    )
    for number, fix in enumerate(first.fixes[:FIXES_SHOWN], start=1):
        votes = (
            f"{fix.votes_up}/{fix.votes_up + fix.votes_down} worked"
            if fix.votes_up + fix.votes_down
            else "no votes yet"
        )
        dead = " [dead end]" if fix.dead_end else ""
        console.print(Text(f"Fix {number}: {fix.title}{dead}  ({votes})", style="bold"))
        console.print(Markdown(fix.body))
    for match in confident[1:]:
        relation = f"consequence of {match.consequence_of}" if match.consequence_of else "also found"
        console.print(f"· {match.code} {match.title} ({relation}; {match.confidence})", markup=False)
    _findings(console, result)
    _environment(console, result)


SOURCE_NOTE = {
    "pinned": "the log does not say which verl runs; checked against the pinned release",
    "traceback": "the releases whose files and line numbers fit the traceback",
    "paste": "as the log states",
}


def _findings(console: Console, result: MatchResponse) -> None:
    """Version drift and the verl statement that raised (truncation hints are printed with the suggestions)."""
    for finding in result.findings:
        if finding.kind == "version_drift":
            admitted = f"; verl releases that declare it: {finding.admitted_by}" if finding.admitted_by else ""
            admitted += f"; {finding.entry} above says what to do" if finding.entry else ""
            console.print(Text(f"Version drift: {finding.package} {finding.found}", style="bold yellow"))
            console.print(
                f"  verl {finding.verl_version} declares {finding.package}{finding.supported} "
                f"({SOURCE_NOTE[finding.verl_version_source]}){admitted}",
                markup=False,
            )
            console.print(f"  line {finding.evidence.line}: {finding.evidence.text[:200]}", markup=False)
        elif finding.kind == "raise_site":
            how = "" if finding.located_by == "frame" else " (found by its message)"
            console.print(
                Text(
                    f"Raised in verl {finding.verl_version}: {finding.path}:{finding.line} in {finding.function}{how}",
                    style="bold",
                )
            )
            for line in (finding.condition + "\n" + finding.statement).strip("\n").splitlines():
                console.print("  " + line, markup=False, highlight=False)
            console.print(f"  {finding.url}", markup=False)
    if result.release_facts:
        console.print(result.release_facts, style="dim", markup=False)


def _environment(console: Console, result: MatchResponse) -> None:
    env = result.environment
    parts = [f"{name} {version}" for name, version in env.versions.items()]
    if env.gpu:
        parts.append(env.gpu)
    if parts:
        console.print("environment in the log: " + ", ".join(parts), style="dim", markup=False)


def print_insights(console: Console, data: dict, *, recording: bool) -> None:
    """The maintainers' view in a terminal: each list sorted by how many people it hit."""
    if not recording:
        console.print("Recording is off (KB_RECORD_MISSES=false): nothing new is recorded.", style="yellow")
    console.print(f"Missed errors ({len(data['misses'])})", style="bold")
    for miss in data["misses"]:
        versions = f"  verl {', '.join(miss['verl_versions'])}" if miss["verl_versions"] else ""
        console.print(f"  {miss['count']:>4}x  {miss['exception']}: {miss['template'][:160]}{versions}", markup=False)
        if miss["frame"]:
            console.print(f"         at {miss['frame']}", style="dim", markup=False)
        console.print(f"         {miss['command']}", style="cyan", markup=False)
    console.print(f"Searches that found nothing or were not opened ({len(data['searches'])})", style="bold")
    for search in data["searches"]:
        what = "found nothing" if search["kind"] == "empty" else f"{search['hits']} results, none opened"
        console.print(f"  {search['count']:>4}x  {search['query']!r}: {what}", markup=False)
    console.print(f"Matches said not to be the user's error ({len(data['wrong_answers'])})", style="bold")
    for wrong in data["wrong_answers"]:
        error = (
            f"{wrong['exception']}: {wrong['template'][:120]}"
            if wrong["template"] is not None
            else wrong["fingerprint"]
        )
        console.print(f"  {wrong['count']:>4}x  {wrong['code']} shown for {error}", markup=False)
    console.print(f"Fixes voted down more than up ({len(data['failing_fixes'])})", style="bold")
    for fix in data["failing_fixes"]:
        console.print(
            f"  {fix['code']} {fix['fix_id']}: {fix['votes_down']} did not work, {fix['votes_up']} worked", markup=False
        )
