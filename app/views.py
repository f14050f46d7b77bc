"""Each answer built once from a generation's data, as the typed models of app.answers: rendered as HTML, sent as
JSON, returned by MCP tools and printed by `kb match`."""

from __future__ import annotations

from app import answers as a
from app.entries import CATEGORIES, CATEGORY_NAMES, Catalog, Entry, facets
from app.findings import Findings
from app.insights.fingerprint import fingerprint_id
from app.matcher import Diagnosis
from app.render import to_html
from app.search.query import SearchResult
from app.votes import EntryVotes, FixStats, ranked_fixes


def entry_url(base: str, code: str) -> str:
    """The URL of an entry page under ``base`` (the manual's root URL): the one place a code becomes a link."""
    return f"{base.rstrip('/')}/errors/{code}"


def pick(english: str, chinese: str, lang: str) -> str:
    """Chinese when asked for and written, English otherwise."""
    return chinese if lang == "zh" and chinese else english


def fix_answer(entry: Entry, fix, stats: FixStats, lang: str) -> a.FixOut:
    body = pick(fix.body, entry.fix_bodies_zh.get(fix.id, ""), lang)
    return a.FixOut(
        id=fix.id,
        title=pick(fix.title, fix.title_zh, lang),
        body=body,
        body_html=to_html(body),
        votes_up=stats.votes_up,
        votes_down=stats.votes_down,
        success_rate=stats.success_rate,
        wilson_lower_bound=stats.wilson,
        dead_end=fix.dead_end or stats.voted_dead_end,
        dead_end_reason="content" if fix.dead_end else ("votes" if stats.voted_dead_end else None),
        evidence=fix.evidence,
        evidence_url=fix.evidence_url,
        content_hash=fix.content_hash,
    )


def fix_answers(entry: Entry, stats: dict, lang: str) -> list[a.FixOut]:
    return [fix_answer(entry, fix, fix_stat, lang) for fix, fix_stat in ranked_fixes(entry, stats)]


def _summary_fields(entry: Entry, lang: str, base: str) -> dict:
    meta = entry.meta
    return {
        "code": meta.code,
        "title": pick(meta.title, meta.title_zh, lang),
        "category": meta.category,
        "summary": pick(meta.summary, meta.summary_zh, lang),
        "exception": meta.exception,
        "url": entry_url(base, meta.code),
    }


def entry_answer(entry: Entry, catalog: Catalog, votes: EntryVotes, lang: str, base: str) -> a.ErrorOut:
    """Everything the entry page and `/api/v1/errors/{code}` show (``votes`` from ``entry_votes``)."""
    meta = entry.meta
    body = pick(entry.body, entry.body_zh, lang)
    fixes = [
        a.EntryFixOut(
            **fix.model_dump(), comments=votes.comments.get(fix.id, []), environments=votes.environments.get(fix.id, {})
        )
        for fix in fix_answers(entry, votes.stats, lang)
    ]
    return a.ErrorOut(
        **_summary_fields(entry, lang, base),
        title_en=meta.title,
        title_zh=meta.title_zh,
        lang="zh" if lang == "zh" and entry.body_zh else "en",
        has_zh=bool(entry.body_zh),
        body=body,
        body_html=to_html(body),
        signatures=list(meta.signatures),
        examples=list(meta.examples),
        fixes=fixes,
        symptom_of=[_link(catalog, code, lang, base) for code in meta.symptom_of],
        related=[_link(catalog, code, lang, base) for code in meta.related],
        tags=list(meta.tags),
        applies_to=meta.applies_to,
        fixed_in=meta.fixed_in,
        reviewed=meta.reviewed.model_dump(mode="json") if meta.reviewed else None,
        backends=list(meta.backends),
        engines=list(meta.engines),
        hardware=list(meta.hardware),
        models=list(meta.models),
        sources=list(meta.sources),
        source_links=[a.SourceOut(url=url, title=title) for url, title in entry.titled_sources()],
    )


