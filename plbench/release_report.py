"""The release report: PNG plots kept in the release (`report/*.png`) and shown in the Dagster UI.

Each plot is drawn from the release's own tables and manifest (and the stage timings of the run
that produced the stored values), so what it shows is what the release holds:
- `funnel.png`: per subset and dialect, the tasks left after each stage (input, minus the task-level
  rejections of each stage in pipeline order, ending at the released count);
- `rejections.png`: task-level rejections by reason and subset;
- `types.png`: the Python types of the function tasks' parameters and results (their outer kind);
- `constructs.png`: the PL/SQL constructs the released reference code uses, per dialect;
- `timings.png`: seconds per stage.
"""

from __future__ import annotations

import functools
import io
import json
from collections import Counter, defaultdict

# Pipeline order of the rejection stages; a stage not listed comes after these, by name.
STAGE_ORDER = (
    "ingest",
    "procedure_seeds",
    "test_extraction",
    "signature_inference",
    "constant_augmentation",
    "ile",
    "task_emission",
    "replay_validation",
    "spider_tasks",
    "spider2_tasks",
    "trivial_candidates",
    "oracle_syntax",
)
TOP_REASONS = 25
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Plots of how this run went rather than of what it built: two builds of the same inputs differ only there.
RUN_MEASURED = ("report/timings.png",)


@functools.cache
def _pyplot():
    """pyplot, imported when a plot is drawn: it takes seconds, and the Dagster definitions import this module."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, whatever the environment says
    import matplotlib.pyplot

    return matplotlib.pyplot


def stage_rank(stage: str) -> tuple[int, str]:
    return (STAGE_ORDER.index(stage), "") if stage in STAGE_ORDER else (len(STAGE_ORDER), stage)


def funnel(subsets: dict, rejections: list[dict]) -> dict[str, dict[str, list[tuple[str, int]]]]:
    """subset -> dialect -> [(stage, tasks left after it)], from `input` to `released`."""
    out: dict = {}
    for subset, counts in sorted(subsets.items()):
        rejected = [r for r in rejections if r["subset"] == subset and r["level"] == "task"]
        stages = sorted({r["stage"] for r in rejected}, key=stage_rank)
        out[subset] = {}
        for target in sorted(counts.get("released", {})):
            left, steps = counts["input"], [("input", counts["input"])]
            for stage in stages:
                left -= sum(1 for r in rejected if r["stage"] == stage and r["dialect"] in (None, target))
                steps.append((stage, left))
            out[subset][target] = steps + [("released", counts["released"][target])]
    return out


def rejection_reasons(rejections: list[dict]) -> dict[str, Counter]:
    """reason -> count per subset, task-level rejections only."""
    reasons: dict[str, Counter] = defaultdict(Counter)
    for r in rejections:
        if r["level"] == "task":
            reasons[r["reason_code"]][r["subset"]] += 1
    return dict(reasons)


def _outer_kind(python_type: str) -> str:
    return python_type.split("[", 1)[0].strip() or python_type


def type_counts(tasks: list[dict]) -> Counter:
    """Outer kinds (int, list, tuple, ...) of every parameter and result of the function tasks, once per task."""
    counts: Counter = Counter()
    for row in tasks:
        signature = json.loads(row["signature"]) if row.get("signature") else None
        if not isinstance(signature, dict) or "returns" not in signature or row["dialect"] != "postgres":
            continue
        for part in (*signature.get("params", []), signature["returns"]):
            counts[_outer_kind(part.get("python_type", "?"))] += 1
    return counts


def construct_counts(tasks: list[dict]) -> dict[str, Counter]:
    """dialect -> construct -> released tasks using it."""
    out: dict[str, Counter] = defaultdict(Counter)
    for row in tasks:
        out[row["dialect"]].update(row.get("plsql_constructs") or [])
    return dict(out)


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    _pyplot().close(figure)
    return buffer.getvalue()


def _empty(title: str) -> bytes:
    figure, axes = _pyplot().subplots(figsize=(6, 2))
    axes.set_axis_off()
    axes.text(0.5, 0.5, f"{title}: nothing to show", ha="center", va="center")
    return _png(figure)


def funnel_png(steps: dict) -> bytes:
    if not steps:
        return _empty("retention funnel")
    figure, grid = _pyplot().subplots(len(steps), 1, figsize=(9, 2.6 * len(steps)), squeeze=False)
    for axes, (subset, by_dialect) in zip(grid[:, 0], steps.items()):
        for dialect, points in by_dialect.items():
            axes.plot([s for s, _ in points], [n for _, n in points], marker="o", label=dialect)
        axes.set_title(f"{subset}: tasks left after each stage")
        axes.set_ylim(bottom=0)
        axes.tick_params(axis="x", labelrotation=20)
        axes.legend(fontsize="small")
    figure.tight_layout()
    return _png(figure)


def _barh(title: str, labels: list[str], series: dict[str, list[int]], xlabel: str) -> bytes:
    if not labels:
        return _empty(title)
    figure, axes = _pyplot().subplots(figsize=(9, 1 + 0.3 * len(labels)))
    left = [0] * len(labels)
    for name, values in series.items():
        axes.barh(labels, values, left=left, label=name)
        left = [a + b for a, b in zip(left, values)]
    axes.invert_yaxis()
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    if len(series) > 1:
        axes.legend(fontsize="small")
    figure.tight_layout()
    return _png(figure)


def rejections_png(reasons: dict[str, Counter]) -> bytes:
    top = sorted(reasons, key=lambda r: (-sum(reasons[r].values()), r))[:TOP_REASONS]
    subsets = sorted({s for r in top for s in reasons[r]})
    series = {s: [reasons[r][s] for r in top] for s in subsets}
    return _barh("task-level rejections by reason", top, series, "tasks")


def counter_png(title: str, counts: dict[str, Counter], xlabel: str) -> bytes:
    labels = sorted({k for c in counts.values() for k in c}, key=lambda k: (-sum(c[k] for c in counts.values()), k))
    return _barh(
        title, labels[:TOP_REASONS], {n: [c[k] for k in labels[:TOP_REASONS]] for n, c in counts.items()}, xlabel
    )


def timings_png(timings: dict[str, float]) -> bytes:
    labels = sorted(timings, key=lambda s: -timings[s])
    return _barh(
        "seconds per stage (the runs that produced the stored values)",
        labels,
        {"s": [round(timings[s], 1) for s in labels]},
        "s",
    )


def report_plots(
    tasks: list[dict], rejections: list[dict], manifest: dict, timings: dict[str, float]
) -> dict[str, bytes]:
    """`report/<name>.png` -> PNG bytes."""
    return {
        "report/funnel.png": funnel_png(funnel(manifest["subsets"], rejections)),
        "report/rejections.png": rejections_png(rejection_reasons(rejections)),
        "report/types.png": counter_png(
            "parameter and result types of the function tasks", {"tasks": type_counts(tasks)}, "occurrences"
        ),
        "report/constructs.png": counter_png(
            "PL/SQL constructs in the reference code", construct_counts(tasks), "tasks"
        ),
        "report/timings.png": timings_png(timings),
    }
