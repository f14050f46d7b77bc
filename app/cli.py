"""The `kb` command: each command is options plus one call into the library; only this module prints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from app.settings import Settings

cli = typer.Typer(add_completion=False, no_args_is_help=True, help="The verl Error Manual.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _settings(content: Path | None = None) -> Settings:
    settings = Settings()
    if content is not None:
        settings = settings.model_copy(update={"content_dir": content})
    return settings


@cli.command()
def check(
    content: Annotated[Path | None, typer.Option(help="Content folder (default: KB_CONTENT_DIR).")] = None,
    offline: Annotated[bool, typer.Option(help="Skip the verl key/module check (never in CI).")] = False,
) -> None:
    """Check every entry; print `path:line: message` for each problem and exit 1 if any."""
    from app.checker import check_content
    from app.verl_release import ReleaseUnavailable, load_release

    settings = _settings(content)
    release = None
    if not offline:
        try:
            release = load_release(settings.data_dir, settings.verl_version)
        except ReleaseUnavailable as exc:
            err.print(f"kb check: {exc}", markup=False)
            raise typer.Exit(1) from None
    catalog, problems = check_content(settings.content_dir, release)
    for problem in problems:
        print(problem)
    if problems:
        err.print(f"{len(problems)} problem(s) in {settings.content_dir}", markup=False)
        raise typer.Exit(1)
    target = f"verl {release.version}" if release else "no verl release (offline)"
    out.print(f"{len(catalog)} entries OK (checked against {target})", markup=False)


@cli.command()
def index(
    force: Annotated[bool, typer.Option(help="Rebuild even when the content hash is unchanged.")] = False,
    releases: Annotated[bool, typer.Option(help="Also cache the facts of every verl release on the registry.")] = True,
) -> None:
    """Migrate the database, load the content, build the search index (skipped when unchanged) and cache
    the release facts that version-drift and raise-site findings read (only what is missing)."""
    from app.ingest import IngestError, ingest
    from app.releases import build_all

    settings = _settings()
    try:
        report = ingest(settings, force=force, progress=_progress())
    except IngestError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        raise typer.Exit(1) from None
    out.print(report.describe(), markup=False)
    if releases:
        ready, missing = build_all(settings.verl_dir)
        out.print(f"release facts: {len(ready)} verl releases in {settings.verl_dir / 'facts'}", markup=False)
        for problem in missing:
            err.print(
                f"release facts missing: {problem} (findings about versions and raise sites need them)", markup=False
            )


@cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Listen address (default KB_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Listen port (default KB_PORT).")] = None,
    workers: Annotated[int, typer.Option(min=1, help="uvicorn worker processes.")] = 1,
) -> None:
    """Build what changed, then serve the manual with uvicorn."""
    import uvicorn

    from app.ingest import IngestError, ingest

    settings = _settings()
    try:
        report = ingest(settings, progress=_progress())
    except IngestError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        raise typer.Exit(1) from None
    out.print(report.describe(), markup=False)
    uvicorn.run(
        "app.web.app:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        proxy_headers=True,
        log_level="info",
        timeout_keep_alive=settings.keep_alive_timeout,
    )


@cli.command()
def match(
    source: Annotated[str, typer.Argument(help="A log file, or - for standard input.")] = "-",
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON of POST /api/v1/match.")] = False,
    limit: Annotated[int, typer.Option(min=1, max=20, help="How many matches to show.")] = 5,
    server: Annotated[
        str | None,
        typer.Option(help="Ask the manual running at this URL instead of this checkout (default KB_SERVER)."),
    ] = None,
) -> None:
    """Diagnose a traceback or log.

    Exit codes: 0 a confident (high or medium) match; 1 no confident match; 2 bad input (empty, unreadable,
    too large, or refused by the server); 3 the manual could not answer (an internal error, entries that do not
    load, or, with --server, a server that cannot be reached or fails)."""
    import json

    from app.answers import dump
    from app.entries import ContentError
    from app.manual import Manual
    from app.remote import RemoteError, RemoteManual

    settings = _settings()
    data = _read_source(source, settings.max_paste_bytes)
    server = server if server is not None else settings.server
    try:
        manual = RemoteManual(server) if server else Manual.open(settings, fresh=True)
    except ContentError as exc:
        err.print(f"kb match: the entries do not load; run `kb check`\n{exc}", markup=False)
        raise typer.Exit(3) from None
    except Exception as exc:  # exit 1 means "no confident match": a crash must not look like one
        err.print(f"kb match: internal error: {type(exc).__name__}: {exc}", markup=False)
        raise typer.Exit(3) from None
    if manual.rebuilt:
        err.print("kb match: the search index was missing, damaged or older than the entries; rebuilt it", markup=False)
    if manual.notice:
        err.print(f"kb match: {manual.notice}", markup=False)
    try:
        result = manual.match(data, limit=limit)
    except RemoteError as exc:
        err.print(f"kb match: {exc}", markup=False)
        raise typer.Exit(exc.exit_code) from None
    except Exception as exc:
        err.print(f"kb match: internal error: {type(exc).__name__}: {exc}", markup=False)
        raise typer.Exit(3) from None
    if as_json:
        print(json.dumps(dump(result), ensure_ascii=False, indent=2))
    else:
        from app.cli_report import print_diagnosis

        print_diagnosis(out, result)
    raise typer.Exit(0 if manual.is_confident(result) else 1)


def _read_source(source: str, max_bytes: int) -> bytes:
    try:
        if source == "-":
            data = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with open(source, "rb") as handle:
                data = handle.read(max_bytes + 1)
    except OSError as exc:
        err.print(f"kb match: cannot read {source}: {exc.strerror}", markup=False)
        raise typer.Exit(2) from None
    if len(data) > max_bytes:
        err.print(
            f"kb match: input exceeds {max_bytes} bytes (KB_MAX_PASTE_BYTES); pass the last part of the log",
            markup=False,
        )
        raise typer.Exit(2)
    if not data.strip():
        err.print("kb match: the input is empty; pass a log file or pipe an error into `kb match -`", markup=False)
        raise typer.Exit(2)
    return data


@cli.command()
def search(
    query: Annotated[str, typer.Argument(help="Words, an error message or a config key, in English or Chinese.")],
    category: Annotated[str | None, typer.Option(help="Only entries of this category (CFG, ROLL, ...).")] = None,
    lang: Annotated[
        str | None,
        typer.Option(help="Language of titles and snippets, en or zh (default: zh for a query in Chinese, else en)."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=100, help="How many hits to show.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON of GET /api/v1/search.")] = False,
) -> None:
    """Search the entries. Exit 0: hits; 1: none; 2: bad usage or no index; 3: internal error."""
    import html
    import json
    import re

    from app.answers import dump
    from app.entries import ContentError
    from app.manual import Manual
    from app.search.analysis import has_cjk
    from app.voting import Refused

    if lang not in (None, "en", "zh"):
        err.print("kb search: --lang must be en or zh", markup=False)
        raise typer.Exit(2)
    try:
        manual = Manual.open(_settings(), fresh=True)
        result = manual.search(
            query,
            category=category.upper() if category else None,
            lang=lang or ("zh" if has_cjk(query) else "en"),
            limit=limit,
        )
    except (ContentError, Refused) as exc:
        err.print(f"kb search: {exc}", markup=False)
        raise typer.Exit(2) from None
    except Exception as exc:  # exit 1 means "nothing found": a crash must not look like it
        err.print(f"kb search: internal error: {type(exc).__name__}: {exc}", markup=False)
        raise typer.Exit(3) from None
    if as_json:
        print(json.dumps(dump(result), ensure_ascii=False, indent=2))
    else:
        for hit in result.hits:
            out.print(f"{hit.code:<10} {hit.title}", markup=False)
            out.print(f"{'':<10} {html.unescape(re.sub(r'<[^>]+>', '', hit.snippet))}", markup=False)
        out.print(f"{result.total} result{'' if result.total == 1 else 's'}", markup=False)
    raise typer.Exit(0 if result.hits else 1)


@cli.command(name="eval")
def eval_(
    folder: Annotated[Path, typer.Argument(help="Folder of labelled pastes ('# expect: <CODE>' or '# expect: none').")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Top-1 / top-3 accuracy and clean negatives over a folder of labelled pastes."""
    import json

    from app.diagnose import evaluate
    from app.manual import Manual

    if not folder.is_dir():
        err.print(f"kb eval: {folder} is not a folder", markup=False)
        raise typer.Exit(2)
    try:
        report = evaluate(Manual.open(_settings(), fresh=True), folder)
    except ValueError as exc:
        err.print(f"kb eval: {exc}", markup=False)
        raise typer.Exit(2) from None
    figures = report.as_dict()
    if as_json:
        print(json.dumps(figures, indent=2))
        return
    for failure in figures["failures"]:
        suggested = [code for code in failure["shown"] if code not in failure["got"]]
        out.print(
            f"MISS {failure['file']}: expected {failure['expect']}, got {', '.join(failure['got']) or 'nothing'}"
            + (f" (suggested: {', '.join(suggested)})" if suggested else ""),
            markup=False,
        )
    out.print(
        f"{figures['positives']} positives: top-1 {figures['top1']:.3f}, top-3 {figures['top3']:.3f}; "
        f"{figures['negatives']} negatives: {figures['negatives_clean']} clean",
        markup=False,
    )


