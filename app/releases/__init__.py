"""Facts about every verl release on the package registry: what each declares and how its code is laid out."""

from app.releases.facts import RaiseSite, ReleaseFacts
from app.releases.library import ReleaseLibrary, build_all, facts_dir, first_raise_site
from app.releases.wheel_reader import read_wheel_facts

__all__ = [
    "RaiseSite",
    "ReleaseFacts",
    "ReleaseLibrary",
    "build_all",
    "facts_dir",
    "first_raise_site",
    "read_wheel_facts",
]
