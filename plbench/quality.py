"""Quality gates of a release: great-expectations suites over every release table, before anything is written.

Why: the release tables are the product. A null prompt, a task id released twice for one
dialect, a replay status nobody scores, a JSON column that does not decode, or row counts
that differ from what the manifest claims would each reach users silently. The suites catch
them while the release is still in memory (`PreparedRelease`), so a Dagster check can block
the write.

The suites are files, `plbench/quality_suites/<suite>.json`, one per table, so a reader sees
every rule without reading code. Each entry names a GX expectation type and its kwargs:

- `"columns": [...]` repeats the expectation once per column (`column` kwarg);
- `"kwargs"` are passed as they are;
- `"where": {column: value | [values]}` restricts an entry to some rows (e.g. one subset);
- `"manifest_value": "<name>"` expands the expectation once per group the manifest counts
  (subset and dialect, source ...), with the group as its `where` and the manifest's
  number as the expected value (`value`, or `min_value` = `max_value` for sums) — see
  `MANIFEST_VALUES`;
- `"subset_columns": "required_columns"` repeats the expectation once per registered subset
  (plbench.subsets) and column that subset names, restricted to that subset's rows;
- a kwarg `"$subsets"` is the list of registered subset names, and `$subsets` inside a
  string (a regex) their alternation.

GX 1.x is called directly (`dagster-ge` does not support 1.x) through an ephemeral context on
pandas DataFrames: no project folder, no analytics, no progress bars.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from plbench.file_cells import cells_table

if TYPE_CHECKING:
    from plbench.release import PreparedRelease

SUITES_DIR = Path(__file__).resolve().parent / "quality_suites"
SUITE_OF_TABLE = {
    "tasks.parquet": "tasks",
    "rejections.parquet": "rejections",
    "types.parquet": "types",
    "databases.parquet": "databases",
    "gold_queries.parquet": "gold_queries",
}
MAX_FAILURES = 20  # failure descriptions kept per suite: enough to act on, short enough for a manifest


# ---- manifest-derived expected values: [(label, rows it counts as a `where`, or None for all, value)] --


def _released(manifest: dict) -> list[tuple[str, dict | None, int]]:
    groups = [
        (f"{s}/{d}", {"subset": s, "dialect": d}, n)
        for s, counts in sorted(manifest.get("subsets", {}).items())
        for d, n in sorted(counts["released"].items())
    ]
    return groups + [("all rows", None, sum(n for *_, n in groups))]


def _rejections(manifest: dict) -> list[tuple[str, dict | None, int]]:
    groups = []
    for s, c in sorted(manifest.get("subsets", {}).items()):
        task = sum(c["rejected"].values()) + sum(sum(v.values()) for v in c["rejected_by_dialect"].values())
        case = sum(c["cases_dropped"].values()) + sum(sum(v.values()) for v in c["cases_dropped_by_dialect"].values())
        groups += [
            (f"{s}/task", {"subset": s, "level": "task"}, task),
            (f"{s}/case", {"subset": s, "level": "case"}, case),
        ]
    return groups + [("all rows", None, sum(n for *_, n in groups))]


def _types(manifest: dict) -> list[tuple[str, dict | None, int]]:
    groups = [(d, {"dialect": d}, n) for d, n in sorted(manifest.get("types", {}).items())]
    return groups + [("all rows", None, sum(n for *_, n in groups))]


def _normalization(manifest: dict) -> dict:
    return manifest.get("normalization") or {}


def _emitted(manifest: dict) -> list[tuple[str, dict | None, int]]:
    groups = [
        (f"{src}/{d}", {"source": src, "dialect": d}, s["oracle"]["emitted"])
        for src, s in sorted(_normalization(manifest).items())
        for d in ("oracle", "postgres")
    ]
    return groups + [("all rows", None, sum(n for *_, n in groups))]


def _verified(manifest: dict) -> list[tuple[str, dict | None, int]]:
    return [
        (src, {"source": src, "dialect": "postgres", "verified": True}, s["loaded"].get("postgres", 0))
        for src, s in sorted(_normalization(manifest).items())
    ]


def _pg_total(key: str) -> Callable[[dict], list[tuple[str, dict | None, int]]]:
    def totals(manifest: dict) -> list[tuple[str, dict | None, int]]:
        return [
            (src, {"source": src, "dialect": "postgres"}, s[key]) for src, s in sorted(_normalization(manifest).items())
        ]

    return totals


def _gold_queries(manifest: dict) -> list[tuple[str, dict | None, int]]:
    groups = []
    for src, section in sorted(_normalization(manifest).items()):
        for key, split in (("gold_equivalence", "dev"), ("gold_equivalence_train", "train")):
            counts = section.get(key, {}).get("postgres")
            if counts is not None:
                groups += [
                    (f"{src}/{split}", {"source": src, "split": split}, counts["total"]),
                    (
                        f"{src}/{split}/identical",
                        {"source": src, "split": split, "class": "identical"},
                        counts["identical"],
                    ),
                ]
    return groups


MANIFEST_VALUES: dict[str, Callable[[dict], list[tuple[str, dict | None, int]]]] = {
    "released": _released,  # manifest.subsets[s].released[d], per subset and dialect, and their sum
    "rejections": _rejections,  # rejected + rejected_by_dialect (task), cases_dropped(_by_dialect) (case)
    "types": _types,  # manifest.types[d]
    "emitted_databases": _emitted,  # manifest.normalization[src].oracle.emitted, in each dialect
    "verified_databases": _verified,  # manifest.normalization[src].loaded.postgres
    "normalized_tables": _pg_total("tables"),
    "normalized_rows": _pg_total("rows"),
    "gold_queries": _gold_queries,  # manifest.normalization[src].gold_equivalence(_train).postgres, total/identical
}


# ---- suite files -> expectation configurations --------------------------------------------------


def load_suite(name: str) -> dict:
    return json.loads((SUITES_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _with_subsets(value):
    """`"$subsets"` -> the registered subset names; `$subsets` in a string -> their alternation."""
    from plbench.subsets import SUBSETS

    if value == "$subsets":
        return sorted(SUBSETS)
    if isinstance(value, str) and "$subsets" in value:
        return value.replace("$subsets", "|".join(re.escape(n) for n in sorted(SUBSETS)))
    return value


def _subset_columns(entry: dict) -> list[tuple[str, dict, dict | None]]:
    from plbench.subsets import SUBSETS

    return [
        (entry["expectation"], dict(entry.get("kwargs", {}), column=column), {"subset": name})
        for name, subset in sorted(SUBSETS.items())
        for column in getattr(subset, entry["subset_columns"])
    ]


def expand_suite(suite: dict, manifest: dict) -> list[tuple[str, dict, dict | None]]:
    """The suite's entries as (expectation type, kwargs, where), one per column, subset and manifest group."""
    configs = []
    for entry in suite["expectations"]:
        if "subset_columns" in entry:
            configs += _subset_columns(entry)
            continue
        base = {k: _with_subsets(v) for k, v in entry.get("kwargs", {}).items()}
        variants = [dict(base, column=c) for c in entry["columns"]] if "columns" in entry else [base]
        where = entry.get("where")
        if "manifest_value" not in entry:
            configs += [(entry["expectation"], v, where) for v in variants]
            continue
        for v in variants:
            configs += [
                (entry["expectation"], _with_value(entry["expectation"], v, value), group)
                for _, group, value in MANIFEST_VALUES[entry["manifest_value"]](manifest)
            ]
    return configs