def _link(catalog: Catalog, code: str, lang: str, base: str) -> a.LinkOut:
    entry = catalog.get(code)
    title = pick(entry.meta.title, entry.meta.title_zh, lang) if entry else code
    return a.LinkOut(code=code, title=title, url=entry_url(base, code))


def browse_answer(
    catalog: Catalog,
    stats: dict,
    lang: str,
    base: str,
    *,
    filters: dict[str, str | None] | None = None,
    sort: str = "code",
) -> a.BrowseOut:
    """The entries that match ``filters`` (see ``app.entries.facets``), grouped by category and sorted by
    code or by votes (``stats``: every fix's vote counts), with each filter's values and counts."""
    filters = {facet: (filters or {}).get(facet) for facet in facets.FACETS}
    votes: dict[str, int] = {}
    for (code, _fix_id), stat in stats.items():
        votes[code] = votes.get(code, 0) + stat.total
    chosen = {entry.code for entry in facets.select(catalog, filters)}
    groups = []
    for name, entries in catalog.by_category().items():
        rows = [
            a.BrowseRow(**_summary_fields(entry, lang, base), votes=votes.get(entry.code, 0))
            for entry in entries
            if entry.code in chosen
        ]
        if not rows:
            continue
        if sort == "votes":
            rows.sort(key=lambda row: (-row.votes, row.code))
        groups.append(a.BrowseGroup(category=name, name=category_name(name, lang), errors=rows))
    errors = [row for group in groups for row in group.errors]
    counts = facets.counts(catalog, filters)
    for row in counts["category"]:
        row["name"] = category_name(row["value"], lang)
    return a.BrowseOut(
        groups=groups,
        errors=errors,
        total=len(errors),
        category=filters["category"],
        filters=filters,
        facets=counts,
        sort=sort,
    )


def category_name(category: str, lang: str) -> str:
    english, chinese = CATEGORY_NAMES[category]
    return pick(english, chinese, lang)


def categories_answer(catalog: Catalog, lang: str) -> list[a.CategoryOut]:
    groups = catalog.by_category()
    return [a.CategoryOut(category=c, name=category_name(c, lang), count=len(groups[c])) for c in CATEGORIES]


TOP_FIXES = 6


def home_answer(catalog: Catalog, stats: dict, lang: str) -> a.HomeOut:
    """The categories and the fixes with most 'worked' votes."""
    top = sorted(((key, stat) for key, stat in stats.items() if stat.votes_up), key=lambda kv: (-kv[1].votes_up, kv[0]))
    most_voted = []
    for (code, fix_id), stat in top[:TOP_FIXES]:
        entry = catalog.get(code)
        fix = entry.fix(fix_id) if entry else None
        if fix:
            most_voted.append(
                a.MostVotedFix(
                    code=code,
                    fix_id=fix_id,
                    title=fix.title_zh if lang == "zh" else fix.title,
                    entry_title=entry.meta.title,
                    votes_up=stat.votes_up,
                    total=stat.total,
                )
            )
    return a.HomeOut(categories=categories_answer(catalog, lang), most_voted=most_voted, total=len(catalog))


