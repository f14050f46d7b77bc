"""Screenshots of the development set's pastes: does the image get the diagnosis its text gets, how well is
the error line read, how long does one image take, and what does the OCR engine cost in memory and start-up.

`python -m benchmarks.ocr [--count N]` writes `benchmarks/ocr.json` and its section of `benchmarks/README.md`
(`benchmarks.run` keeps that section when it rewrites the file).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import time
from pathlib import Path

from app.manual import Manual
from app.matcher import CONFIDENT
from app.ocr.engine import OcrEngine
from app.ocr.image import decode_image
from app.ocr.layout import to_lines
from app.settings import ROOT, Settings
from benchmarks.screenshots import ERROR_LINE_RE, STYLES, render, shown_text, visible_lines

PASTES = ROOT / "tests" / "fixtures" / "pastes"
OUT = Path(__file__).resolve().parent / "ocr.json"
README = OUT.parent / "README.md"
START, END = "<!-- ocr -->", "<!-- /ocr -->"
NO_LIMIT = 1 << 30


def top_code(result) -> str | None:
    confident = [match for match in result.matches if match.confidence in CONFIDENT]
    return confident[0].code if confident else None


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, one row at a time."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]


def error_line_errors(truth: str, read: list[str]) -> tuple[int, int]:
    """(edits, characters) over the error lines of the truth, each against the closest line read."""
    edits = chars = 0
    candidates = [line.strip() for line in read if line.strip()]
    for line in truth.splitlines():
        line = line.strip()
        if not ERROR_LINE_RE.search(line) or not candidates:
            continue
        # only lines of about the same length can be its reading; none such: every character was lost
        near = [other for other in candidates if abs(len(other) - len(line)) <= 0.5 * len(line) + 5]
        edits += min([edit_distance(line, other) for other in near] + [len(line)])
        chars += len(line)
    return edits, chars


def rss_mib() -> float:
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """Resident memory now (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(count: int, threads: int = 0) -> dict:
    manual = Manual.open(Settings(), fresh=True)
    before = rss_mib()
    engine = OcrEngine(threads)
    started = time.perf_counter()
    engine.warm_up()
    load_s = time.perf_counter() - started
    loaded = current_rss_mib()
    paths = sorted(PASTES.glob("*.txt"))[:count]
    rows, by_style = [], {}
    for number, path in enumerate(paths):
        style = STYLES[number % len(STYLES)]
        lines = visible_lines(path.read_text(encoding="utf-8"))
        image = render(lines, style)
        truth = shown_text(lines, style)
        wall, cpu, stats = time.perf_counter(), time.process_time(), {}
        pixels = decode_image(image, max_bytes=NO_LIMIT, max_pixels=NO_LIMIT)
        read = to_lines(engine.read(pixels, time.monotonic() + 600, stats))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        from_text, from_image = top_code(manual.match(truth)), top_code(manual.match("\n".join(read)))
        edits, chars = error_line_errors(truth, read)
        row = {
            "paste": path.name,
            "style": style.name,
            "from_text": from_text,
            "from_image": from_image,
            "agree": from_text == from_image,
            "edits": edits,
            "chars": chars,
            "seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),
            "full_hd": style.canvas == (1920, 1080),
            "load": os.getloadavg()[0],
            "size": "x".join(map(str, pixels.shape[1::-1])),
            "detect_input": "x".join(map(str, stats["detect_input"][::-1])),
            "boxes": stats["boxes"],
            "detect_cpu_s": round(stats["detect_cpu_s"], 2),
            "recognise_cpu_s": round(stats["recognise_cpu_s"], 2),
        }
        rows.append(row)
        by_style.setdefault(style.name, []).append(row)
        print(f"{path.name[:44]:44} {style.name:15} {wall:5.1f}s text={from_text} image={from_image}", flush=True)
    return {
        "images": len(rows),
        "agreement": _share(rows),
        "cer": _cer(rows),
        "engine_load_s": round(load_s, 2),
        "rss_before_mib": round(before),
        "rss_loaded_mib": round(loaded),
        "rss_after_mib": round(current_rss_mib()),
        "rss_peak_mib": round(rss_mib()),
        "seconds_median": statistics.median(r["seconds"] for r in rows),
        "seconds_full_hd_median": statistics.median([r["seconds"] for r in rows if r["full_hd"]] or [0]),
        "cpu_seconds_full_hd_median": statistics.median([r["cpu_seconds"] for r in rows if r["full_hd"]] or [0]),
        "full_hd_split": _split([r for r in rows if r["full_hd"]]),
        "load_average": round(statistics.fmean(r["load"] for r in rows), 1),
        "cores": os.cpu_count(),
        "styles": {
            name: {
                "images": len(group),
                "agreement": _share(group),
                "cer": _cer(group),
                "seconds_median": statistics.median(r["seconds"] for r in group),
            }
            for name, group in by_style.items()
        },
        "disagreements": [r for r in rows if not r["agree"]],
    }


def _split(rows: list[dict]) -> dict:
    """Where the work of the median image goes: detection and recognition CPU seconds, boxes, detector input."""
    if not rows:
        return {}
    inputs = sorted((r["detect_input"] for r in rows), key=lambda size: math.prod(map(int, size.split("x"))))
    return {
        "detect_cpu_s": statistics.median(r["detect_cpu_s"] for r in rows),
        "recognise_cpu_s": statistics.median(r["recognise_cpu_s"] for r in rows),
        "boxes": statistics.median(r["boxes"] for r in rows),
        "detect_input": inputs[len(inputs) // 2],
    }


def _share(rows: list[dict]) -> float:
    return round(sum(r["agree"] for r in rows) / max(1, len(rows)), 3)


def _cer(rows: list[dict]) -> float:
    return round(sum(r["edits"] for r in rows) / max(1, sum(r["chars"] for r in rows)), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=64, help="pastes to render (styles take turns)")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: every core, as the server)")
    args = parser.parse_args()
    OUT.write_text(json.dumps({**measure(args.count, args.threads), "threads": args.threads}, indent=2))
    text = README.read_text() if README.exists() else ""
    before, _, rest = text.partition(START)
    after = rest.partition(END)[2] if rest else ""
    README.write_text(before.rstrip("\n") + "\n\n" + section() + after)


def section() -> str:
    """The README section of the last OCR run (empty when there was none)."""
    if not OUT.exists():
        return ""
    r = json.loads(OUT.read_text())
    rows = [
        (
            "Diagnosis from the image = diagnosis from its text (top-1, confident code or none)",
            f"**{r['agreement']:.2f}** of {r['images']} screenshots",
            ">= 0.85",
            r["agreement"] >= 0.85,
        ),
        ("Character error rate on the error lines", f"{r['cer']:.3f}", "reported", True),
        (
            "Seconds per 1920x1080 screenshot (median wall / CPU)",
            f"{r['seconds_full_hd_median']:.1f} s / {r['cpu_seconds_full_hd_median']:.1f} s CPU",
            "< 2 s",
            r["seconds_full_hd_median"] < 2,
        ),
        (
            "Where a 1920x1080 screenshot's work goes (medians): detection / recognition CPU, boxes, detector input",
            _split_text(r.get("full_hd_split")),
            "reported",
            True,
        ),
        (
            "Engine load (first image only; the server starts without it)",
            f"{r['engine_load_s']:.1f} s",
            "reported",
            True,
        ),
        (
            "Process memory: before the engine / engine loaded / after every image / peak",
            f"{r['rss_before_mib']} / {r['rss_loaded_mib']} / {r['rss_after_mib']} / {r['rss_peak_mib']} MiB",
            "reported",
            True,
        ),
    ]
    lines = [
        START,
        "## Screenshots (OCR)",
        "",
        f"`python -m benchmarks.ocr` renders {r['images']} pastes of the development set as screenshots (eight "
        "styles in turn, drawn with DejaVu Sans Mono and Noto Sans CJK) and reads them with the engine the "
        f"server uses. Load average during the run: {r['load_average']} on {r['cores']} cores shared with other "
        "jobs; the CPU seconds are the figure that does not depend on that.",
        "",
        "| figure | measured | goal | met |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {value} | {goal} | {'yes' if met else '**no**'} |" for name, value, goal, met in rows]
    lines += ["", "| style | images | agreement | CER | median s |", "|---|---|---|---|---|"]
    lines += [
        f"| {name} | {g['images']} | {g['agreement']:.2f} | {g['cer']:.3f} | {g['seconds_median']:.1f} |"
        for name, g in r["styles"].items()
    ]
    lines += [
        "",
        "Disagreements: "
        + (
            "; ".join(
                f"{d['paste']} ({d['style']}): text {d['from_text']}, image {d['from_image']}"
                for d in r["disagreements"]
            )
            or "none"
        ),
        END,
        "",
    ]
    return "\n".join(lines)


def _split_text(split: dict | None) -> str:
    if not split:
        return "not measured"
    return (
        f"{split['detect_cpu_s']:.2f} s / {split['recognise_cpu_s']:.2f} s CPU, {split['boxes']:g} boxes, "
        f"{split['detect_input']} px"
    )


if __name__ == "__main__":
    main()
