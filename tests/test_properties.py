"""Property tests: the normaliser and the block parser take any text or bytes without raising."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.matcher.blocks import split_blocks
from app.matcher.normalise import normalise

LOG_PIECES = st.sampled_from(
    [
        "Traceback (most recent call last):\n",
        '  File "/verl/x.py", line 3, in f\n',
        "    x()\n",
        "ValueError: boom\n",
        "\nDuring handling of the above exception, another exception occurred:\n\n",
        "ray.exceptions.RayTaskError(ValueError): ray::W.f() (pid=1)\n",
        "(WorkerDict pid=1, ip=1.2.3.4) ",
        "[rank3]:",
        "\x1b[31m",
        "\x1b[0m",
        "\r\n",
        "```\n",
        "&lt;",
        "\\_",
        "\x00",
        "terminate called after throwing\n",
        "hydra.errors.InstantiationException: Error in call to target 'x':\n",
        "AssertionError('y')\n",
        "\t",
        "é漢",
    ]
)
PASTES = st.one_of(st.text(max_size=3000), st.lists(LOG_PIECES, max_size=200).map("".join))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PASTES)
def test_any_text_is_normalised_and_split(text):
    paste = normalise(text)
    assert len(paste.lines) == len(paste.offsets)
    assert paste.text == "\n".join(paste.lines)
    for block in split_blocks(paste):
        assert 0 <= block.start <= block.end < len(paste.lines)
        assert block.start <= block.message[0] <= block.message[1] <= block.end or block.truncated


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_are_normalised_and_split(data):
    paste = normalise(data)
    split_blocks(paste)
    assert "\x00" not in paste.text
