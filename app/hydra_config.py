"""verl's own config tree composed by Hydra, as `python -m verl.trainer.main_ppo` composes it.

The release's `verl/trainer/config` folder is copied out of the wheel (never installed) and composed
once per *base*: the PPO trainer with each model engine, the Megatron trainer and the SFT trainer. A
fix's overrides are then applied by Hydra's own override parser and rules to a copy of each base in
turn: the first base that accepts them all is the one the fix needs.
"""

from __future__ import annotations

import copy
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from omegaconf import DictConfig, OmegaConf

CONFIG_DIR = "verl/trainer/config"


@dataclass(frozen=True)
class Base:
    """A composed config: its name, the group choices it was composed with, and what a fix must say."""

    config: str
    choices: tuple[str, ...] = ()
    mention: str | None = None  # a word the fix or its entry must contain when only this base accepts it

    @property
    def label(self) -> str:
        return " ".join((self.config, *self.choices))


BASES = (
    Base("ppo_trainer"),
    Base("ppo_trainer", ("model_engine=megatron",), "megatron"),
    Base("ppo_megatron_trainer", (), "megatron"),
    Base("sft_trainer_engine", (), "sft"),
    Base("ppo_trainer", ("model_engine=torchtitan",), "torchtitan"),
    Base("ppo_trainer", ("model_engine=veomni",), "veomni"),
    Base("evaluation", (), "main_eval"),
)


def extract_config(wheel: Path, target: Path) -> Path:
    """Copy the wheel's config folder to ``target`` (once) and return it."""
    marker = target / ".complete"
    if marker.exists():
        return target
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith(CONFIG_DIR + "/") and name.endswith(".yaml"):
                path = target / PurePosixPath(name).relative_to(CONFIG_DIR)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(archive.read(name))
    marker.touch()
    return target


def compose(config_dir: Path, base: Base) -> DictConfig | None:
    """Compose one base with Hydra; None when the release has no such config."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    if not (config_dir / f"{base.config}.yaml").exists():
        return None
    with initialize_config_dir(config_dir=str(config_dir.resolve()), version_base=None):
        return hydra_compose(config_name=base.config, overrides=list(base.choices))


def keys_of(config: DictConfig) -> set[str]:
    """Every node's dotted path (groups and leaves), interpolations left unresolved."""
    keys: set[str] = set()

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                path = f"{prefix}.{key}" if prefix else str(key)
                keys.add(path)
                walk(value, path)

    walk(OmegaConf.to_container(config, resolve=False), "")
    return keys


class OverrideChecker:
    """Apply override lists with Hydra's rules; bases are composed on first use.

    Verdicts are kept in ``verdicts.json`` beside the config: the release never changes, so an override
    set is composed once, not on every `kb check`.
    """

    def __init__(self, config_dir: Path):
        self.config_dir = config_dir
        self._bases: dict[Base, DictConfig | None] = {}
        self._store = config_dir / "verdicts.json"
        self._verdicts: dict[str, list] = json.loads(self._store.read_text()) if self._store.exists() else {}
        self._dirty = False

    def save(self) -> None:
        """Write new verdicts (atomically: another `kb check` may read the file meanwhile)."""
        if self._dirty:
            temporary = self._store.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(self._verdicts, sort_keys=True))
            temporary.replace(self._store)
            self._dirty = False

    def check(self, overrides: tuple[str, ...]) -> tuple[Base | None, str]:
        """The first base accepting every override, or (None, Hydra's message for the default base).

        Group choices among the overrides (`model_engine=megatron`) are composed into each base, as
        Hydra does before it applies the other overrides.
        """
        key = "\n".join(overrides)
        if key not in self._verdicts:
            base, error = self._compose(overrides)
            self._verdicts[key] = (
                [None, error] if base is None else [[base.config, list(base.choices), base.mention], ""]
            )
            self._dirty = True
        found, error = self._verdicts[key]
        return (Base(found[0], tuple(found[1]), found[2]) if found else None), error

    def _compose(self, overrides: tuple[str, ...]) -> tuple[Base | None, str]:
        choices = tuple(o for o in overrides if is_group_choice(self.config_dir, o))
        rest = tuple(o for o in overrides if o not in choices)
        first_error = ""
        for base in BASES:
            if choices:
                base = Base(base.config, base.choices + choices, base.mention)
            config = self._base(base)
            if config is None or not _roots(rest) <= set(config):
                continue  # another entry point's tree: `+actor_rollout_ref...` means nothing to the SFT trainer
            error = apply(config, rest)
            if not error:
                return base, ""
            first_error = first_error or error
        return None, first_error

    def _base(self, base: Base) -> DictConfig | None:
        if base not in self._bases:
            from hydra.errors import HydraException

            try:
                self._bases[base] = compose(self.config_dir, base)
            except HydraException:  # a choice this base cannot take: the fix does not fit this base
                self._bases[base] = None
        return self._bases[base]


def apply(config: DictConfig, overrides: tuple[str, ...]) -> str:
    """Apply ``overrides`` to a copy of ``config`` as Hydra does; return its error message or ''.

    A value Hydra's grammar cannot read (a placeholder such as `<N>` or `$NGPUS`) is replaced by null:
    the key and the prefix are what is being checked.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.errors import HydraException

    try:
        parsed = [_parse(override) for override in overrides]
        # Hydra's own step after composing the defaults list: the same checks `main_ppo` runs
        ConfigLoaderImpl._apply_overrides_to_config(parsed, _touched_copy(config, overrides))
    except HydraException as exc:
        return str(exc).splitlines()[0]
    return ""


def _roots(overrides: tuple[str, ...]) -> set[str]:
    return {override.lstrip("+~").split("=", 1)[0].split(".", 1)[0] for override in overrides}


def _touched_copy(config: DictConfig, overrides: tuple[str, ...]) -> DictConfig:
    """A struct-mode copy of the top-level sections the overrides touch: copying the whole tree for
    every fix cost 60 ms, and an override never reaches outside its own section."""
    part = OmegaConf.create({root: copy.deepcopy(config[root]) for root in _roots(overrides) if root in config})
    OmegaConf.set_struct(part, OmegaConf.is_struct(config))
    return part


def _parse(override: str):
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    try:
        return parser.parse_override(override)
    except HydraException:  # the lexer's errors are plain HydraExceptions
        key = override.split("=", 1)[0]
        return parser.parse_override(f"{key}=null")


def is_group_choice(config_dir: Path, override: str) -> bool:
    """`model_engine=megatron`: picks a config group's option rather than setting a key."""
    key, _, value = override.lstrip("+~").partition("=")
    return "/" in key or "@" in key or (config_dir / key / f"{value}.yaml").exists()
