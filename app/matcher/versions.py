"""Package versions stated in a paste: `pip list` / `pip freeze` / `conda list` lines, `pip show` pairs,
start-up banners, `site-packages/<pkg>-<ver>.dist-info` paths, docker image tags, `torch 2.6.0+cu124`.

Every version keeps the line it came from, so a finding can show its evidence. A lone two-column line
("loss 0.25") is not a package listing: columns count only inside a listing of several such lines or
under its `Package Version` header.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

import re2
from packaging.version import InvalidVersion, Version

VERSION = r"v?(\d+(?:\.\d+)+(?:[.-]?(?:post|dev|rc|a|b)\d*)*(?:\+[\w.]+)?)"
NAME = r"[A-Za-z][A-Za-z0-9._-]{0,60}"
ALIASES = {
    "mcore": "megatron-core",
    "megatron": "megatron-core",
    "te": "transformer-engine",
    "fa": "flash-attn",
    "flash-attention": "flash-attn",
    "transformer-engine-torch": "transformer-engine",
    "pytorch": "torch",
    "flashinfer": "flashinfer-python",
    "qwen-vl-utils": "qwen-vl-utils",
    "cu": "",
}
# Names a banner or prose line may carry a version for ("vLLM API server version 0.8.5", "verl version: 0.5.0").
KNOWN = (
    "verl",
    "vllm",
    "megatron",
    "mcore",
    "sglang",
    "torch",
    "transformers",
    "ray",
    "flash-attn",
    "flash_attn",
    "megatron-core",
    "megatron_core",
    "mbridge",
    "tensordict",
    "numpy",
    "triton",
    "deepspeed",
    "peft",
    "accelerate",
    "datasets",
    "flashinfer",
    "xformers",
    "transformer-engine",
    "transformer_engine",
    "vllm-ascend",
    "torch-npu",
    "torch_npu",
    "hydra-core",
    "trl",
    "liger-kernel",
    "qwen-vl-utils",
    "pydantic",
    "nvidia-nccl-cu12",
)
KNOWN_NAMES = {re.sub(r"[-_.]+", "-", name) for name in KNOWN}
LISTING_RE = re.compile(rf"^\s*({NAME})\s+{VERSION}(?:\s+\S+){{0,3}}\s*$")
LISTING_HEADER_RE = re.compile(r"^\s*(?:Package|Name)\s+Version\b", re.I)
END = r"(?!\w)(?!\.\w)"  # a version ends at a space, a quote or a sentence's full stop
FREEZE_RE = re.compile(rf"(?<![\w.-])({NAME})\s*==\s*{VERSION}{END}")
SHOW_NAME_RE = re.compile(rf"^\W{{0,3}}Name\s*:\s*({NAME})\s*$")
SHOW_VERSION_RE = re.compile(rf"^\W{{0,3}}Version\s*:\s*{VERSION}\s*$")
# verl's `scripts/diagnose.py` prints `----------verl Info-----------` and then `Version      : 0.7.0.dev`.
SECTION_RE = re.compile(r"^-{3,}\s*(\w[\w-]*) Info\s*-{3,}\s*$")
SECTIONS_WITHOUT_PACKAGE = {"python", "platform", "system", "hardware", "environment", "network"}
JSON_VERSION_RE = re.compile(rf'"({NAME})[_-]version"\s*:\s*"{VERSION}"')
OF_RE = re.compile(rf"(?i)\bversion\s+{VERSION}\s+of\s+({NAME})")
# "the version of torch becomes 2.6.0", "version of vllm is 0.8.2"
VERSION_OF_RE = re.compile(rf"(?i)\bversion of ({NAME})\s+(?:is|was|becomes|became)\s+v?{VERSION}{END}")
# an image or folder name with verl's version glued on: `base-verl0.6`, `verl0.4-cu124`
GLUED_VERL_RE = re.compile(r"(?<![\w.])[\w.-]*?\bverl(\d+\.\d+(?:\.\d+)?)(?![\d.])", re.I)
# pip's resolver: "the requirement xgrammar==0.1.11 (from vllm) (from versions: 0.1.14, 0.1.15)".
RESOLVER_RE = re.compile(rf"satisfies the requirement ({NAME})\b.*\(from versions: ([^)]{{1,2000}})\)")
MORE_RE = re.compile(rf"^[`'\"]?\s*(?:,|and|or|->|→|to|/)\s*(?:v|version\s+|[<>=!~]=?)?\s*[`'\"]?{VERSION}{END}")
SHOW_LOOKAHEAD = 6  # lines between `Name:` and `Version:` (pip show prints Summary and Home-page between)
DIST_INFO_RE = re.compile(rf"site-packages/({NAME}?)-{VERSION}(?:\.dist-info|\.egg-info|-py\d)")
IMAGE_RE = re.compile(r"[\w./-]*verl[\w.-]*:[\w.+-]+|[\w./-]+:[\w.+-]*verl[\w.+-]*")
IMAGE_PART_RE = re.compile(
    r"(?:^|[-_:])(verl|vllm|sglang|mcore|megatron|te|torch|th|fa|ray|transformers|flashinfer|vllm-ascend)"
    r"[-_]?v?(\d+(?:\.\d+)+(?:\.?post\d+)?)"
)
# A known name, then what people write between it and its version: `==`, `>=`, `: `, ` version `,
# ` version to `, ` is <=`, ` (`, ` v`, ` to `; quotes and backticks around either side.
KNOWN_RE = re.compile(
    r"(?i)(?<![\w-])("
    + "|".join(re.escape(name).replace(r"\-", "[-_]").replace("_", "[-_]") for name in KNOWN)
    + r")[`'\"]?(?:\s*(?:==|>=|<=|~=|!=|<|>|:|=)\s*|\s+(?:versions?\s*(?:[:=]|to|is)?\s*)?|\s*\(\s*|\s+v"
    r"|\s+(?:to|from)\s+v?|\s+is\s+(?:[<>=!~]=?\s*)?)[`'\"]?" + VERSION + END
)
IMAGE_ALIASES = {"th": "torch"}
BANNER_RES = (
    (re.compile(r"vLLM(?: API server)? version:?\s*v?" + VERSION[2:]), "vllm"),
    (re.compile(r"Initializing an? (?:V1 )?LLM engine \(v" + VERSION[2:]), "vllm"),
)
# One linear RE2 pass picks the few lines that can state a version; the patterns above run on those only
# (a 1 MiB training log is mostly metrics lines, which none of them concern).
_NAMES = "|".join(re.escape(name) for name in KNOWN)
CANDIDATE_RE = re2.compile(
    r"(?im)^[^\n]*(?:\d\.\d[^\n]*(?:" + _NAMES + r"|==|version|site-packages/|requirement)"
    r"|(?:" + _NAMES + r"|==|version|site-packages/|requirement)[^\n]*\d\.\d)[^\n]*$"
    r"|^[ \t]*[A-Za-z][\w.-]*[ \t]+v?\d+(?:\.\d+)+\S*(?:[ \t]+\S+){0,3}[ \t]*$"
    r"|^[^\n]*(?:Name[ \t]*:|Info[ \t]*-{3})[^\n]*$|^[ \t]*(?:-{3,}|={3,}|#)[^\n]*$|^[ \t]*(?:Package|Name)[ \t]+Version[^\n]*$"
)
MAX_LINE_CHARS = 2000
MIN_LISTING_LINES = 3
NOT_PACKAGES = {
    "step",
    "epoch",
    "loss",
    "iter",
    "version",
    "python",
    "cuda",
    "driver",
    "nvidia-smi",
    "gpu",
    "rank",
    "line",
    "time",
    "reward",
    "score",
    "lr",
    "os",
    "kernel",
    "cudnn",
    "nccl",
    "gcc",
    "glibc",
}


@dataclass(frozen=True)
class FoundVersion:
    package: str  # PyPI name, lower case, '-' separators
    version: str
    line: int  # 1-based line of the paste
    text: str  # that line, trimmed


def is_version(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def canonical(name: str) -> str:
    name = re.sub(r"[-_.]+", "-", name.strip().lower())
    return ALIASES.get(name, name)


def extract_versions(text: str) -> list[FoundVersion]:
    """Every (package, version) the paste states, in order, duplicates (same package and version) kept once."""
    lines = text.splitlines()
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    candidates = sorted({bisect.bisect_right(offsets, match.start()) - 1 for match in CANDIDATE_RE.finditer(text)})
    found: list[FoundVersion] = []
    seen: set[tuple[str, str]] = set()

    def add(package: str, version: str, index: int) -> None:
        package = canonical(package)
        if not package or package in NOT_PACKAGES or not is_version(version) or (package, version) in seen:
            return
        seen.add((package, version))
        found.append(FoundVersion(package, version, index + 1, lines[index].strip()[:300]))

    listing = _listing_lines(lines, candidates)
    pending_name: tuple[str, int] | None = None  # `Name:` of pip show, and its line
    section: str | None = None
    for index in candidates:
        line = lines[index] if index < len(lines) else ""
        if len(line) > MAX_LINE_CHARS:
            continue
        if index in listing:
            match = LISTING_RE.match(line)
            add(match.group(1), match.group(2), index)
            continue
        if (heading := SECTION_RE.match(line)) is not None:
            section = heading.group(1).lower()
            continue
        if (name := SHOW_NAME_RE.match(line)) is not None:
            pending_name = (name.group(1), index)
            continue
        if (version := SHOW_VERSION_RE.match(line)) is not None:
            if pending_name and index - pending_name[1] <= SHOW_LOOKAHEAD:
                add(pending_name[0], version.group(1), index)
            elif section and section not in SECTIONS_WITHOUT_PACKAGE:
                add(section, version.group(1), index)
            pending_name = None
            continue
        for match in FREEZE_RE.finditer(line):
            add(match.group(1), match.group(2), index)
        for match in DIST_INFO_RE.finditer(line):
            add(match.group(1), match.group(2), index)
        for image in IMAGE_RE.finditer(line):
            for part in IMAGE_PART_RE.finditer(image.group(0).rsplit("/", 1)[-1]):
                add(IMAGE_ALIASES.get(part.group(1), part.group(1)), part.group(2), index)
        for pattern, package in BANNER_RES:
            for match in pattern.finditer(line):
                add(package, match.group(1), index)
        for match in RESOLVER_RE.finditer(line):
            for version in match.group(2).split(","):
                add(match.group(1), version.strip(), index)
        for match in JSON_VERSION_RE.finditer(line):
            add(match.group(1), match.group(2), index)
        for match in VERSION_OF_RE.finditer(line):
            if canonical(match.group(1)) in KNOWN_NAMES:
                add(match.group(1), match.group(2), index)
        for match in GLUED_VERL_RE.finditer(line):
            add("verl", match.group(1), index)
        for match in OF_RE.finditer(line):
            if canonical(match.group(2)) in KNOWN_NAMES:
                add(match.group(2), match.group(1), index)
        for match in KNOWN_RE.finditer(line):
            add(match.group(1), match.group(2), index)
            tail = line[match.end() :]
            while (more := MORE_RE.match(tail)) is not None:  # "vllm 0.8.1, 0.8.3 and 0.6.3", "torch 2.8.0 to 2.7.0"
                add(match.group(1), more.group(1), index)
                tail = tail[more.end() :]
    return found


def _listing_lines(lines: list[str], candidates: list[int]) -> set[int]:
    """Lines of `pip list` / `conda list` listings: runs of adjacent `name version [...]` lines, or any such
    line below a `Package Version` header (its `---- ----` rule and `#` comments do not end the run)."""
    chosen: set[int] = set()
    run: list[int] = []
    under_header = False
    previous = -2
    for index in candidates + [len(lines) + 1]:
        line = lines[index] if index < len(lines) else ""
        adjacent = index == previous + 1
        previous = index
        if LISTING_HEADER_RE.match(line):
            _close(run, under_header, chosen)
            under_header, run = True, []
        elif adjacent and under_header and line.strip().startswith(("---", "#", "===")):
            continue
        elif LISTING_RE.match(line) and (adjacent or not run):
            run.append(index)
        else:
            _close(run, under_header, chosen)
            run, under_header = [], False
            if LISTING_RE.match(line):
                run.append(index)
    return chosen


def _close(run: list[int], under_header: bool, chosen: set[int]) -> None:
    if len(run) >= MIN_LISTING_LINES or (under_header and run):
        chosen.update(run)
