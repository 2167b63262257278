"""What the release says about normalized databases: the manifest's `normalization` section and
the rows of `databases.parquet`, from the per-database reports of both dialects."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

GOLD_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("split", pa.string()),
        ("source_id", pa.string()),
        ("db_id", pa.string()),
        ("class", pa.string()),
        ("sql", pa.string()),
        ("postgres_sql", pa.string()),
        ("oracle_sql", pa.string()),
        ("oracle_error", pa.string()),
        ("sqlstate", pa.string()),
        ("detail", pa.string()),
        ("source_rows", pa.int64()),
        ("target_rows", pa.int64()),
    ]
)
DATABASE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("database", pa.string()),
        ("dialect", pa.string()),
        ("schema_name", pa.string()),
        ("tables", pa.int32()),
        ("rows", pa.int64()),
        ("ddl", pa.string()),
        ("ddl_path", pa.string()),
        ("ddl_sha256", pa.string()),
        ("data_path", pa.string()),
        ("data_sha256", pa.string()),
        ("loaded", pa.bool_()),
        ("verified", pa.bool_()),
        ("load_error", pa.string()),
        ("not_run", pa.string()),
        ("table_checksums", pa.string()),
        ("gold_total", pa.int32()),
        ("gold_identical", pa.int32()),
        ("decisions", pa.string()),
        ("static_problems", pa.list_(pa.string())),
    ]
)


@dataclass
class NormalizationSummary:
    manifest: dict = field(default_factory=dict)  # the manifest's "normalization" section
    database_rows: list[dict] = field(default_factory=list)  # databases.parquet
    gold_rows: list[dict] = field(default_factory=list)  # gold_queries.parquet
    failed: dict[str, str] = field(default_factory=dict)  # "<source>.<db>" -> why it did not load
    unverified: dict[str, list[str]] = field(default_factory=dict)  # loaded, but these tables differ

    def of_source(self, source: str) -> tuple[dict | None, list[dict], list[dict]]:
        """One source's manifest section, databases.parquet rows and gold_queries.parquet rows."""
        return (
            self.manifest.get(source),
            [r for r in self.database_rows if r["source"] == source],
            [r for r in self.gold_rows if r["source"] == source],
        )

    def dev_equivalence_rate(self) -> float | None:
        """Identical dev gold queries on PostgreSQL over all of them, from the manifest section."""
        counts = [s["gold_equivalence"]["postgres"] for s in self.manifest.values() if "gold_equivalence" in s]
        total = sum(c["total"] for c in counts)
        return sum(c["identical"] for c in counts) / total if total else None


def _file(report, name: str) -> tuple[str | None, str | None]:
    for path, sha in report.files.items():
        if path.endswith("/" + name):
            return path, sha
    return None, None


def database_row(report) -> dict:
    ddl_path, ddl_sha = _file(report, "schema.sql")
    data_path, data_sha = _file(report, "data.sql")
    load = report.load
    counts = report.equivalence_counts("dev") if report.equivalence else {"total": None, "identical": None}
    return {
        "source": report.source,
        "database": report.name,
        "dialect": report.dialect,
        "schema_name": report.schema_name,
        "tables": report.tables,
        "rows": report.rows,
        "ddl": report.ddl,
        "ddl_path": ddl_path,
        "ddl_sha256": ddl_sha,
        "data_path": data_path,
        "data_sha256": data_sha,
        "loaded": load.loaded if load else None,
        "verified": load.verified if load else None,
        "load_error": (load.error or None) if load else None,
        "not_run": report.not_run or None,
        "table_checksums": json.dumps({t: v["checksum"] for t, v in load.tables.items()}, sort_keys=True)
        if load
        else None,
        "gold_total": counts["total"],
        "gold_identical": counts["identical"],
        "decisions": report.decisions,  # read when the table is checked and written (plbench.file_cells)
        "static_problems": list(report.static_problems),
    }


def _equivalence(reports: dict, split: str) -> dict:
    total, identical, mismatch = 0, 0, Counter()
    for report in reports.values():
        counts = report.equivalence_counts(split)
        total += counts["total"]
        identical += counts["identical"]
        mismatch.update(counts["mismatch"])
    return {"total": total, "identical": identical, "mismatch": dict(sorted(mismatch.items()))}


def _source_section(inputs, reports: dict[str, dict]) -> tuple[dict, dict[str, str]]:
    pg, oracle = reports["postgres"], reports["oracle"]
    failed = {name: cause for name, cause in inputs.missing.items()}
    for name, report in pg.items():
        if not report.load.loaded:
            failed[name] = report.load.error
        elif not report.load.verified:
            failed[name] = f"loaded, but row counts or checksums differ in tables {report.load.mismatches()}"
    oracle_loaded = {name: r for name, r in oracle.items() if r.load is not None}
    execution = (
        {"ran": True}
        if oracle_loaded
        else {"ran": False, "reason": next((r.not_run for r in oracle.values() if r.not_run), "")}
    )
    section = {
        "databases": len(inputs.databases) + len(inputs.missing),
        "loaded": {"postgres": sum(1 for r in pg.values() if r.load.verified)},
        "failed": dict(sorted(failed.items())),
        "tables": sum(r.tables for r in pg.values()),
        "rows": sum(r.rows for r in pg.values()),
        "oracle": {
            "emitted": len(oracle),
            "execution": execution,
            "static_problems": sum(len(r.static_problems) for r in oracle.values()),
        },
    }
    if oracle_loaded:  # row counts only: checksums are compared on PostgreSQL (plbench.normalize.load)
        section["loaded"]["oracle"] = sum(1 for r in oracle_loaded.values() if r.load.verified)
        section["oracle"]["failed"] = {
            n: r.load.error or f"row counts differ in {r.load.mismatches()}"
            for n, r in sorted(oracle_loaded.items())
            if not r.load.verified
        }
    if inputs.source == "spider1":
        targets = {"postgres": pg, **({"oracle": oracle_loaded} if oracle_loaded else {})}
        section["gold_equivalence"] = {d: _equivalence(r, "dev") for d, r in targets.items()}
        section["gold_equivalence_train"] = {d: _equivalence(r, "train") for d, r in targets.items()}
    return section, {f"{inputs.source}.{k}": v for k, v in failed.items() if k not in inputs.missing}


def _unverified(inputs, pg: dict) -> dict[str, list[str]]:
    return {
        f"{inputs.source}.{name}": r.load.mismatches()
        for name, r in pg.items()
        if r.load.loaded and not r.load.verified
    }


def summarize_normalization(selected: list, reports: dict[str, dict[str, dict]]) -> NormalizationSummary:
    """`reports[source][dialect][database]` for each selected SpiderInputs."""
    summary = NormalizationSummary()
    for inputs in selected:
        section, failed = _source_section(inputs, reports[inputs.source])
        summary.manifest[inputs.source] = section
        summary.failed.update(failed)
        summary.unverified.update(_unverified(inputs, reports[inputs.source]["postgres"]))
        for target in sorted(reports[inputs.source]):
            summary.database_rows += [database_row(r) for _, r in sorted(reports[inputs.source][target].items())]
        summary.gold_rows += [
            {k: None if v == "" else v for k, v in dict(r.as_row(), source=inputs.source).items()}
            for _, rep in sorted(reports[inputs.source]["postgres"].items())
            for r in rep.equivalence
        ]
    return summary
