"""A traceback cut right after the statement that raised: its message rebuilt from that statement."""

from __future__ import annotations

import pytest

from app.entries import load_catalog_strict
from app.matcher import Matcher
from app.matcher.raised import rebuilt_message
from app.settings import ROOT

CUT_ASSERT = """\
Traceback (most recent call last):
  File "/workspace/verl/verl/trainer/main_ppo.py", line 64, in main
    run_ppo(config)
  File "/workspace/verl/verl/trainer/ppo/ray_trainer.py", line 479, in __init__
    assert config.algorithm.adv_estimator in [AdvantageEstimator.GRPO], "only GRPO is tested for multi-turn with tool"
"""


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return Matcher(load_catalog_strict(ROOT / "content" / "errors"))


@pytest.mark.parametrize(
    "line,message",
    [
        (
            '    raise NotImplementedError(f"Reward function is not implemented for {data_source=}")',
            "NotImplementedError: Reward function is not implemented for data_source=0",
        ),
        ('    assert n % tp == 0, f"{n} is not divisible by {tp}"', "AssertionError: 0 is not divisible by 0"),
        ("    assert ok, (\"first half \" 'second half')", "AssertionError: first half second half"),
        (
            '        raise ValueError("max_model_len (%d) is too small" % n)',
            "ValueError: max_model_len (0) is too small",
        ),
        ("    raise errors.ConfigError(f'{key!r} missing')", "ConfigError: 0 missing"),
        # no message on the line: the first line of a multi-line statement, a variable, or no raise at all
        ("    raise ValueError(", None),
        ("    raise ValueError(msg)", None),
        ("    raise value.as_instanceof_cause()", None),
        ("    x = compute(batch)", None),
    ],
)
def test_the_message_is_read_from_the_statement(line, message):
    assert rebuilt_message(line) == message


def test_a_traceback_cut_after_its_raise_is_answered_but_not_with_certainty(matcher):
    # AGENT-010's signature is the message; the paste stops at the assert that would have printed it
    cut = matcher.diagnose(CUT_ASSERT).matches[0]
    assert (cut.code, cut.confidence) == ("AGENT-010", "medium")
    assert cut.matched_line.startswith("assert config.algorithm.adv_estimator")
    whole = matcher.diagnose(CUT_ASSERT + "AssertionError: only GRPO is tested for multi-turn with tool\n")
    assert (whole.matches[0].code, whole.matches[0].confidence) == ("AGENT-010", "high")


def test_a_cut_traceback_whose_last_line_raises_nothing_stays_unanswered(matcher):
    cut = CUT_ASSERT.replace('assert config.algorithm.adv_estimator in [AdvantageEstimator.GRPO], "only', "x = ('only")
    assert not [match for match in matcher.diagnose(cut).matches if match.confidence != "low"]


def test_a_statement_printed_over_several_lines_gives_its_message(matcher):
    # Python 3.13 prints a multi-line statement whole; the message is on its second line
    printed = CUT_ASSERT.replace(
        ', "only GRPO is tested for multi-turn with tool"',
        ', (\n        "only GRPO is tested for multi-turn with tool"\n    )',
    )
    assert printed.count("\n") == CUT_ASSERT.count("\n") + 2
    top = matcher.diagnose(printed).matches[0]
    assert (top.code, top.confidence) == ("AGENT-010", "medium")
    assert top.matched_line.startswith("assert config.algorithm.adv_estimator")