def _with_value(kind: str, kwargs: dict, value: int) -> dict:
    if kind == "expect_table_row_count_to_equal":
        return dict(kwargs, value=value)
    return dict(kwargs, min_value=value, max_value=value)


def row_condition(where: dict):
    """A GX condition from a suite's `where`: column -> value (equal) or list of values (in)."""
    from great_expectations.expectations.row_conditions import Column

    parts = [Column(c).is_in(v) if isinstance(v, list) else Column(c) == v for c, v in where.items()]
    condition = parts[0]
    for part in parts[1:]:
        condition = condition & part
    return condition


# ---- running ------------------------------------------------------------------------------------


@cache
def _batch_definition():
    """One ephemeral GX context for the process: building it and importing GX costs seconds."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )
    from great_expectations.execution_engine import pandas_execution_engine

    # GX fingerprints every dataframe it is given (pd.util.hash_pandas_object, twice a validation: on the
    # release's databases table, whose decisions run to 400 MB, 7 s and 0.7 GB). The fingerprint only names
    # the batch in the stores of a context that keeps none; below this size (none) it is skipped.
    pandas_execution_engine.HASH_THRESHOLD = 0
    config = DataContextConfig(
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
    )
    context = gx.get_context(mode="ephemeral", project_config=config)
    asset = context.data_sources.add_pandas("plbench_release").add_dataframe_asset("table")
    return asset.add_batch_definition_whole_dataframe("whole")


def _expectation(kind: str, kwargs: dict, where: dict | None):
    from great_expectations.expectations.registry import get_expectation_impl

    if where:
        kwargs = dict(kwargs, row_condition=row_condition(where))
    return get_expectation_impl(kind)(**kwargs)


def table_frame(rows: list[dict], schema: pa.Schema):
    """The rows as a pandas frame, their file cells read. The Arrow table does not outlive the frame: on the
    databases table it is another copy of 400 MB of decisions."""
    return cells_table(rows, schema).to_pandas(self_destruct=True, split_blocks=True)


def run_suite(suite: dict, rows: list[dict], schema: pa.Schema, manifest: dict) -> dict:
    """Validate one table's rows (file cells read here) against its suite; a suite that cannot be built
    or run fails."""
    import great_expectations as gx

    configs = expand_suite(suite, manifest)
    try:
        frame = table_frame(rows, schema)
        expectations = [_expectation(kind, kwargs, where) for kind, kwargs, where in configs]
    except Exception as exc:  # rows off the schema, or a suite entry GX rejects: the gate cannot pass
        return {
            "success": False,
            "expectations": len(configs),
            "failed": len(configs),
            "failures": [f"suite not run: {type(exc).__name__}: {str(exc)[:300]}"],
        }
    gx_suite = gx.ExpectationSuite(name=suite["suite"], expectations=expectations)
    result = _batch_definition().get_batch(batch_parameters={"dataframe": frame}).validate(gx_suite)
    failures = [describe_failure(r) for r in result.results if not r.success]
    return {
        "success": not failures,
        "expectations": len(result.results),
        "failed": len(failures),
        "failures": failures[:MAX_FAILURES],
    }


def describe_failure(result) -> str:
    """One line a reader can act on: the expectation, its key arguments, and what was observed."""
    config = result.expectation_config
    args = {k: v for k, v in config.kwargs.items() if k not in ("batch_id", "condition_parser", "row_condition")}
    if config.kwargs.get("row_condition"):
        args["where"] = condition_text(config.kwargs["row_condition"])
    head = f"{config.type}({', '.join(f'{k}={v!r}' for k, v in sorted(args.items()))})"
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return f"{head}: raised {str(info.get('exception_message'))[:300]}"
    found = result.result or {}
    if found.get("unexpected_count") is not None:
        examples = [str(v)[:80] for v in (found.get("partial_unexpected_list") or [])[:3]]
        return f"{head}: {found['unexpected_count']} unexpected, e.g. {examples}"
    return f"{head}: observed {found.get('observed_value')!r}"


def condition_text(condition) -> str:
    """`subset == 'mbpp' and level == 'task'` from a serialized GX condition."""
    data = condition if isinstance(condition, dict) else condition.dict()
    if data.get("type") == "and":
        return " and ".join(condition_text(c) for c in data["conditions"])
    if data.get("type") == "comparison":
        return f"{data['column']['name']} {data['operator'].lower()} {data['parameter']!r}"
    return str(data)


def check_release(prepared: PreparedRelease) -> dict:
    """Every release table against its suite: {suite: {success, expectations, failed, failures}}."""
    report = {}
    for table, (rows, schema) in sorted(prepared.tables.items()):
        name = SUITE_OF_TABLE.get(table)
        if name is None:
            report[table] = {
                "success": False,
                "expectations": 0,
                "failed": 1,
                "failures": [f"no quality suite for release table {table}"],
            }
            continue
        report[name] = run_suite(load_suite(name), rows, schema, prepared.manifest)
    return report


def failed_suites(quality: dict) -> dict[str, list[str]]:
    """The failures of each suite that did not pass (what blocks a release)."""
    return {name: r["failures"] for name, r in quality.items() if not r["success"]}
