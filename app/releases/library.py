"""Facts about every verl release on the package registry: declared requirements and source layout.

Read from the wheels themselves (``pip download --no-deps``, opened as zip, never installed), cached per
release in ``<verl_dir>/facts/``. `kb index` builds what is missing; with the registry out of reach
everything else still works and the findings say the facts are missing. verl's code is never committed:
only line numbers, function spans and the text of `raise`/`assert` statements are kept.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

from app.releases.facts import FACTS_VERSION, RaiseSite, ReleaseFacts
from app.releases.wheel_reader import read_wheel_facts

log = logging.getLogger(__name__)
VERSIONS_RE = re.compile(r"Available versions:\s*(.+)")
MISSING = "the release facts are missing: run `kb index` where PyPI can be reached"


def registry_versions() -> list[str]:
    """Every verl release the package registry lists, oldest first."""
    command = [sys.executable, "-m", "pip", "index", "versions", "verl", "--disable-pip-version-check"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    found = VERSIONS_RE.search(result.stdout)
    if result.returncode != 0 or not found:
        raise OSError(f"the registry did not list verl's releases: {result.stderr.strip()[-300:]}")
    versions = [item.strip() for item in found.group(1).split(",") if item.strip()]
    return sorted(versions, key=_sort_key)


def _sort_key(version: str):
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def facts_dir(verl_dir: Path) -> Path:
    return verl_dir / "facts"


def _requires_file(folder: Path, version: str) -> Path:
    return folder / f"{version}.requires.json"


def _layout_file(folder: Path, version: str) -> Path:
    return folder / f"{version}.layout.json.gz"


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    temporary.replace(path)


def build_all(verl_dir: Path, progress=None) -> tuple[list[str], list[str]]:
    """Cache the facts of every release not cached yet; return (built or present, missing with reason)."""
    folder = facts_dir(verl_dir)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        versions = registry_versions()
    except (OSError, subprocess.SubprocessError) as exc:
        present = sorted(path.name[: -len(".requires.json")] for path in folder.glob("*.requires.json"))
        return present, [f"the registry could not be reached ({exc})"]
    ready, missing = [], []
    for version in versions:
        target = _requires_file(folder, version)
        if target.exists() and json.loads(target.read_text()).get("facts_version") == FACTS_VERSION:
            ready.append(version)
            continue
        try:
            wheel = _download(verl_dir / "wheels", version)
            facts = read_wheel_facts(wheel, version)
        except (OSError, subprocess.SubprocessError, zipfile.BadZipFile) as exc:
            missing.append(f"{version}: {exc}")
            continue
        # the layout first: a requires file is the mark of a complete release
        layout = json.dumps(facts.layout.as_json(), separators=(",", ":"))
        _write(_layout_file(folder, version), gzip.compress(layout.encode()))
        requires = {"facts_version": FACTS_VERSION, "version": version, "requires": facts.requires}
        _write(target, json.dumps(requires).encode())
        ready.append(version)
        if progress:
            progress(version)
    return ready, missing


def _download(folder: Path, version: str) -> Path:
    found = sorted(folder.glob(f"verl-{version}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        "--disable-pip-version-check",
        f"verl=={version}",
        "-d",
        str(folder),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    found = sorted(folder.glob(f"verl-{version}-*.whl"))
    if result.returncode != 0 or not found:
        raise OSError(f"could not download verl=={version}: {result.stderr.strip()[-300:]}")
    return found[0]


class ReleaseLibrary:
    """The cached facts of every release, loaded once; empty (with ``missing`` set) when none were built."""

    def __init__(self, releases: list[ReleaseFacts], missing: str | None = None):
        self.releases = sorted(releases, key=lambda facts: facts.sorted_version)
        self.by_version = {facts.version: facts for facts in self.releases}
        self.missing = missing

    @classmethod
    def load(cls, verl_dir: Path) -> ReleaseLibrary:
        """Read every release's requirements; each layout is read when first needed."""
        folder = facts_dir(verl_dir)
        releases = []
        for path in sorted(folder.glob("*.requires.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                log.warning("release facts %s unreadable: %s", path, exc)
                continue
            version = data.get("version", "")
            layout = _layout_file(folder, version)
            if data.get("facts_version") == FACTS_VERSION and layout.exists():
                wheel = next(iter(sorted((verl_dir / "wheels").glob(f"verl-{version}-*.whl"))), None)
                releases.append(ReleaseFacts(version, data["requires"], layout, wheel))
        return cls(releases, None if releases else MISSING)

    def get(self, version: str) -> ReleaseFacts | None:
        return self.by_version.get(version) or self.by_version.get(_release_of(version, self.by_version))

    def fitting_frame(self, path: str, line: int, function: str, first: list[ReleaseFacts] = ()) -> list[ReleaseFacts]:
        """The releases whose code at ``path:line`` is in ``function``: those of ``first`` (the user's, as far as
        known) in their order, then every other release, newest first (a checkout between releases)."""
        others = [facts for facts in reversed(self.releases) if facts not in first]
        return [facts for facts in [*first, *others] if facts.fits(path, line, function)]

    def raise_site(self, path: str, line: int, function: str) -> tuple[ReleaseFacts, RaiseSite] | None:
        """The `raise`/`assert` statement at ``path:line`` in the newest release whose code there is in
        ``function`` and has one there, with that release; None when none has."""
        return first_raise_site(self.fitting_frame(path, line, function), path, line)

    def fitting(self, frames: list[tuple[str, int, str]]) -> list[ReleaseFacts]:
        """Releases whose code fits the most verl frames (path, line, function) of files verl ships; a frame
        a user patched or a fork moved does not rule out the release the others fit."""
        shipped = [frame for frame in frames if any(frame[0] in facts.files for facts in self.releases)]
        scores = {facts.version: sum(facts.fits(*frame) for frame in shipped) for facts in self.releases}
        best = max(scores.values(), default=0)
        return [facts for facts in self.releases if best and scores[facts.version] == best]


def first_raise_site(releases: list[ReleaseFacts], path: str, line: int) -> tuple[ReleaseFacts, RaiseSite] | None:
    """The first of ``releases`` whose line ``path:line`` is a `raise` or an `assert`, with that statement."""
    for facts in releases:
        site = facts.raise_at(path, line)
        if site is not None:
            return facts, site
    return None


def _release_of(version: str, known: dict) -> str | None:
    """`0.5` -> `0.5.0`; `0.3.0` -> `0.3.0.post1`: the newest release that starts with what the paste says."""
    candidates = [name for name in known if name == version or name.startswith(version + ".")]
    return max(candidates, key=_sort_key) if candidates else None
