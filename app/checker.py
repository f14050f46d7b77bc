"""`kb check`: every rule an entry must pass before it is served, reported as ``path:line: message``."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.version import Version

from app.alias_check import check_aliases
from app.entries import Catalog, Entry, Problem, load_catalog
from app.entries.frontmatter import split
from app.entries.model import REQUIRED_SECTIONS, REQUIRED_SECTIONS_ZH, applies_to_parts
from app.hydra_config import OverrideChecker
from app.matcher import Matcher, SignatureError, compile_signature
from app.matcher.normalise import normalise
from app.matcher.signatures import HEADROOM, SET_MAX_MEM, SignatureSet, specificity, tolerate_wraps
from app.releases.facts import template_pieces
from app.scaffold import TODO as UNFINISHED
from app.search import synonyms
from app.search.analysis import has_cjk
from app.verl_release import VerlRelease

MIN_BODY_WORDS = 60
MIN_SIGNATURE_LITERALS = 8
# Config roots too generic to spot in prose (`model.generate`); their keys are still checked when written
# as overrides of the trees that own them.
PROSE_ROOTS = {"model", "engine", "optim", "checkpoint", "profiler", "skip"}
FILE_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".jsonl", ".parquet", ".sh", ".md", ".txt", ".cpp", ".log")
REFERENCE_RE = re.compile(r"(?<![\w./-])verl(?:\.[A-Za-z_]\w*)+")
FILE_RE = re.compile(r"(?<![\w/.-])(verl/[\w/]+\.(?:py|yaml))")
MODULE_RE = re.compile(r"(?:python3?(?:\.\d+)?|torchrun|accelerate launch)\b[^\n`]*?\s-m\s+(verl(?:\.\w+)+)")
HEADING_RE = re.compile(r"^##\s+(.+?)\s*$", re.MULTILINE)
CODE_RE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.DOTALL)
# Front-matter fields that quote what the user saw, not what the manual advises.
QUOTED_FIELDS = {"signatures", "examples", "invalid_keys", "invalid_modules"}
QUOTED_SECTIONS = {"What you see", "你会看到什么"}


def check_content(content_dir: Path, release: VerlRelease | None) -> tuple[Catalog, list[Problem]]:
    """Load and check every entry; return the catalog and all problems (empty when clean)."""
    catalog, problems = load_catalog(content_dir)
    overrides = OverrideChecker(release.config_dir) if release is not None and release.config_dir else None
    codes = _all_codes(content_dir)
    for entry in catalog:
        problems += _check_references(entry, codes)
        problems += _check_body(entry)
        problems += _check_fixes(entry)
        problems += _check_fix_bodies_zh(entry)
        problems += _check_signatures(entry)
        problems += _check_finished(entry)
        if release is not None:
            problems += _check_verl_names(entry, release)
            problems += _check_overrides(entry, release, overrides)
    if release is not None:
        problems += _check_still_raised(catalog, release)
    if overrides is not None:
        overrides.save()
    if not any(p.message.startswith("signatures.") for p in problems):
        problems += _check_set_headroom(catalog)
    if not any(p.message.startswith("signatures.") for p in problems):
        problems += _check_examples(catalog)
    problems += check_aliases(catalog)
    problems += check_synonyms(synonyms.DEFAULT_PATH)
    return catalog, sorted(set(problems))


def check_synonyms(path: Path) -> list[Problem]:
    """The search synonym list must not make two unrelated words equal (see app/search/synonyms.py)."""
    return [Problem(str(path), line, f"synonyms: {message}") for line, message in synonyms.problems(path)]


def _all_codes(content_dir: Path) -> set[str]:
    return {path.stem for path in content_dir.glob("*.md") if not path.name.endswith(".zh.md")}


def _problem(entry: Entry, message: str, *loc: str | int) -> Problem:
    return Problem(str(entry.path), entry.line_of(*loc), message)


def _check_references(entry: Entry, codes: set[str]) -> list[Problem]:
    problems = []
    for field in ("related", "symptom_of"):
        for index, code in enumerate(getattr(entry.meta, field)):
            if code not in codes:
                problems.append(_problem(entry, f"{field}: {code} is not an entry", field, index))
            elif code == entry.code:
                problems.append(_problem(entry, f"{field}: an entry cannot name itself", field, index))
    return problems


def _check_body(entry: Entry) -> list[Problem]:
    problems = []
    body_line = entry.document.body_line
    headings = HEADING_RE.findall(entry.body)
    for section in REQUIRED_SECTIONS:
        if section not in headings:
            problems.append(Problem(str(entry.path), body_line, f"body: missing section '## {section}'"))
    if len(entry.body.split()) < MIN_BODY_WORDS:
        problems.append(Problem(str(entry.path), body_line, f"body: fewer than {MIN_BODY_WORDS} words"))
    if not entry.body_zh:
        problems.append(Problem(str(entry.zh_path), 1, "Chinese body missing"))
    else:
        headings_zh = HEADING_RE.findall(entry.body_zh)
        for section in REQUIRED_SECTIONS_ZH:
            if section not in headings_zh:
                problems.append(Problem(str(entry.zh_path), 1, f"body: missing section '## {section}'"))
    return problems


def _check_finished(entry: Entry) -> list[Problem]:
    """A draft from `kb new` marks what a person must still write with TODO: none may be served."""
    problems = []
    for path, text in ((entry.path, entry.raw), (entry.zh_path, entry.raw_zh)):
        for number, line in enumerate(text.split("\n"), start=1):
            if UNFINISHED in line:
                problems.append(Problem(str(path), number, f"{UNFINISHED} left from `kb new`: write it first"))
    return problems


def _check_fixes(entry: Entry) -> list[Problem]:
    """Every fix says what its advice rests on and reads in Chinese too; a second reader has checked them."""
    problems = []
    if entry.meta.reviewed is None:
        problems.append(_problem(entry, "reviewed: no second reading of the fixes against verl's source is recorded"))
    for index, fix in enumerate(entry.meta.fixes):
        if fix.evidence is None:
            problems.append(
                _problem(
                    entry,
                    f"fixes[{index}].evidence: say what the fix rests on (maintainer, users, source or unconfirmed)",
                    "fixes",
                    index,
                )
            )
        if fix.evidence_url and not fix.evidence_url.startswith("https://"):
            problems.append(_problem(entry, f"fixes[{index}].evidence_url must be an https URL", "fixes", index))
    return problems


def _check_fix_bodies_zh(entry: Entry) -> list[Problem]:
    """A Chinese reader gets every fix in Chinese: a body per fix in the `.zh.md`, written in Chinese."""
    if not entry.body_zh:
        return []  # the missing Chinese body is reported once, by _check_body
    document = split(entry.raw_zh)
    problems = []
    for fix in entry.meta.fixes:
        body = entry.fix_bodies_zh.get(fix.id)
        if body is None:
            problems.append(
                Problem(
                    str(entry.zh_path),
                    document.line_of(("fix_bodies",)),
                    f"fix_bodies: no Chinese body for fix {fix.id!r}",
                )
            )
        elif not has_cjk(body):
            problems.append(
                Problem(
                    str(entry.zh_path),
                    document.line_of(("fix_bodies", fix.id)),
                    f"fix_bodies.{fix.id}: no Chinese text; say in Chinese what the fix does",
                )
            )
    return problems


def _check_signatures(entry: Entry) -> list[Problem]:
    problems = []
    for index, pattern in enumerate(entry.meta.signatures):
        try:
            compile_signature(pattern)
        except SignatureError as exc:
            problems.append(_problem(entry, f"signatures.{index}: RE2 rejects the pattern: {exc}", "signatures", index))
            continue
        if specificity(pattern) < MIN_SIGNATURE_LITERALS:
            problems.append(
                _problem(
                    entry,
                    f"signatures.{index}: too generic (fewer than {MIN_SIGNATURE_LITERALS} literal characters)",
                    "signatures",
                    index,
                )
            )
    return problems


def _check_still_raised(catalog: Catalog, release: VerlRelease) -> list[Problem]:
    """An entry whose `applies_to` leaves out the pinned release must not recognise a message that release still
    raises: a paste of that line would be answered as not applying to the user's verl (VLM-540 and TRAIN-484 were
    caught this way, both limited to older releases although 0.9.1 raises their later wording)."""
    pinned = Version(release.version)
    excluded = [entry for entry in catalog if not _admits(entry.meta.applies_to, pinned)]
    if not excluded:
        return []
    messages = [(where, _sample_message(exception, template)) for where, exception, template in release.raised]
    problems = []
    for entry in excluded:
        for index, pattern in enumerate(entry.meta.signatures):
            try:
                compiled = compile_signature(pattern)
            except SignatureError:
                continue  # reported by _check_signatures
            where = next((where for where, texts in messages if any(compiled.search(text) for text in texts)), None)
            if where is not None:
                problems.append(
                    _problem(
                        entry,
                        f"applies_to: {entry.meta.applies_to!r} leaves out verl {release.version}, but signatures."
                        f"{index} matches a message {where} of that release raises: widen applies_to or narrow the "
                        "signature",
                        "applies_to",
                    )
                )
                break
    return problems


def _admits(applies_to: str | None, version: Version) -> bool:
    if not applies_to:
        return True
    package, specifier = applies_to_parts(applies_to)
    return package != "verl" or specifier.contains(version, prereleases=True)


# Values a message's formatted fields may print: a number, a list, a quoted name (`\d+`, `\[`, `'\w+'` in a signature).
SAMPLE_VALUES = ("0", "[0]", "'0'")


def _sample_message(exception: str, template: str) -> list[str]:
    """The normalised exception lines a raise site prints, its formatted fields filled with each sample value."""
    pieces = template_pieces(template)
    return [normalise(f"{exception}: {value.join(pieces)}").text for value in SAMPLE_VALUES]


def _check_set_headroom(catalog: Catalog) -> list[Problem]:
    """The signature set must compile in a fraction of the budget the matcher gives it; if not, the
    problem is reported at the costliest signature: a set at the edge breaks on the next entry."""
    try:
        SignatureSet(catalog, max_mem=SET_MAX_MEM // HEADROOM)
    except SignatureError as exc:
        costliest = max(
            (
                (entry, index, compile_signature(tolerate_wraps(pattern)).programsize)
                for entry in catalog
                for index, pattern in enumerate(entry.meta.signatures)
            ),
            key=lambda item: item[2],
        )
        entry, index, _size = costliest
        hint = "narrow the widest gaps, e.g. `(?:.*\\n){0,14}?` instead of `[\\s\\S]{0,1000}`"
        return [_problem(entry, f"signatures.{index}: {exc} ({hint})", "signatures", index)]
    return []


def _check_examples(catalog: Catalog) -> list[Problem]:
    """Every example must hit its own entry's signatures and rank that entry first."""
    problems = []
    matcher = Matcher(catalog)
    own: dict[str, list] = {}
    for signature in matcher.signatures.signatures:
        own.setdefault(signature.code, []).append(signature.compiled)
    for entry in catalog:
        for index, example in enumerate(entry.meta.examples):
            text = normalise(example).text
            if not any(pattern.search(text) for pattern in own.get(entry.code, ())):
                problems.append(
                    _problem(entry, f"examples.{index}: no signature of {entry.code} matches it", "examples", index)
                )
                continue
            matches = matcher.diagnose(example, limit=3).matches
            if matches and matches[0].code != entry.code:
                problems.append(
                    _problem(
                        entry, f"examples.{index}: ranks {matches[0].code} first, not {entry.code}", "examples", index
                    )
                )
    return problems


