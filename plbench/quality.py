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
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from plbench.collector import collector_paused, give_back_freed_memory
from plbench.file_cells import cells_table, row_groups, text_bytes

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
# Expectations whose verdict on a table is the conjunction of their verdicts on its rows, unexpected counts
# adding up: they run over runs of rows, so no frame holds a whole table's text (the databases table's
# decisions run to 400 MB, and GX checking them as JSON held 1.2 GB more). The others (uniqueness, counts,
# sums) run over every row of only the columns they read.
ROW_LOCAL = frozenset(
    {
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_in_set",
        "expect_column_values_to_match_regex",
        "expect_column_values_to_be_json_parseable",
        "expect_column_values_to_be_between",
        "expect_column_pair_values_a_to_be_greater_than_b",
    }
)
ROWS_BYTES = 64 * 2**20  # text of the columns read that one frame of row-local expectations holds


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


def selects(where: dict, row: dict) -> bool:
    """Whether a suite's `where` (column -> value, equal, or list of values, in) selects the row."""
    return all(row.get(c) in v if isinstance(v, list) else row.get(c) == v for c, v in where.items())


def where_text(where: dict) -> str:
    """`subset == 'mbpp' and level == 'task'`: a `where` as a failure line names it."""
    return " and ".join(f"{c} {'in' if isinstance(v, list) else '=='} {v!r}" for c, v in where.items())


# ---- running ------------------------------------------------------------------------------------


_CONTEXT_LOCK = threading.Lock()


def _batch_definition():
    with _CONTEXT_LOCK:  # `warm_up`'s thread may be building it: wait for that one, not build a second
        return _new_batch_definition()


def warm_up() -> threading.Thread:
    """Import GX and build its context on a thread of its own, ahead of `check_release`: seconds of the build's
    last stage, on one core, which the grammar gate hides while its Node processes parse. Cold release_tables
    reruns, alternating (bench/release_time.py --cold [--no-warm-up]): quality suites 11.1, 10.1 s against 14.6,
    12.1 s; the grammar gate 26.1, 24.9 s against 25.9, 24.7 s; its peak, tree with PostgreSQL, 0.1 GB higher."""
    thread = threading.Thread(target=collector_paused()(_batch_definition), name="plbench-gx-warm-up", daemon=True)
    thread.start()
    return thread


@cache
def _new_batch_definition():
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


def _expectation(kind: str, kwargs: dict):
    from great_expectations.expectations.registry import get_expectation_impl

    return get_expectation_impl(kind)(**kwargs)


def table_frame(rows: list[dict], schema: pa.Schema):
    """The rows as a pandas frame, their file cells read, text as Python strings. The Arrow table does not
    outlive the frame: on the databases table it is another copy of 400 MB of decisions. pandas 3 keeps text in
    Arrow, where every selection GX makes (the rows a check applies to) copies the text's bytes: the databases
    suite took 7.2-7.5 s with Arrow text, 5.4-5.5 s with Python strings, and peaked 0.05 GB lower."""
    import pandas as pd

    frame = cells_table(rows, schema).to_pandas(self_destruct=True, split_blocks=True)
    text = [name for name, dtype in frame.dtypes.items() if isinstance(dtype, pd.StringDtype)]
    if text:
        frame[text] = frame[text].astype(object)
    return frame


def columns_read(kwargs: dict) -> set[str]:
    """The columns an expectation checks."""
    names = {kwargs[k] for k in ("column", "column_A", "column_B") if k in kwargs}
    return names | set(kwargs.get("column_list", ()))


def is_row_local(kind: str, kwargs: dict) -> bool:
    """A `mostly` fraction is of the whole table, so an expectation with one is not row-local."""
    return kind in ROW_LOCAL and "mostly" not in kwargs


def _text_in(columns: set[str]) -> Callable[[dict], int]:
    """A row's size as a frame of `columns` holds it (and GX a copy as it checks them)."""
    return lambda row: text_bytes({c: row.get(c) for c in columns})