@cli.command(name="search-eval")
def search_eval(
    titles: Annotated[Path, typer.Argument(help="Tab-separated title file (columns id, expect, lang, title).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Top-1 / top-5 of search over real issue titles labelled with the entries that answer them."""
    import json

    from app.manual import Manual
    from app.search.evaluate import figures, read_titles, run

    try:
        cases = read_titles(titles)
    except (OSError, ValueError) as exc:
        err.print(f"kb search-eval: {exc}", markup=False)
        raise typer.Exit(2) from None
    manual = Manual.open(_settings(), fresh=True)
    if manual.index is None:
        err.print(f"kb search-eval: {manual.notice}", markup=False)
        raise typer.Exit(2)
    result = figures(run(manual.search, cases))
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    for miss in result["misses"]:
        out.print(
            f"MISS {miss['id']} {miss['title']!r}: expected {' '.join(miss['expect'])}, "
            f"got {', '.join(miss['got']) or 'nothing'}",
            markup=False,
        )
    langs = "; ".join(
        f"{lang} {block['titles']}: top-1 {block['top1']:.3f}, top-5 {block['top5']:.3f}"
        for lang, block in result["by_lang"].items()
    )
    out.print(
        f"{result['titles']} titles: top-1 {result['top1']:.3f}, top-5 {result['top5']:.3f}, "
        f"{result['empty']} empty ({langs})",
        markup=False,
    )


votes_cli = typer.Typer(no_args_is_help=True, help="Vote reports and exports.")
cli.add_typer(votes_cli, name="votes")


@votes_cli.command("report")
def votes_report_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    top: Annotated[int, typer.Option(min=1, help="How many failing fixes to list.")] = 20,
) -> None:
    """Fixes that fail most, and entries with no working fix."""
    import json

    from app.manual import Manual

    manual = Manual.open_records(_settings())
    try:
        report = manual.votes_report(top=top)
    finally:
        manual.close()
    if as_json:
        print(
            json.dumps(
                {
                    "failing": [
                        {
                            "code": c,
                            "fix_id": f,
                            "votes_up": s.votes_up,
                            "votes_down": s.votes_down,
                            "success_rate": s.success_rate,
                        }
                        for c, f, s in report.failing
                    ],
                    "unsolved": report.unsolved,
                },
                indent=2,
            )
        )
        return
    out.print("Fixes that fail most:" if report.failing else "No fix has a 'did not work' vote yet.", markup=False)
    for code, fix_id, stat in report.failing:
        out.print(f"  {code} {fix_id}: {stat.votes_down} did not work, {stat.votes_up} worked", markup=False)
    out.print(f"Entries with no working fix: {', '.join(report.unsolved) or 'none'}", markup=False)


@votes_cli.command("export")
def votes_export(
    output: Annotated[Path | None, typer.Option(help="File to write (default: standard output).")] = None,
) -> None:
    """Every vote as CSV (no voter ids or addresses)."""
    import csv

    from app.manual import Manual

    manual = Manual.open_records(_settings())
    handle = open(output, "w", newline="", encoding="utf-8") if output else sys.stdout
    try:
        writer = csv.writer(handle)
        for row in manual.vote_rows():
            writer.writerow(row)
    finally:
        if output:
            handle.close()
        manual.close()


@cli.command()
def insights(
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON of GET /api/v1/insights.")] = False,
    top: Annotated[int, typer.Option(min=1, max=1000, help="How many rows per list.")] = 20,
) -> None:
    """What the manual could not answer: missed errors, searches, wrong matches, failing fixes."""
    import json

    from app.manual import Manual

    settings = _settings()
    manual = Manual.open_records(settings)
    try:
        data = manual.insights(top=top, purge=True).model_dump(mode="json")
    finally:
        manual.close()
    if as_json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return
    from app.cli_report import print_insights

    print_insights(out, data, recording=settings.record_misses)


@cli.command()
def new(
    from_line: Annotated[
        str | None, typer.Option("--from", help="The error line (`-`: read it from standard input).")
    ] = None,
    from_fingerprint: Annotated[str | None, typer.Option(help="A missed fingerprint's id from `kb insights`.")] = None,
    category: Annotated[
        str | None,
        typer.Option(help="ENV CFG DATA ROLL TRAIN DIST CKPT MEG VLM AGENT LORA NPU (default: guessed from the line)."),
    ] = None,
) -> None:
    """Start an entry: `<CODE>.md` and `<CODE>.zh.md` with the exception, a signature generalised from the line
    and proved against every other entry's examples, the line as first example; TODO marks the rest."""
    from app.entries import load_catalog
    from app.manual import Manual
    from app.scaffold import ScaffoldRefused, draft_entry, draft_from_fingerprint, write_draft

    if (from_line is None) == (from_fingerprint is None):
        err.print('kb new: give --from "<error line>" or --from-fingerprint ID', markup=False)
        raise typer.Exit(2)
    settings = _settings()
    catalog, _problems = load_catalog(settings.content_dir)  # a half-written entry must not block the next one
    chosen = category.upper() if category else None
    try:
        if from_line is not None:
            line = sys.stdin.read() if from_line == "-" else from_line
            draft = draft_entry(catalog, settings.content_dir, line, chosen)
        else:
            manual = Manual.open_records(settings, catalog=catalog)
            try:
                found = manual.missed_fingerprint(from_fingerprint)
            finally:
                manual.close()
            if found is None:
                err.print(f"kb new: no recorded fingerprint {from_fingerprint!r} (see `kb insights`)", markup=False)
                raise typer.Exit(2)
            draft = draft_from_fingerprint(catalog, settings.content_dir, found.exception, found.template, chosen)
        paths = write_draft(draft, settings.content_dir)
    except ScaffoldRefused as refused:
        err.print(f"kb new: {refused}", markup=False)
        raise typer.Exit(1) from None
    for path in paths:
        out.print(f"created {path}", markup=False)
    out.print(f"signature: {draft.signature}\nwrite every TODO, then `kb check`", markup=False)


def _progress():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=err, transient=True)


def main() -> None:
    """Entry point of the `kb` console script."""
    cli()
