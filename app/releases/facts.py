"""What one verl release declares (its requirements) and how its code is laid out (functions, raises)."""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

FACTS_VERSION = 4  # 2: raises name their exception; 3: every file's line count; 4: layout in its own file


@dataclass(frozen=True)
class RaiseSite:
    """One `raise` or `assert` in a release: where it is and what it says."""

    path: str
    line: int
    end_line: int
    function: str
    exception: str  # the type raised (`AssertionError` for an assert), "" when not a plain name
    statement: str  # the statement's first lines, as written
    condition: str  # the `if` test it sits under (for a raise), or "" when none
    template: str  # a regex of its message (f-string holes as wildcards), "" when it has no literal text


@dataclass
class MessageTemplate:
    """A raise site's message as a regex, with its longest fixed piece to look for first; the regex is
    compiled the first time a message holds that piece (compiling all of a release's takes seconds)."""

    site: RaiseSite
    anchor: str
    fixed: int  # characters of fixed text: the more, the more specific

    @cached_property
    def pattern(self) -> re.Pattern:
        return re.compile(self.site.template)


@dataclass
class Layout:
    """Where a release's functions and raise statements are, file by file."""

    functions: dict[str, list[tuple[str, int, int]]]  # path -> (qualified name, first line, last line)
    raises: dict[str, list[RaiseSite]]  # path -> raise sites by line
    files: dict[str, int]  # every verl/**.py -> its number of lines

    def as_json(self) -> dict:
        return {
            "functions": {path: [list(span) for span in spans] for path, spans in self.functions.items()},
            "raises": {
                path: [
                    [s.line, s.end_line, s.function, s.exception, s.statement, s.condition, s.template] for s in sites
                ]
                for path, sites in self.raises.items()
            },
            "files": self.files,
        }

    @classmethod
    def from_json(cls, data: dict) -> Layout:
        return cls(
            {path: [tuple(span) for span in spans] for path, spans in data["functions"].items()},
            {path: [RaiseSite(path, *site) for site in sites] for path, sites in data["raises"].items()},
            data["files"],
        )

    @classmethod
    def read(cls, path: Path) -> Layout:
        return cls.from_json(json.loads(gzip.decompress(path.read_bytes())))


@dataclass
class ReleaseFacts:
    """Requirements and source layout of one release. The layout is read from its file on first use:
    a paste with no verl frame never needs it, and `kb match` starts faster without sixteen of them."""

    version: str
    requires: list[str]  # Requires-Dist lines, markers and extras included
    layout_source: Layout | Path
    wheel: Path | None = None  # the cached wheel, for the line a frame names when it is no raise

    @cached_property
    def layout(self) -> Layout:
        return self.layout_source if isinstance(self.layout_source, Layout) else Layout.read(self.layout_source)

    @property
    def functions(self) -> dict[str, list[tuple[str, int, int]]]:
        return self.layout.functions

    @property
    def raises(self) -> dict[str, list[RaiseSite]]:
        return self.layout.raises

    @property
    def files(self) -> dict[str, int]:
        return self.layout.files

    def source_line(self, path: str, line: int) -> str | None:
        """Line ``line`` of ``path`` as the wheel has it (read from the zip, never extracted)."""
        if self.wheel is None or line > self.files.get(path, 0):
            return None
        lines = _wheel_file(self.wheel, path)
        return lines[line - 1] if 0 < line <= len(lines) else None

    @cached_property
    def sorted_version(self) -> Version:
        return Version(self.version)

    @cached_property
    def parsed_requirements(self) -> list[tuple[Requirement, str]]:
        """Each declared requirement with the extra it belongs to ("" for the base install)."""
        found = []
        for line in self.requires:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            extra = re.search(r'extra\s*==\s*"([^"]+)"', str(requirement.marker or ""))
            found.append((requirement, extra.group(1) if extra else ""))
        return found

    def function_at(self, path: str, line: int) -> str | None:
        """The innermost function whose span holds ``line`` in ``path``, or None."""
        best = None
        for name, first, last in self.functions.get(path, ()):
            if first <= line <= last and (best is None or first >= best[1]):
                best = (name, first)
        return best[0] if best else None

    def fits(self, path: str, line: int, function: str) -> bool:
        """This release's code at ``path:line`` is in a function named ``function`` (`<module>`: in none;
        a comprehension or lambda: anywhere in the file)."""
        if line > self.files.get(path, 0):
            return False
        found = self.function_at(path, line)
        if function == "<module>":
            return found is None
        if function.startswith("<"):
            return True
        return found is not None and found.rsplit(".", 1)[-1] == function

    def raise_at(self, path: str, line: int) -> RaiseSite | None:
        for site in self.raises.get(path, ()):
            if site.line <= line <= site.end_line:
                return site
        return None

    @cached_property
    def message_templates(self) -> list[MessageTemplate]:
        templates = []
        for sites in self.raises.values():
            for site in sites:
                if site.template:
                    pieces = template_pieces(site.template)
                    templates.append(MessageTemplate(site, max(pieces, key=len), sum(map(len, pieces))))
        return templates


def template_pieces(template: str) -> list[str]:
    """A raise site's message regex as its fixed texts, in order (what lies between its `.*?` holes)."""
    return [re.sub(r"\\(.)", r"\1", piece) for piece in template.split(".*?")]


@lru_cache(maxsize=64)
def _wheel_file(wheel: Path, path: str) -> list[str]:
    try:
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(path).decode("utf-8", "replace").splitlines()
    except (OSError, KeyError, zipfile.BadZipFile):
        return []
