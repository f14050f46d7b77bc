"""Plain data for each page and its JSON twin: computed once, rendered as HTML or returned as JSON."""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import Session

from app.entries import CATEGORIES, CATEGORY_NAMES, Catalog, Entry, facets
from app.findings import Findings
from app.insights.fingerprint import fingerprint_id
from app.matcher import Diagnosis
from app.render import to_html
from app.search.query import SearchResult
from app.votes import EntryVotes, FixStats, fix_stats, ranked_fixes

UrlFor = Callable[[str], str]  # code -> absolute or root-relative URL of its entry page


def pick(english: str, chinese: str, lang: str) -> str:
    """Chinese when asked for and written, English otherwise."""
    return chinese if lang == "zh" and chinese else english


def fix_data(entry: Entry, fix, stats: FixStats, lang: str) -> dict:
    body = pick(fix.body, entry.fix_bodies_zh.get(fix.id, ""), lang)
    return {
        "id": fix.id, "title": pick(fix.title, fix.title_zh, lang), "body": body, "body_html": to_html(body),
        "votes_up": stats.votes_up, "votes_down": stats.votes_down, "success_rate": stats.success_rate,
        "wilson_lower_bound": stats.wilson, "dead_end": fix.dead_end or stats.voted_dead_end,
        "dead_end_reason": "content" if fix.dead_end else ("votes" if stats.voted_dead_end else None),
        "evidence": fix.evidence, "evidence_url": fix.evidence_url, "content_hash": fix.content_hash,
    }


def fixes_data(entry: Entry, stats: dict, lang: str) -> list[dict]:
    return [fix_data(entry, fix, fix_stat, lang) for fix, fix_stat in ranked_fixes(entry, stats)]


def entry_summary(entry: Entry, lang: str, url_for: UrlFor) -> dict:
    meta = entry.meta
    return {
        "code": meta.code, "title": pick(meta.title, meta.title_zh, lang), "category": meta.category,
        "summary": pick(meta.summary, meta.summary_zh, lang), "exception": meta.exception, "url": url_for(meta.code),
    }


def entry_data(entry: Entry, catalog: Catalog, votes: EntryVotes, lang: str, url_for: UrlFor) -> dict:
    """Everything the entry page and `/api/v1/errors/{code}` show (``votes`` from ``entry_votes``)."""
    meta = entry.meta
    body = pick(entry.body, entry.body_zh, lang)
    fixes = fixes_data(entry, votes.stats, lang)
    for fix in fixes:
        fix["comments"] = votes.comments.get(fix["id"], [])
        fix["environments"] = votes.environments.get(fix["id"], {})
    return {
        **entry_summary(entry, lang, url_for),
        "title_en": meta.title, "title_zh": meta.title_zh,
        "lang": "zh" if lang == "zh" and entry.body_zh else "en",
        "has_zh": bool(entry.body_zh),
        "body": body, "body_html": to_html(body),
        "signatures": list(meta.signatures), "examples": list(meta.examples),
        "fixes": fixes,
        "symptom_of": [_link(catalog, code, lang, url_for) for code in meta.symptom_of],
        "related": [_link(catalog, code, lang, url_for) for code in meta.related],
        "tags": list(meta.tags), "applies_to": meta.applies_to, "fixed_in": meta.fixed_in,
        "reviewed": meta.reviewed.model_dump(mode="json") if meta.reviewed else None,
        "backends": list(meta.backends), "engines": list(meta.engines), "hardware": list(meta.hardware),
        "models": list(meta.models), "sources": list(meta.sources),
    }


def _link(catalog: Catalog, code: str, lang: str, url_for: UrlFor) -> dict:
    entry = catalog.get(code)
    title = pick(entry.meta.title, entry.meta.title_zh, lang) if entry else code
    return {"code": code, "title": title, "url": url_for(code)}


def browse_data(catalog: Catalog, session: Session, lang: str, url_for: UrlFor, *,
                filters: dict[str, str | None] | None = None, sort: str = "code") -> dict:
    """The entries that match ``filters`` (see ``app.entries.facets``), grouped by category and sorted by
    code or by votes, with each filter's values and counts."""
    filters = {facet: (filters or {}).get(facet) for facet in facets.FACETS}
    stats = fix_stats(session=session)
    votes: dict[str, int] = {}
    for (code, _fix_id), stat in stats.items():
        votes[code] = votes.get(code, 0) + stat.total
    chosen = {entry.code for entry in facets.select(catalog, filters)}
    groups = []
    for name, entries in catalog.by_category().items():
        rows = [{**entry_summary(entry, lang, url_for), "votes": votes.get(entry.code, 0)}
                for entry in entries if entry.code in chosen]
        if not rows:
            continue
        if sort == "votes":
            rows.sort(key=lambda row: (-row["votes"], row["code"]))
        groups.append({"category": name, "name": category_name(name, lang), "errors": rows})
    errors = [row for group in groups for row in group["errors"]]
    counts = facets.counts(catalog, filters)
    for row in counts["category"]:
        row["name"] = category_name(row["value"], lang)
    return {"groups": groups, "errors": errors, "total": len(errors), "category": filters["category"],
            "filters": filters, "facets": counts, "sort": sort}


