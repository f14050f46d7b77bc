"""An entry as one Markdown document (for `/errors/{code}.md`, LLM agents and copy-paste)."""

from __future__ import annotations

from app.entries import Entry, Fix
from app.views import pick
from app.votes import FixStats


def entry_markdown(entry: Entry, ordered: list[tuple[Fix, FixStats]], lang: str, url: str) -> str:
    """Return the entry with its fixes, in vote order, as Markdown."""
    meta = entry.meta
    lines = [
        f"# {meta.code}: {pick(meta.title, meta.title_zh, lang)}",
        "",
        pick(meta.summary, meta.summary_zh, lang),
        "",
        f"- Category: {meta.category}",
        f"- Exception: `{meta.exception}`",
        f"- URL: {url}",
    ]
    if meta.applies_to:
        lines.append(f"- Applies to: `{meta.applies_to}`")
    if meta.fixed_in:
        lines.append(f"- Fixed in: {meta.fixed_in}")
    if meta.symptom_of:
        lines.append(f"- Usually caused by: {', '.join(meta.symptom_of)}")
    lines += ["", pick(entry.body, entry.body_zh, lang).strip(), "", "## Fixes" if lang != "zh" else "## 修复方法", ""]
    for position, (fix, stats) in enumerate(ordered, start=1):
        title = pick(fix.title, fix.title_zh, lang)
        dead = " (dead end: known not to work)" if fix.dead_end or stats.voted_dead_end else ""
        votes = f"worked for {stats.votes_up} of {stats.total} voters" if stats.total else "no votes yet"
        evidence = f"evidence: {fix.evidence}" + (f" ({fix.evidence_url})" if fix.evidence_url else "")
        lines += [
            f"### {position}. {title}{dead}",
            "",
            f"_{votes}; {evidence}; fix id `{fix.id}`_",
            "",
            pick(fix.body, entry.fix_bodies_zh.get(fix.id, ""), lang).strip(),
            "",
        ]
    if meta.sources:
        lines += ["## Sources", ""]
        for source, title in entry.titled_sources():
            # "[Bug] ..." titles: brackets escaped so the link text stays one link
            text = title.replace("[", "\\[").replace("]", "\\]") if title else None
            lines.append(f"- [{text}]({source})" if text else f"- {source}")
        lines.append("")
    return "\n".join(lines)