def _check_verl_names(entry: Entry, release: VerlRelease) -> list[Problem]:
    """Every config key and `python -m verl...` module the entry names must exist in the release."""
    problems = []
    roots = sorted(release.roots - PROSE_ROOTS, key=len, reverse=True)
    key_re = re.compile(
        r"(?<![\w./\-+])(\+{0,2})((?:" + "|".join(map(re.escape, roots)) + r")(?:\.[A-Za-z_]\w*)+)(?![\w(/-])"
    )
    invalid = set(entry.meta.invalid_keys)
    gone = set(entry.meta.invalid_modules)
    for key in invalid:
        if release.has_key(key):
            problems.append(
                _problem(entry, f"invalid_keys: {key} does exist in verl {release.version}", "invalid_keys")
            )
    for name in gone:
        if release.has_reference(name) or release.has_file(name):
            problems.append(
                _problem(entry, f"invalid_modules: {name} does exist in verl {release.version}", "invalid_modules")
            )
    for line_number, line, zh in _checked_lines(entry):
        path = entry.zh_path if zh else entry.path
        for match in key_re.finditer(line):
            plus, key = match.group(1), match.group(2)
            if plus or key in invalid or key.endswith(FILE_SUFFIXES) or release.has_key(key):
                continue
            problems.append(
                Problem(str(path), line_number, f"config key {key} does not exist in verl {release.version}")
            )
        for match in MODULE_RE.finditer(line):
            module = match.group(1)
            if not release.has_module(module):
                problems.append(
                    Problem(str(path), line_number, f"module {module} does not exist in verl {release.version}")
                )
        for match in REFERENCE_RE.finditer(line):
            name = match.group(0)
            if name not in gone and not release.has_reference(name):
                problems.append(
                    Problem(str(path), line_number, f"module {name} does not exist in verl {release.version}")
                )
        for match in FILE_RE.finditer(line):
            name = match.group(1)
            if name not in gone and not release.has_file(name):
                problems.append(
                    Problem(str(path), line_number, f"file {name} does not exist in verl {release.version}")
                )
    return problems


