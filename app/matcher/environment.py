"""Versions and hardware printed in a log, and whether an entry's `applies_to` admits them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import re2
from packaging.version import InvalidVersion, Version

from app.entries.model import applies_to_parts
from app.matcher.normalise import Paste
from app.matcher.versions import FoundVersion, extract_versions

VERSION = r"(\d+\.\d+(?:\.\d+)?(?:\.?(?:post|dev|rc|a|b)\d*)?(?:\+[\w.]+)?)"
# The packages whose version the answer's `environment` names and entries' `applies_to` is checked against.
PACKAGES = ("verl", "vllm", "sglang", "torch", "transformers", "ray", "flash-attn", "megatron-core")
NCCL_RE = re.compile(rf"NCCL version {VERSION}")
CUDA_RE = re.compile(rf"(?i)\bCUDA(?: Version| version|:|\s)\s*{VERSION}")
GPU_RE = re.compile(
    r"\b(?:NVIDIA\s+)?((?:Tesla\s+)?(?:[AHBL]\d{2,3}[A-Za-z]?|RTX\s?\d{4}|GeForce RTX \d{4}|V100|T4|MI\d{3}X?)"
    r"(?:[- ](?:SXM\d?|PCIe|NVL|80GB|40GB|\d+GB|HBM\d?e?)){0,3})\b"
)
SCAN_CHARS = 400
MAX_SCANNED_LINES = 500
# One linear pass finds the few lines that can name the NCCL or CUDA version or a GPU.
MENTION_RE = re2.compile(r"(?im)^[^\n]*(?:nccl version|cuda|nvidia|gpu|device)[^\n]*$")


@dataclass
class Environment:
    versions: dict[str, str] = field(default_factory=dict)
    gpu: str | None = None
    found: list[FoundVersion] = field(default_factory=list, repr=False)  # every version the paste states

    def as_dict(self) -> dict:
        return {"versions": dict(self.versions), "gpu": self.gpu}


def extract_environment(paste: Paste) -> Environment:
    """Read every package version the paste states (one reader, app.matcher.versions, serves the ranking and
    the findings), the first of each of PACKAGES, the NCCL/CUDA versions and the GPU model."""
    env = Environment(found=extract_versions(paste.text))
    for item in env.found:
        if item.package in PACKAGES:
            env.versions.setdefault(item.package, item.version)
    for count, found_line in enumerate(MENTION_RE.finditer(paste.searchable)):
        if count >= MAX_SCANNED_LINES:
            break
        text = found_line.group(0)[:SCAN_CHARS]
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")  # a cut at SCAN_CHARS may split a character
        lowered = text.lower()
        if "nccl" not in env.versions and "NCCL version" in text:
            found = NCCL_RE.search(text)
            if found:
                env.versions["nccl"] = found.group(1)
        if "cuda" not in env.versions and "cuda" in lowered:
            found = CUDA_RE.search(text)
            if found:
                env.versions["cuda"] = found.group(1)
        if env.gpu is None and ("nvidia" in lowered or "gpu" in lowered or "device" in lowered):
            found = GPU_RE.search(text)
            if found:
                env.gpu = found.group(1)
    return env


def excluded_reason(applies_to: str | None, env: Environment) -> str | None:
    """Say why an entry does not apply to the logged versions, or None when it may."""
    if not applies_to:
        return None
    package, spec = applies_to_parts(applies_to)
    seen = env.versions.get(package)
    if not seen:
        return None
    try:
        if spec.contains(Version(seen), prereleases=True):
            return None
    except InvalidVersion:
        return None
    return f"applies to {applies_to}, the log shows {package} {seen}"
