"""The dataset card of a release: README.md with YAML front matter that common dataset loaders read."""

from __future__ import annotations

from plbench.release_loading import config_lines, loading_lines
from plbench.subsets import SUBSETS


def _syntax_line(section: dict | None) -> str:
    if not section or not section["ran"]:
        return f"Oracle grammar check not run ({section['reason'] if section else 'no section'})."
    return (
        f"Every Oracle statement was parsed by {section['parser']}: {section['parsed']} of "
        f"{section['statements']} parsed, {section['failed']} failed; the Oracle rows they belong to are "
        "rejected (`oracle_syntax`, with the parser's line, column and message)."
    )


def dataset_card(manifest: dict) -> str:
    """README.md of a release, with YAML front matter that common dataset loaders read."""
    subsets = manifest["subsets"]
    licences = sorted({SUBSETS[s].licence for s in subsets})
    lines = [
        "---",
        f"pretty_name: plbench {manifest['version']}",
        "license: other",
        f'license_details: "{"; ".join(f"{s}: {SUBSETS[s].licence}" for s in subsets)}"',
        "task_categories:",
        "- text-generation",
        "tags:",
        "- code",
        "- plsql",
        "- postgresql",
        "- oracle",
        *config_lines(manifest),
        "---",
        "",
        f"# plbench release {manifest['version']}",
        "",
        "Executable PL/SQL (Oracle) and PL/pgSQL (PostgreSQL) tasks, converted by rule and validated by execution:",
        "",
        *[f"- {s} ({SUBSETS[s].source_dataset}): {SUBSETS[s].summary}." for s in subsets],
        "",
        "## Counts",
        "",
        "| subset | input | released (oracle) | released (postgres) | rejected, shared reasons |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, c in subsets.items():
        lines.append(
            f"| {name} | {c['input']} | {c['released']['oracle']} | {c['released']['postgres']} | "
            f"{sum(c['rejected'].values())} |"
        )
    lines += [
        "",
        "## Validation",
        "",
        "Every released row was replay-validated: a function that maps each test input to its "
        "expected output passes the task's test block, and three mutants of it (NULL results, "
        "another case's output, a reordered or perturbed result) each fail it. "
        "`replay_status` says where this ran; `not_run` means no server of that dialect was "
        "configured, and the row rests on the PostgreSQL replay of the same cases.",
        "",
    ]
    for name, entries in manifest["validation"].items():
        for dialect, entry in entries.items():
            replay = entry["replay"]
            if replay["ran"]:
                mutants = entry.get("mutants")
                lines.append(
                    f"- {name} / {dialect}: replay ran on {replay['engine']}: {replay['passed']} "
                    f"passed, {replay['failed']} failed"
                    + (f"; mutants killed {mutants['killed']} of {mutants['total']}." if mutants else ".")
                )
            else:
                lines.append(f"- {name} / {dialect}: replay not run ({replay['reason']}).")
            trip = entry.get("roundtrip", {})
            if trip.get("ran"):
                lines.append(f"  Value round trip: {trip['equal']} of {trip['values']} test values came back equal.")
    lines += ["", _syntax_line(manifest.get("oracle_syntax"))]
    lines += [
        "",
        "## Files",
        "",
        "- `tasks.parquet`: one row per task and dialect (prompt, scaffold, setup_sql, test_block, "
        "test_cases as tagged JSON, validation results, provenance).",
        "- `subsets/<subset>.parquet`: the same rows, one file per subset.",
        "- `rejections.parquet`: every input not released (level `task`) and every test case dropped "
        "(level `case`), with stage, reason_code and detail.",
        "- `types.parquet`: each collection/object type once per dialect, with its DDL.",
        "- `manifest.json`: raw input checksums, counts, validation, table checksums.",
        "",
        *loading_lines(manifest),
        "## Licences",
        "",
        *[f"- {s}: {SUBSETS[s].licence}" for s in subsets],
        "",
        f"Derived data keeps the source licences ({', '.join(licences)}).",
        "",
    ]
    return "\n".join(lines)