def _frames(configs: list[tuple[str, dict, dict | None]], rows: list[dict], schema: pa.Schema, max_bytes: int):
    """(where, configs, frame) triples to validate. Configs sharing a `where` and being row-local or not
    see the rows it selects, selected here (a GX row condition filters and copies the whole frame once per
    expectation), of only the columns they check or select by; the row-local ones see runs of those rows
    holding at most `max_bytes` of those columns."""
    parts: dict[tuple[str, bool], tuple[dict | None, list]] = {}
    for kind, kwargs, where in configs:
        key = (json.dumps(where, sort_keys=True), is_row_local(kind, kwargs))
        parts.setdefault(key, (where, []))[1].append((kind, kwargs))
    for (_, row_local), (where, part) in parts.items():
        if unknown := set(where or ()) - set(schema.names):
            raise ValueError(f"a `where` selects by {sorted(unknown)}, not columns of the table")
        selected = [row for row in rows if selects(where, row)] if where else rows
        read = set(where or ()).union(*(columns_read(kwargs) for _, kwargs in part))
        columns = pa.schema([f for f in schema if f.name in read])
        runs = row_groups(selected, max_bytes, _text_in(read))
        for run in runs if row_local else [selected]:
            yield where, part, table_frame(run, columns)


def run_suite(suite: dict, rows: list[dict], schema: pa.Schema, manifest: dict, max_bytes: int = ROWS_BYTES) -> dict:
    """Validate one table's rows (file cells read here) against its suite; a suite that cannot be built
    or run fails."""
    import great_expectations as gx

    configs = expand_suite(suite, manifest)
    results: dict[str, list] = {}
    try:
        for where, part, frame in _frames(configs, rows, schema, max_bytes):
            expectations = [_expectation(kind, kwargs) for kind, kwargs in part]
            gx_suite = gx.ExpectationSuite(name=suite["suite"], expectations=expectations)
            validation = _batch_definition().get_batch(batch_parameters={"dataframe": frame}).validate(gx_suite)
            del frame
            give_back_freed_memory()  # the frame's Arrow pages (its pool) and pandas' (malloc) before the next
            for result in validation.results:
                results.setdefault(expectation_head(result.expectation_config, where), []).append(result)
    except Exception as exc:  # rows off the schema, or a suite entry GX rejects: the gate cannot pass
        return {
            "success": False,
            "expectations": len(configs),
            "failed": len(configs),
            "failures": [f"suite not run: {type(exc).__name__}: {str(exc)[:300]}"],
        }
    failures = [describe_failure(head, found) for head, found in results.items() if not all(r.success for r in found)]
    return {
        "success": not failures,
        "expectations": len(results),
        "failed": len(failures),
        "failures": failures[:MAX_FAILURES],
    }


def expectation_head(config, where: dict | None) -> str:
    """`expect_x(column='a', where="subset == 'mbpp'")`: an expectation's type and key arguments."""
    args = {k: v for k, v in config.kwargs.items() if k != "batch_id"}
    if where:
        args["where"] = where_text(where)
    return f"{config.type}({', '.join(f'{k}={v!r}' for k, v in sorted(args.items()))})"


def describe_failure(head: str, results: list) -> str:
    """One line a reader can act on: the expectation, its key arguments (`head`), and what was observed over
    the runs of rows it was validated on (unexpected counts added up, the first examples)."""
    failed = [r for r in results if not r.success]
    raised = [r.exception_info for r in failed if (r.exception_info or {}).get("raised_exception")]
    if raised:
        return f"{head}: raised {str(raised[0].get('exception_message'))[:300]}"
    found = [r.result or {} for r in failed]
    if found[0].get("unexpected_count") is not None:
        count = sum(f["unexpected_count"] for f in found)
        examples = [str(v)[:80] for f in found for v in (f.get("partial_unexpected_list") or [])][:3]
        return f"{head}: {count} unexpected, e.g. {examples}"
    return f"{head}: observed {found[0].get('observed_value')!r}"


@collector_paused()
def check_release(prepared: PreparedRelease, max_bytes: int = ROWS_BYTES) -> dict:
    """Every release table against its suite: {suite: {success, expectations, failed, failures}}; row-local
    expectations see runs of rows holding at most `max_bytes` of the columns they read.

    The cyclic collector is paused meanwhile: GX's modules alone are 250,000 objects every full collection
    walks again (0.25 s each), and the suites' allocations started enough of them to take a quarter of their
    time on the mirror's four subsets (14.7 s with it, 11.4 and 11.6 s paused, the same peak memory:
    bench/release_time.py).
    What the suites free is freed by reference counting; the few cycles they leave wait for the collector."""
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
        report[name] = run_suite(load_suite(name), rows, schema, prepared.manifest, max_bytes)
    return report


def failed_suites(quality: dict) -> dict[str, list[str]]:
    """The failures of each suite that did not pass (what blocks a release)."""
    return {name: r["failures"] for name, r in quality.items() if not r["success"]}
