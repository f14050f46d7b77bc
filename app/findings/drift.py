"""Version drift: a package version in the paste outside what the user's verl release declares."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from app.matcher.versions import FoundVersion, canonical
from app.releases import ReleaseFacts

# An extra's pins count only when the paste shows the stack it installs: sglang's `torch==2.6.0` says
# nothing about a vLLM user's torch.
EXTRA_IN_USE = {
    "vllm": ("vllm",),
    "sglang": ("sglang",),
    "mcore": ("megatron-core", "mbridge"),
    "megatron": ("megatron-core", "mbridge"),
    "trtllm": ("tensorrt-llm",),
    "gpu": ("flash-attn", "liger-kernel"),
}


def drift_findings(
    found: list[FoundVersion],
    releases: list[ReleaseFacts],
    source: str,
    every_release: list[ReleaseFacts],
    entries: dict[str, str],
) -> list[dict]:
    """Findings for versions that every candidate release rules out (none when any release admits them),
    each with the releases (of ``every_release``) that declare a range admitting the version, and the
    matched entry about that package's drift (``entries``: package -> code), if any."""
    if not releases:
        return []
    present = {item.package for item in found}
    findings = []
    for item in found:
        if item.package == "verl":
            continue
        try:
            version = Version(item.version)
        except InvalidVersion:
            continue
        verdicts = [_supported(facts, item.package, version, present) for facts in releases]
        if any(verdict is None for verdict in verdicts):
            continue  # some candidate release admits it, or does not pin it at all
        findings.append(
            {
                "kind": "version_drift",
                "package": item.package,
                "found": item.version,
                "supported": verdicts[-1],
                "verl_version": _span(releases),
                "verl_version_source": source,
                "admitted_by": _span(_admitting(every_release, item.package, version, present), every_release) or None,
                "entry": entries.get(item.package),
                "evidence": {"line": item.line, "text": item.text},
            }
        )
    return findings


def _admitting(releases: list[ReleaseFacts], package: str, version: Version, present: set[str]) -> list[ReleaseFacts]:
    """Releases that pin ``package`` and whose ranges admit ``version``: the ones to install instead."""
    return [
        facts
        for facts in releases
        if _pins(facts, package, present) and _supported(facts, package, version, present) is None
    ]


def _pins(facts: ReleaseFacts, package: str, present: set[str]) -> bool:
    return any(True for _ in _ranges(facts, package, present))


def _supported(facts: ReleaseFacts, package: str, version: Version, present: set[str]) -> str | None:
    """The first declared range that rules ``version`` out (with the extra it comes from), or None."""
    for requirement, extra in _ranges(facts, package, present):
        if not requirement.specifier.contains(version, prereleases=True):
            return f"{requirement.specifier}" + (f" (extra [{extra}])" if extra else "")
    return None


def _ranges(facts: ReleaseFacts, package: str, present: set[str]):
    """The release's requirements on ``package`` that carry a range and apply: base ones, and those of an
    extra whose stack the paste shows."""
    for requirement, extra in facts.parsed_requirements:
        if canonical(requirement.name) != package or not str(requirement.specifier):
            continue
        if extra and not any(name in present for name in EXTRA_IN_USE.get(extra, ())):
            continue
        yield requirement, extra


def _span(releases: list[ReleaseFacts], every_release: list[ReleaseFacts] | None = None) -> str:
    """`0.5.0`, `0.5.0–0.6.1`, or runs joined by commas when ``releases`` skip some of ``every_release``."""
    if not releases:
        return ""
    order = every_release or releases
    position = {facts.version: number for number, facts in enumerate(order)}
    runs: list[list[ReleaseFacts]] = []
    for facts in releases:
        if runs and position.get(facts.version, -9) == position.get(runs[-1][-1].version, -9) + 1:
            runs[-1].append(facts)
        else:
            runs.append([facts])
    return ", ".join(run[0].version if len(run) == 1 else f"{run[0].version}–{run[-1].version}" for run in runs)