def category_name(category: str, lang: str) -> str:
    english, chinese = CATEGORY_NAMES[category]
    return pick(english, chinese, lang)


def categories_data(catalog: Catalog, lang: str) -> list[dict]:
    groups = catalog.by_category()
    return [{"category": c, "name": category_name(c, lang), "count": len(groups[c])} for c in CATEGORIES]


def search_data(result: SearchResult, lang: str, url_for: UrlFor, *, query: str, category: str | None,
                page: int, limit: int) -> dict:
    hits = [
        {"code": hit.code, "title": hit.title, "category": hit.category, "snippet": hit.snippet,
         "score": hit.score, "url": url_for(hit.code)}
        for hit in result.hits
    ]
    return {
        "query": query, "category": category, "hits": hits, "total": result.total, "facets": result.facets,
        "page": page, "limit": limit, "pages": max(1, -(-result.total // limit)), "took_ms": result.took_ms,
        "suggestions": result.suggestions, "fuzzy": result.fuzzy, "dropped": result.dropped,
    }


def match_stats(diagnosis: Diagnosis, session: Session) -> dict:
    """Vote counts for the entries a diagnosis names."""
    codes = [match.code for match in diagnosis.matches]
    return fix_stats(session=session, codes=codes) if codes else {}


def match_data(diagnosis: Diagnosis, catalog: Catalog, stats: dict, lang: str, url_for: UrlFor,
               findings: Findings) -> dict:
    """The `/api/v1/match` contract: matches root cause first, with fixes, blocks, environment and findings.

    ``stats`` are the vote counts of the matched entries (see ``match_stats``).
    """
    matches = []
    for match in diagnosis.matches:
        entry = catalog.get(match.code)
        matches.append({
            "code": match.code, "title": pick(entry.meta.title, entry.meta.title_zh, lang), "category": entry.category,
            "summary": pick(entry.meta.summary, entry.meta.summary_zh, lang),
            "score": round(match.score, 3), "confidence": match.confidence, "matched_line": match.matched_line,
            "signature": match.signature, "root_cause": match.root_cause, "consequence_of": match.consequence_of,
            "demoted_because": match.demoted_because, "block": match.block, "url": url_for(match.code),
            "fixes": fixes_data(entry, stats, lang),
        })
    blocks = [
        {"kind": block.kind, "exception_line": block.exception_line[:2000], "first_line": block.start + 1,
         "last_line": block.end + 1, "count": block.count, "ranks": block.ranks_label(), "frames": block.frames[-6:],
         "explained": number in diagnosis.explained, "truncated": block.truncated}
        for number, block in enumerate(diagnosis.blocks)
    ]
    return {
        "matches": matches, "blocks": blocks, "environment": diagnosis.environment.as_dict(),
        "findings": findings.find(diagnosis, catalog), "release_facts": findings.missing,
        "fingerprint": fingerprint_id(diagnosis), "took_ms": round(diagnosis.took_ms, 3),
    }


def uncovered_crash(result: dict) -> dict | None:
    """The last complete traceback of a match answer that no entry explains: most likely what really
    stopped the run, named when the manual has no confident answer."""
    crashes = [block for block in result["blocks"]
               if block["kind"] == "traceback" and not block["truncated"] and not block["explained"]]
    return crashes[-1] if crashes else None


COMPACT_FIXES = 2


def compact_match(data: dict) -> dict:
    """The match answer trimmed for an LLM's context: what it is, why, and what to do (and what was read)."""
    read = {"ocr_text": data["ocr_text"]} if data.get("ocr_text") else {}
    return {**read, "matches": [
        {"code": m["code"], "title": m["title"], "confidence": m["confidence"], "root_cause": m["root_cause"],
         "consequence_of": m["consequence_of"], "matched_line": m["matched_line"][:300], "url": m["url"],
         "fixes": [{"id": f["id"], "title": f["title"], "body": f["body"], "success_rate": f["success_rate"]}
                   for f in m["fixes"] if not f["dead_end"]][:COMPACT_FIXES]}
        for m in data["matches"]
    ], "findings": data["findings"]}


def compact_search(data: dict) -> dict:
    return {"hits": [{"code": h["code"], "title": h["title"], "url": h["url"]} for h in data["hits"]], "total": data["total"]}