# `key=value`, `+key=value`, `++key=value` or `~key` in a fix: a Hydra override a user will type
OVERRIDE_RE = re.compile(r"(?<![\w./\-+~$])((?:\+\+|\+|~)?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(=[^\s`\\]*)?")


def _check_overrides(entry: Entry, release: VerlRelease, checker: OverrideChecker | None) -> list[Problem]:
    """Compose each fix's overrides with Hydra, as `python -m verl.trainer.main_ppo` would: the overrides
    of one code block together (a user copies a block whole), each inline one on its own."""
    if checker is None:
        return []
    problems = []
    invalid = set(entry.meta.invalid_keys)
    text = (entry.raw + entry.raw_zh).lower()
    for index, fix in enumerate(entry.meta.fixes):
        if fix.dead_end:
            continue
        line = entry.line_of("fixes", index, "body")
        for overrides in _override_sets(fix.body, release.roots, invalid):
            base, error = checker.check(overrides)
            if base is None:
                problems.append(
                    Problem(
                        str(entry.path),
                        line,
                        f"fixes[{index}] ({fix.id}): Hydra refuses {' '.join(overrides)}: {error}",
                    )
                )
            elif base.mention and base.mention not in text:
                problems.append(
                    Problem(
                        str(entry.path),
                        line,
                        f"fixes[{index}] ({fix.id}): {' '.join(overrides)} "
                        f"composes only with {base.label}; say that the fix needs it",
                    )
                )
    return problems