def search_answer(
    result: SearchResult, base: str, *, query: str, category: str | None, page: int, limit: int
) -> a.SearchOut:
    hits = [
        a.SearchHit(
            code=hit.code,
            title=hit.title,
            category=hit.category,
            snippet=hit.snippet,
            score=hit.score,
            url=entry_url(base, hit.code),
            title_zh=hit.title_zh,
            summary_zh=hit.summary_zh,
        )
        for hit in result.hits
    ]
    return a.SearchOut(
        query=query,
        category=category,
        hits=hits,
        total=result.total,
        facets=result.facets,
        page=page,
        limit=limit,
        pages=max(1, -(-result.total // limit)),
        took_ms=result.took_ms,
        suggestions=result.suggestions,
        fuzzy=result.fuzzy,
        dropped=result.dropped,
    )


def match_answer(
    diagnosis: Diagnosis, catalog: Catalog, stats: dict, lang: str, base: str, findings: Findings, *, context: int = 0
) -> a.MatchResponse:
    """The `/api/v1/match` contract: matches root cause first, with fixes, blocks, environment and findings.

    ``stats`` are the vote counts of the matched entries. With ``context`` > 0 (the paste page) each match
    carries its matched line with that many lines around it.
    """
    matches = []
    for match in diagnosis.matches:
        entry = catalog.get(match.code)
        fields = dict(
            code=match.code,
            title=pick(entry.meta.title, entry.meta.title_zh, lang),
            category=entry.category,
            summary=pick(entry.meta.summary, entry.meta.summary_zh, lang),
            score=round(match.score, 3),
            confidence=match.confidence,
            matched_line=match.matched_line,
            signature=match.signature,
            root_cause=match.root_cause,
            consequence_of=match.consequence_of,
            demoted_because=match.demoted_because,
            block=match.block,
            url=entry_url(base, match.code),
            fixes=fix_answers(entry, stats, lang),
        )
        if context:
            matches.append(a.PasteMatch(**fields, context=_context(diagnosis.paste.lines, match.line_index, context)))
        else:
            matches.append(a.MatchOut(**fields))
    blocks = [
        a.BlockOut(
            kind=block.kind,
            exception_line=block.exception_line[:2000],
            first_line=block.start + 1,
            last_line=block.end + 1,
            count=block.count,
            ranks=block.ranks_label(),
            frames=block.frames[-6:],
            explained=number in diagnosis.explained,
            truncated=block.truncated,
        )
        for number, block in enumerate(diagnosis.blocks)
    ]
    model = a.PasteAnswer if context else a.MatchResponse
    return model(
        matches=matches,
        blocks=blocks,
        environment=diagnosis.environment.as_dict(),
        findings=findings.find(diagnosis, catalog),
        release_facts=findings.missing,
        fingerprint=fingerprint_id(diagnosis),
        took_ms=round(diagnosis.took_ms, 3),
    )


def _context(lines: list[str], index: int | None, around: int) -> list[a.ContextLine]:
    if index is None:
        return []
    start, stop = max(0, index - around), min(len(lines), index + around + 1)
    return [a.ContextLine(text=lines[i][:400], hit=i == index) for i in range(start, stop)]


def uncovered_crash(answer: a.MatchResponse) -> a.BlockOut | None:
    """The last complete traceback of a match answer that no entry explains: most likely what really
    stopped the run, named when the manual has no confident answer."""
    crashes = [
        block for block in answer.blocks if block.kind == "traceback" and not block.truncated and not block.explained
    ]
    return crashes[-1] if crashes else None


COMPACT_FIXES = 2


def compact_match(answer: a.MatchResponse) -> a.CompactMatchResponse:
    """The match answer trimmed for an LLM's context: what it is, why, and what to do (and what was read)."""
    matches = [
        a.CompactMatch(
            code=m.code,
            title=m.title,
            confidence=m.confidence,
            root_cause=m.root_cause,
            consequence_of=m.consequence_of,
            matched_line=m.matched_line[:300],
            url=m.url,
            fixes=[
                a.CompactFix(id=f.id, title=f.title, body=f.body, success_rate=f.success_rate)
                for f in m.fixes
                if not f.dead_end
            ][:COMPACT_FIXES],
        )
        for m in answer.matches
    ]
    read = {"ocr_text": answer.ocr_text} if answer.ocr_text else {}
    return a.CompactMatchResponse(**read, matches=matches, findings=answer.findings)


def compact_search(answer: a.SearchOut) -> a.CompactSearchOut:
    return a.CompactSearchOut(
        hits=[a.CompactHit(code=h.code, title=h.title, url=h.url) for h in answer.hits], total=answer.total
    )
