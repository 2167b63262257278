"""The per-stage validation reports of a build: `validation/<version>/<stage>[.<dialect>].json`.

One JSON document per validation stage (and dialect, where the stage has one), written from the
stages' own reports, so a reader sees what ran, on which engine, and what failed without the UI:
`replay`, `roundtrip` (per dialect), `normalization`, `crosscheck` and `quality`. The content is
deterministic (sorted keys and rows, no timings, no timestamps): the same build writes the same bytes.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from plbench.mbpp.stages import ReplayReport, RoundTripReport
from plbench.spider.summary import NormalizationSummary
from plbench.validation.crosscheck import CrosscheckReport

DATABASE_FIELDS = (
    "source",
    "database",
    "dialect",
    "tables",
    "rows",
    "loaded",
    "verified",
    "load_error",
    "not_run",
    "gold_total",
    "gold_identical",
    "static_problems",
)


def replay_document(report: ReplayReport) -> dict:
    tasks = [
        {
            "task_id": r.task_id,
            "status": r.status,
            "detail": r.detail,
            "mutants_total": r.mutants_total,
            "mutants_killed": r.mutants_killed,
            "survivors": list(r.survivors),
        }
        for r in sorted(report.results, key=lambda r: r.task_id)
    ]
    mutants = report.mutant_counts() if report.ran else None
    return {"dialect": report.dialect, **report.counts(), "mutants": mutants, "tasks": tasks}


def roundtrip_document(report: RoundTripReport) -> dict:
    tasks = [
        {"task_id": r.task_id, "values": r.values, "equal": r.equal, "mismatches": list(r.mismatches), "error": r.error}
        for r in sorted(report.results, key=lambda r: r.task_id)
    ]
    return {"dialect": report.dialect, **report.counts(), "tasks": tasks}


def normalization_document(summary: NormalizationSummary) -> dict:
    databases = [{f: row.get(f) for f in DATABASE_FIELDS} for row in summary.database_rows]
    return {
        "sources": summary.manifest,
        "failed": summary.failed,
        "unverified": summary.unverified,
        "databases": sorted(databases, key=lambda d: (d["source"], d["database"], d["dialect"])),
    }


def documents(
    replays: dict[str, ReplayReport],
    roundtrips: dict[str, RoundTripReport],
    normalization: NormalizationSummary,
    crosscheck: CrosscheckReport,
    manifest: dict,
) -> dict[str, dict]:
    """File stem -> document, for every validation stage of one build."""
    out = {f"replay.{d}": replay_document(r) for d, r in replays.items()}
    out |= {f"roundtrip.{d}": roundtrip_document(r) for d, r in roundtrips.items()}
    out["normalization"] = normalization_document(normalization)
    out["crosscheck"] = crosscheck.manifest_entry()
    out["quality"] = {"suites": manifest.get("quality", {}), "metadata_accuracy": manifest.get("metadata_accuracy")}
    return out


def write_reports(root: Path, version: str, docs: dict[str, dict]) -> dict[str, str]:
    """Write each document as `<root>/<version>/<stem>.json` (each file replaced atomically); the paths."""
    folder = Path(root) / version
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for stem, doc in sorted(docs.items()):
        path = folder / f"{stem}.json"
        text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False, default=str) + "\n"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
        written[stem] = str(path)
    return written
