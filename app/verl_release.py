"""What exists in the pinned verl release: its config keys, its modules and the messages it raises.

The wheel is fetched with ``pip download --no-deps`` into the data dir and read as a zip, never
installed: it ships top-level ``tests`` and ``scripts`` packages that would shadow ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from app.hydra_config import BASES, compose, extract_config, keys_of
from app.releases.wheel_reader import read_wheel_facts

CACHE_VERSION = 4  # 3: keys composed by Hydra itself; 4: the messages it raises


class ReleaseUnavailable(Exception):
    """The pinned wheel could not be fetched or read."""


@dataclass(frozen=True)
class VerlRelease:
    """Config key paths (every node, not only leaves) and importable modules of one release."""

    version: str
    keys: frozenset[str]
    modules: frozenset[str]
    files: frozenset[str] = frozenset()
    config_dir: Path | None = None  # the release's verl/trainer/config, copied out for Hydra
    # every raise/assert with literal text: ("verl/x.py:12", exception type, message regex with `.*?` holes)
    raised: tuple[tuple[str, str, str], ...] = ()

    @property
    def roots(self) -> frozenset[str]:
        return frozenset(key.split(".", 1)[0] for key in self.keys)

    def has_key(self, key: str) -> bool:
        """True when ``key`` is a node of the composed config (a leaf or a group)."""
        return key in self.keys

    def has_module(self, module: str) -> bool:
        return module in self.modules

    def has_reference(self, dotted: str) -> bool:
        """`verl.a.b` or `verl.a.b.Name`: a module, or one name right after a module."""
        parts = dotted.split(".")
        return any(".".join(parts[:size]) in self.modules for size in (len(parts), len(parts) - 1) if size >= 1)

    def has_file(self, path: str) -> bool:
        return path in self.files


def load_release(data_dir: Path, version: str) -> VerlRelease:
    """Return the release facts, from the cache or from the wheel (downloading it once)."""
    folder = data_dir / "verl"
    cache = folder / f"verl-{version}.facts.json"
    config_dir = folder / f"config-{version}"
    if cache.exists() and (config_dir / ".complete").exists():
        facts = json.loads(cache.read_text())
        if facts.get("cache_version") == CACHE_VERSION:
            return VerlRelease(
                version,
                frozenset(facts["keys"]),
                frozenset(facts["modules"]),
                frozenset(facts["files"]),
                config_dir,
                tuple(tuple(site) for site in facts["raised"]),
            )
    release = read_wheel(_wheel(folder, version), version, config_dir)
    cache.write_text(
        json.dumps(
            {
                "cache_version": CACHE_VERSION,
                "keys": sorted(release.keys),
                "modules": sorted(release.modules),
                "files": sorted(release.files),
                "raised": list(release.raised),
            }
        )
    )
    return release


def _wheel(folder: Path, version: str) -> Path:
    found = sorted(folder.glob(f"verl-{version}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", f"verl=={version}", "-d", str(folder)]
    result = subprocess.run(command, capture_output=True, text=True)
    found = sorted(folder.glob(f"verl-{version}-*.whl"))
    if result.returncode != 0 or not found:
        raise ReleaseUnavailable(f"could not download verl=={version}: {result.stderr.strip()[-400:]}")
    return found[0]


def read_wheel(wheel: Path, version: str, config_dir: Path) -> VerlRelease:
    """Read config keys (composed by Hydra) and module names out of a verl wheel."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    extract_config(wheel, config_dir)
    keys: set[str] = set()
    for base in BASES:
        config = compose(config_dir, base)
        if config is not None:
            keys |= keys_of(config)
    files = frozenset(name for name in names if name.startswith("verl/"))
    raised = tuple(
        (f"{site.path}:{site.line}", site.exception, site.template)
        for sites in read_wheel_facts(wheel, version).raises.values()
        for site in sites
        if site.template and site.exception
    )
    return VerlRelease(version, frozenset(keys), frozenset(_modules(names)), files, config_dir, raised)


def _modules(names: list[str]) -> set[str]:
    modules: set[str] = set()
    for name in names:
        if not name.startswith("verl/") or not name.endswith(".py"):
            continue
        parts = name[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        elif parts[-1] == "__main__":
            continue
        modules.add(".".join(parts))
    return modules