def _override_sets(body: str, roots: frozenset[str], invalid: set[str]) -> list[tuple[str, ...]]:
    """The overrides a fix writes in code, `key=value` (with + / ++ / ~) under a config root, by block."""
    sets = []
    for block, span in CODE_RE.findall(body):
        found = []
        for match in OVERRIDE_RE.finditer(block or span):
            key, value = match.group(1), match.group(2)
            bare = key.lstrip("+~")
            if bare.split(".", 1)[0] not in roots or bare in invalid or bare.endswith(FILE_SUFFIXES):
                continue
            if value is None and not key.startswith("~"):
                continue  # a key named in code, not an override
            found.append(key + (value or ""))
        if found:
            sets.append(tuple(dict.fromkeys(found)))
    return sets


def _checked_lines(entry: Entry):
    """Yield (line number, text, is_chinese) for every line that is advice rather than a quote."""
    skipped = _quoted_front_matter_lines(entry)
    yield from _scan(entry.raw, skipped, zh=False)
    yield from _scan(entry.raw_zh, set(), zh=True)


def _scan(text: str, skipped: set[int], *, zh: bool):
    in_quote = False
    for number, line in enumerate(text.split("\n"), start=1):
        heading = HEADING_RE.match(line)
        if heading:
            in_quote = heading.group(1) in QUOTED_SECTIONS
        if number in skipped or in_quote:
            continue
        yield number, line, zh


def _quoted_front_matter_lines(entry: Entry) -> set[int]:
    tops = sorted((line, key[0]) for key, line in entry.document.lines.items() if len(key) == 1)
    end_of_front_matter = entry.document.body_line - 1
    skipped: set[int] = set()
    for position, (line, key) in enumerate(tops):
        if key in QUOTED_FIELDS:
            stop = tops[position + 1][0] if position + 1 < len(tops) else end_of_front_matter
            skipped.update(range(line, stop))
    return skipped
