"""Findings beside the matches, for pastes no entry fully explains: version drift, the verl statement
that raised, and what a truncated paste lacks. Read from the paste and the release facts only."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from app.entries import Catalog
from app.findings.drift import drift_findings
from app.findings.raise_site import Frame, raise_site_finding, root_frames, verl_frames
from app.findings.truncated import truncated_findings
from app.matcher import CONFIDENT, Diagnosis
from app.matcher.versions import FoundVersion
from app.releases import ReleaseFacts, ReleaseLibrary
from app.settings import Settings

MAX_RAISE_SITES = 10  # a long log can hold many tracebacks; the last ones are the likeliest root causes


class Findings:
    """Built once per process from the release facts; ``find`` is pure and thread-safe."""

    def __init__(self, library: ReleaseLibrary, pinned: str):
        self.library = library
        self.pinned = pinned

    @classmethod
    def from_settings(cls, settings: Settings) -> Findings:
        """The findings of the cached release facts, checked against the pinned release when a paste says none."""
        return cls(ReleaseLibrary.load(settings.verl_dir), settings.verl_version)

    def warm(self) -> None:
        """Read what a paste without a verl frame needs: the pinned release's layout and message templates."""
        pinned = self.library.get(self.pinned)
        if pinned is not None:
            pinned.message_templates  # noqa: B018 (a cached property: reading it builds it)

    def raised_statement(self, printed_path: str, line: int, function: str) -> str | None:
        """The verl statement a frame line names (`File ".../verl/trainer/x.py", line 12, in f`), from the
        release facts: what the matcher rebuilds a cut traceback's message from."""
        path = Frame(printed_path, line, function).verl_path
        found = self.library.raise_site(path, line, function) if path else None
        return found[1].statement if found else None

    @property
    def missing(self) -> str | None:
        return self.library.missing

    def find(self, diagnosis: Diagnosis, catalog: Catalog | None = None) -> list[dict]:
        paste = diagnosis.paste
        if paste is None:
            return []
        findings = truncated_findings(diagnosis.blocks)
        if not self.library.releases:
            return findings
        found = diagnosis.environment.found  # read once, by the matcher
        frames = [root_frames(block, paste.lines) if block.kind == "traceback" else [] for block in diagnosis.blocks]
        releases, source = self.releases_for(found, [frame for each in frames for frame in verl_frames(each)])
        findings += drift_findings(found, releases, source, self.library.releases, _drift_entries(diagnosis, catalog))
        sites = []
        for number in range(len(diagnosis.blocks) - 1, -1, -1):
            site = raise_site_finding(
                number, diagnosis.blocks[number], frames[number], paste.lines, releases, self.library
            )
            if site is not None:
                site["verl_version_source"] = source
                sites.append(site)
            if len(sites) >= MAX_RAISE_SITES:
                break
        return findings + sites[::-1]

    def releases_for(
        self, found: list[FoundVersion], frames: list[tuple[str, int, str]]
    ) -> tuple[list[ReleaseFacts], str]:
        """The user's verl release: stated in the paste, else those whose layout fits the traceback, else pinned."""
        stated = next((item.version for item in found if item.package == "verl"), None)
        if stated:
            facts = self.library.get(stated)
            if facts is not None:
                return [facts], "paste"
            between = self._around(stated)
            if between:
                return between, "paste"
        fitting = self.library.fitting(frames)
        if fitting:
            return fitting[::-1], "traceback"  # newest first: the likeliest, and the one a raise site names
        pinned = self.library.get(self.pinned)
        return ([pinned], "pinned") if pinned else ([], "pinned")

    def _around(self, stated: str) -> list[ReleaseFacts]:
        """A version between releases (`0.2.0.dev0`, a checkout): the release before it and the one after,
        since its requirements may be either's; drift must be drift against both."""
        try:
            version = Version(stated)
        except InvalidVersion:
            return []
        older = [facts for facts in self.library.releases if facts.sorted_version < version]
        newer = [facts for facts in self.library.releases if facts.sorted_version > version]
        return older[-1:] + newer[:1]


def _drift_entries(diagnosis: Diagnosis, catalog: Catalog | None) -> dict[str, str]:
    """Package -> the first confident match whose entry is about that package's drift."""
    entries: dict[str, str] = {}
    for match in diagnosis.matches:
        entry = catalog.get(match.code) if catalog is not None and match.confidence in CONFIDENT else None
        for package in entry.meta.drift if entry else ():
            entries.setdefault(package, match.code)
    return entries
