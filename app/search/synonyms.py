"""The words people use for a symptom, English and Chinese, grouped so that any one finds the others.

Groups live in `synonyms.yaml` beside this module: `groups` maps a group name to its words and phrases,
`distinct` lists pairs of words that must never end up in one group (a hang is not a crash, host RAM is not
GPU memory). A word in two groups would make every word of both equal, so `kb check` refuses that too.
`light` lists words and groups that say little about which failure is meant (question words, 'error'):
they count at a fraction of a plain word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

DEFAULT_PATH = Path(__file__).with_name("synonyms.yaml")
CJK_WORD_RE = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+$")


@dataclass(frozen=True)
class Synonyms:
    """Group name -> its words; the reverse index finds a word's group."""

    groups: dict[str, tuple[str, ...]]
    # groups and words that say little about which failure is meant ('error', 'how to', 'does')
    light: frozenset[str] = frozenset()

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> Synonyms:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return cls(
            {name: tuple(_normal(word) for word in words) for name, words in (data.get("groups") or {}).items()},
            frozenset(_normal(word) for word in data.get("light") or []),
        )

    def chinese_words(self) -> list[tuple[str, str]]:
        """(word, group) for every Chinese word, longest first, for spotting inside a run of characters."""
        pairs = [(word, name) for name, words in self.groups.items() for word in words if CJK_WORD_RE.match(word)]
        return sorted(pairs, key=lambda pair: -len(pair[0]))

    def other_words(self) -> list[tuple[str, str]]:
        """(word or phrase, group) for every word that is not all Chinese characters."""
        return [(word, name) for name, words in self.groups.items() for word in words if not CJK_WORD_RE.match(word)]


def _normal(word: str) -> str:
    return " ".join(str(word).lower().split())


def problems(path: Path = DEFAULT_PATH) -> list[tuple[int, str]]:
    """(line, message) for every way the file would make unrelated words equal or cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text) or {}
    except (OSError, yaml.YAMLError) as exc:
        return [(1, f"cannot read the synonym list: {exc}")]
    groups = data.get("groups") or {}
    if not isinstance(groups, dict) or not all(isinstance(words, list) for words in groups.values()):
        return [(1, "groups must map each group name to a list of words")]
    found: list[tuple[int, str]] = []
    owner: dict[str, str] = {}
    for name, words in groups.items():
        if len({_normal(word) for word in words}) < 2:
            found.append((_line_of(text, f"{name}:"), f"group {name!r} needs at least two different words"))
        for word in words:
            normal = _normal(word)
            if len(normal) < 2:
                found.append((_line_of(text, f"{name}:"), f"group {name!r}: {word!r} is too short to be a word"))
            elif owner.get(normal, name) != name:
                found.append(
                    (
                        _line_of(text, f"{name}:"),
                        f"{word!r} is in groups {owner[normal]!r} and {name!r}: "
                        "that would make every word of both equal",
                    )
                )
            owner.setdefault(normal, name)
    for pair in data.get("distinct") or []:
        if not isinstance(pair, list) or len(pair) != 2:
            found.append((_line_of(text, "distinct:"), f"distinct {pair!r} must be a pair of words"))
            continue
        first, second = (_normal(word) for word in pair)
        if first in owner and owner[first] == owner.get(second):
            found.append(
                (
                    _line_of(text, f"{owner[first]}:"),
                    f"group {owner[first]!r} makes {pair[0]!r} and "
                    f"{pair[1]!r} equal, which the distinct list keeps apart",
                )
            )
    return found + _light_problems(text, data.get("light") or [], owner)


def _light_problems(text: str, light, owner: dict[str, str]) -> list[tuple[int, str]]:
    """A light word inside a group that is not light would weigh fully: its group decides its weight."""
    if not isinstance(light, list):
        return [(_line_of(text, "light:"), "light must be a list of words and group names")]
    names = {_normal(word) for word in light}
    return [
        (
            _line_of(text, "light:"),
            f"{word!r} is light but its group {owner[_normal(word)]!r} is not: "
            "make the whole group light or take the word out of it",
        )
        for word in light
        if owner.get(_normal(word), _normal(word)) not in names
    ]


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(needle):
            return number
    return 1
