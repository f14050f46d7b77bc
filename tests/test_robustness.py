"""Every entry's examples still rank their entry first, confidently, when wrapped in what real pastes carry.

The checker proves each example as written; users paste the same text behind Ray's worker prefixes,
rank prefixes, colour codes a web page stripped of their ESC byte, an issue comment's quote marks,
Markdown fences with escaped underscores, Windows line ends, after a long stretch of training log, or
copied from a terminal that wrapped every long line at its width.
"""

from __future__ import annotations

import pytest

from app.entries import load_catalog_strict
from app.matcher import Matcher
from app.settings import ROOT

TRAINING_LOG = [
    f"(TaskRunner pid=2210) step:{step} - actor/pg_loss:0.{step % 9}1 - actor/grad_norm:0.18{step % 7} "
    f"- response_length/mean:320.0 - timing_s/gen:19.{step}"
    for step in range(150)
]


def hard_wrapped(lines: list[str], width: int) -> list[str]:
    """What a terminal that wraps at ``width`` columns hands over when its text is copied."""
    return [line[start:start + width] for line in lines for start in range(0, max(len(line), 1), width)]


DISGUISES = {
    "ray worker prefix": lambda lines: [f"(WorkerDict pid=48211, ip=10.0.3.7) {line}" for line in lines],
    "rank prefix": lambda lines: [f"[rank3]: {line}" for line in lines],
    "colour codes without ESC": lambda lines: [f"[36m(TaskRunner pid=2396241)[0m {line}" for line in lines],
    "issue comment quote": lambda lines: [f"> {line}" for line in lines],
    "markdown fence and escapes": lambda lines: ["```", *(line.replace("_", "\\_") for line in lines), "```"],
    "after a long training log": lambda lines: [*TRAINING_LOG, *lines],
    "hard-wrapped at 120 columns": lambda lines: hard_wrapped(lines, 120),
    "ray worker prefix, hard-wrapped at 100 columns": lambda lines: hard_wrapped(
        [f"(WorkerDict pid=48211, ip=10.0.3.7) {line}" for line in lines], 100),
}


@pytest.fixture(scope="module")
def catalog_and_matcher():
    catalog = load_catalog_strict(ROOT / "content" / "errors")
    return catalog, Matcher(catalog)


@pytest.mark.parametrize("disguise", DISGUISES)
def test_examples_survive_the_noise_of_real_pastes(catalog_and_matcher, disguise):
    catalog, matcher = catalog_and_matcher
    misses = []
    for entry in catalog:
        for example in entry.meta.examples:
            text = "\n".join(DISGUISES[disguise](example.rstrip("\n").split("\n")))
            top = matcher.diagnose(text).matches[:1]
            if not top or top[0].code != entry.code or top[0].confidence not in ("high", "medium"):
                misses.append((entry.code, top[0].code if top else None, example[:80]))
    assert not misses, misses


def test_windows_line_ends_change_nothing(catalog_and_matcher):
    catalog, matcher = catalog_and_matcher
    for entry in catalog:
        for example in entry.meta.examples:
            unix, windows = matcher.diagnose(example), matcher.diagnose(example.replace("\n", "\r\n"))
            assert [m.code for m in unix.matches] == [m.code for m in windows.matches], entry.code
