"""Every setting is documented and dangerous values are refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.settings import ROOT, Settings


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_is_documented_in_the_readme(name):
    readme = (ROOT / "README.md").read_text()
    assert f"`KB_{name.upper()}`" in readme
    assert Settings.model_fields[name].description


def test_secret_is_generated_once_and_kept(tmp_path):
    settings = Settings(data_dir=tmp_path)
    first = settings.resolved_secret()
    assert len(first) >= 32 and first == Settings(data_dir=tmp_path).resolved_secret()
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "field,value",
    [
        ("cors_origins", "*"),
        ("vote_rate_limit", "lots"),
        ("secret_key", "short"),
        ("port", 0),
    ],
)
def test_dangerous_values_are_refused(field, value):
    with pytest.raises(ValidationError):
        Settings(**{field: value})


def test_cors_origins_accept_a_comma_list(monkeypatch):
    monkeypatch.setenv("KB_CORS_ORIGINS", "https://wiki.example.org, https://chat.example.org")
    assert Settings().cors_origins == ["https://wiki.example.org", "https://chat.example.org"]
