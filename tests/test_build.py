"""The whole asset graph on a miniature mirror the tests write: release contents, reconciliation,
determinism, immutability of versions, and rerunning one stage from stored upstream values."""

import hashlib
import json
import pickle
import shutil

import dagster as dg
import matplotlib.image
import pyarrow.parquet as pq
import pytest

from assets.spider import PARTITION_DIGEST
from pipelines.cli import build, execute, failure_messages, outcome, validate
from pipelines.definitions import build_definitions
from pipelines.freshness import build_plan
from pipelines.stages import NAMES_THE_RELEASE, step_stage
from plbench.release_report import PNG_SIGNATURE
from tests.fixtures import MBPP, SPIDER_DEV


@pytest.fixture(scope="module")
def setup(fixture_build):
    """The session's one build of the miniature mirror (tests/conftest.py)."""
    return fixture_build


def _release(config, version="t1"):
    path = config.out_dir / version
    manifest = json.loads((path / "manifest.json").read_text())
    tasks = pq.read_table(path / "tasks.parquet").to_pylist()
    rejections = pq.read_table(path / "rejections.parquet").to_pylist()
    return path, manifest, tasks, rejections


def test_counts_reconcile_per_subset_and_dialect(setup):
    config, _ = setup
    _, manifest, tasks, rejections = _release(config)
    mbpp = manifest["subsets"]["mbpp"]
    assert mbpp["input"] == len(MBPP) + 1  # + the malformed line
    assert mbpp["released"] == {"oracle": 9, "postgres": 9}
    assert mbpp["rejected"] == {
        "inconsistent_types": 1,
        "malformed_record": 1,
        "needs_setup_code": 1,
        "non_literal_expression": 1,
    }
    assert mbpp["rejected_by_dialect"] == {"oracle": {"unsupported_value": 1}, "postgres": {"unsupported_value": 1}}
    assert mbpp["cases_dropped"] == {}
    assert mbpp["cases_dropped_by_dialect"]["oracle"] == {"value_out_of_range": 1}  # big(40) in Oracle only
    assert all(all(v.values()) for v in (c["reconciles"] for c in manifest["subsets"].values()))
    plus = manifest["subsets"]["mbpp_plus"]
    assert plus["input"] == 4 and plus["released"] == {"oracle": 3, "postgres": 3}
    assert plus["rejected"] == {"reference_timeout": 1}
    assert plus["cases_dropped"] == {"case_type_mismatch": 1, "reference_raised": 1}
    assert manifest["diff"] is None  # the first release in its folder
    task_ids = {(r["task_id"], r["dialect"]) for r in tasks}
    assert {("mbpp/12", "postgres"), ("mbpp/12", "oracle")} <= task_ids
    oracle_big = next(r for r in tasks if r["task_id"] == "mbpp/12" and r["dialect"] == "oracle")
    assert [c["args"] for c in json.loads(oracle_big["test_cases"])] == [[2]]
    assert any(r["source_id"] == "12" and r["dialect"] == "oracle" and r["level"] == "case" for r in rejections)
    assert not {("mbpp/11", "postgres"), ("mbpp/11", "oracle")} & task_ids
    positive = next(r for r in tasks if r["task_id"] == "mbpp/13" and r["dialect"] == "postgres")
    generated = [c for c in json.loads(positive["test_cases"]) if c["origin"].startswith("generated[")]
    assert generated and generated[0]["expected"] == 0  # a constant candidate returning 1 now fails
    assert {r["reason_code"] for r in rejections if r["level"] == "task"} >= {"malformed_record", "reference_timeout"}


def _succeeded(instance, run) -> set[str]:
    """The keys of the steps that succeeded in the run."""
    return {e.step_key for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS)}


def _stages(steps: set[str]) -> set[str]:
    """The stages the steps worked for (a task-sharded asset's steps as the asset)."""
    return {step_stage(step) for step in steps}


def test_a_build_in_which_nothing_changed_runs_nothing_and_a_moved_release_reruns_only_the_release(
    setup, tmp_path, capsys
):
    config, instance = setup
    runs = instance.get_runs_count()
    assert build(config, instance) == 0
    assert instance.get_runs_count() == runs  # every stored value is fresh: no run at all
    assert "release t1 up to date (nothing changed since run" in capsys.readouterr().out
    moved = config.with_(out_dir=tmp_path)  # where the release goes is read by the release stages only
    partitions = instance.get_dynamic_partitions("database")
    outdated = {k.to_user_string() for k in build_plan(build_definitions(moved), instance, partitions).outdated}
    assert outdated == {"validation_reports", "release"}  # the prepared release is reused, not graded again
    assert build(moved, instance) == 0
    [run] = instance.get_runs(limit=1)
    assert _succeeded(instance, run) == outdated
    for table in ("tasks.parquet", "rejections.parquet", "types.parquet", "databases.parquet"):
        assert (tmp_path / "t1" / table).read_bytes() == (config.out_dir / "t1" / table).read_bytes()


# MBPP's, the procedures' seeds, ILE on them, and a stage assets/subsets.py makes from a subset's own
@pytest.mark.parametrize("stage", ["mbpp_signatures", "procedure_seeds", "procedural_ile", "procedures_tasks"])
def test_a_fix_that_changes_no_value_reruns_its_stage_alone(setup, capsys, monkeypatch, stage):
    import pipelines.definitions

    config, instance = setup
    assert build(config, instance, quiet=True) == 0  # what earlier tests moved, back as this build makes it
    capsys.readouterr()
    key = dg.AssetKey(stage)
    with_settings = pipelines.definitions._with_settings

    def fixed(spec, *args):  # the stage's code changed (a fix), what it makes did not
        spec = with_settings(spec, *args)
        return spec.replace_attributes(code_version=f"{spec.code_version}-fix") if spec.key == key else spec

    monkeypatch.setattr(pipelines.definitions, "_with_settings", fixed)
    runs = instance.get_runs_count()
    assert build(config, instance, output="json") == 0
    summary = json.loads(capsys.readouterr().out)
    [run] = instance.get_runs(limit=1)
    assert instance.get_runs_count() == runs + 1 and summary["runs"] == [run.run_id]
    checks = {f"{stage}_{c.name}" for c in build_definitions(config).resolve_asset_graph().get(key).check_keys}
    assert _succeeded(instance, run) == {stage, *checks}  # its value came out as it was: nothing else ran
    assert run.tags["plbench/wave"] == "1"
    assert summary["up_to_date"] and summary["release"] == str(config.out_dir / "t1")
    monkeypatch.undo()
    assert build(config, instance, quiet=True) == 0  # the stage as its code is, for the tests after this one


def test_validation_is_reported_per_dialect_and_never_invented_for_oracle(setup):
    config, _ = setup
    _, manifest, tasks, _ = _release(config)
    pg = manifest["validation"]["mbpp"]["postgres"]
    assert pg["replay"]["ran"] and pg["replay"]["engine"].startswith("PostgreSQL ")
    assert pg["replay"]["failed"] == 0 and pg["mutants"]["killed"] == pg["mutants"]["total"] > 0
    oracle = manifest["validation"]["mbpp"]["oracle"]["replay"]
    assert oracle == {"ran": False, "reason": "PLBENCH_ORACLE_DSN is not set: no Oracle server configured"}
    trip = manifest["validation"]["mbpp"]["postgres"]["roundtrip"]
    assert trip["ran"] and trip["values"] == trip["equal"] > 0 and trip["tasks_with_mismatches"] == []
    assert manifest["validation"]["mbpp"]["oracle"]["roundtrip"]["ran"] is False
    statuses = {(r["dialect"], r["replay_status"]) for r in tasks if r["subset"] != "spider2"}
    assert statuses == {("postgres", "passed"), ("oracle", "not_run")}
    assert {r["replay_status"] for r in tasks if r["subset"] == "spider2"} == {"not_run"}  # no source data here


def test_task_rows_carry_the_artifacts_and_provenance(setup):
    config, _ = setup
    _, manifest, tasks, _ = _release(config)
    row = next(r for r in tasks if r["task_id"] == "mbpp/2" and r["dialect"] == "postgres")
    signature = json.loads(row["signature"])
    assert signature["renamed"] == {"order": "order_"}
    assert signature["returns"] == {"python_type": "tuple[int, str]", "sql_type": "plb_rec2_i8_txt"}
    assert row["setup_sql"] == "CREATE TYPE plb_rec2_i8_txt AS (f1 bigint, f2 text);\n"
    assert "CREATE OR REPLACE FUNCTION pick(order_ bigint[])" in row["scaffold"]
    assert row["test_block"].startswith("DO $plb$") and "PLBENCH_SUMMARY" in row["test_block"]
    assert json.loads(row["test_cases"])[0] == {
        "args": [[3, 1]],
        "expected": {"$tuple": [1, "min"]},
        "origin": "test_list[0]",
    }
    assert row["raw_sha256"] == manifest["inputs"]["mbpp/mbpp.jsonl"] and row["build_id"] == manifest["build_id"]
    plus = next(r for r in tasks if r["task_id"] == "mbpp_plus/1" and r["dialect"] == "oracle")
    assert any("mutates its arguments" in n for n in plus["notes"])
    assert len(json.loads(plus["test_cases"])) == 4  # the bool-list plus input does not fit list[int]


def test_a_version_is_never_overwritten_and_a_rerun_making_its_very_tables_leaves_it_as_it_is(setup, tmp_path):
    """(That the same inputs give byte-identical release and validation files is tests/test_scale.py's
    celery build, from fresh storage, against this build.)"""
    config, instance = setup
    written = config.out_dir / config.version
    before = {p: p.read_bytes() for p in written.rglob("*") if p.is_file()}
    result = execute(config, [["release"]], instance=instance)  # from the stored values: only the release writes
    assert result.success and outcome(result)["unchanged"] is True
    assert {p: p.read_bytes() for p in written.rglob("*") if p.is_file()} == before  # its manifest and report too
    assert not [p for p in config.out_dir.iterdir() if p.name.startswith(".")]  # no staging left behind

    elsewhere = tmp_path / "releases"
    shutil.copytree(written, elsewhere / written.name)
    (elsewhere / written.name / "rejections.parquet").write_bytes(b"changed on disk")
    result = execute(config.with_(out_dir=elsewhere), [["release"]], instance=instance)
    assert not result.success
    [(step, message)] = failure_messages(result)
    assert step == "release" and "already exists with other tables (rejections.parquet)" in message
    assert (elsewhere / written.name / "rejections.parquet").read_bytes() == b"changed on disk"
    assert not [p for p in elsewhere.iterdir() if p.name.startswith(".")]


def test_replay_alone_reruns_from_stored_upstream_values_then_the_release_as_a_build_would(setup, capsys):
    config, instance = setup
    assert validate(config.with_(version="t2"), "replay", ["postgres"], instance=instance) == 0
    release_run, rerun = instance.get_runs(limit=2)
    assert rerun.job_name == "rerun_replay"  # the run list says what the run did
    assert (rerun.tags["plbench/stage"], rerun.tags["plbench/version"]) == ("replay", "t2")
    steps = _succeeded(instance, rerun)
    assert "replay_validation_postgres.replay_validation_postgres_shard[shard_0]" in steps  # in process: one shard
    # upstream values are read back from storage, not recomputed: no step of theirs ran
    assert _stages(steps) == {"replay_validation_postgres", "replay_validation_postgres_retention_floor"}
    # the shards' step outputs are gone once merged: only the assets' own values stay stored
    assert not {p.name for p in config.storage_dir.iterdir()} & {r.run_id for r in instance.get_runs()}
    # The replay came out the same, so no stage between it and the release runs again, nor the prepared
    # release (graded and checked): only what names the release, which the new version outdates.
    assert release_run.job_name == "rebuild_release"
    assert _succeeded(instance, release_run) == set(NAMES_THE_RELEASE)
    _, manifest, _, _ = _release(config, "t2")
    assert manifest["subsets"]["mbpp"]["released"]["postgres"] == 9
    assert manifest["diff"] == {"against": "t1", "added": 0, "removed": 0, "changed": 0}
    assert "release t2 written to" in capsys.readouterr().out


def test_each_subset_validation_is_a_stage_a_researcher_reruns_alone(setup):
    config, instance = setup
    releases = sorted(config.out_dir.iterdir())
    assert validate(config.with_(version=None), "procedures", ["postgres", "oracle"], instance=instance) == 0
    assert sorted(config.out_dir.iterdir()) == releases  # no --version: no release
    [rerun] = instance.get_runs(limit=1)
    assert rerun.job_name == "rerun_procedures"
    assert _succeeded(instance, rerun) == {"procedures_validation"}


def test_spider_databases_are_normalized_loaded_and_reported(setup):
    config, _ = setup
    path, manifest, _, _ = _release(config)
    spider1 = manifest["normalization"]["spider1"]
    assert spider1["databases"] == 2 and spider1["loaded"] == {"postgres": 1}
    assert spider1["failed"] == {"gone": "its SQLite file is not in the raw sources"}
    assert spider1["tables"] == 2 and spider1["rows"] == 9
    assert spider1["oracle"]["execution"]["ran"] is False and spider1["oracle"]["static_problems"] == 0
    dev = spider1["gold_equivalence"]["postgres"]
    assert dev["total"] == len(SPIDER_DEV) - 1 and dev["mismatch"] == {"source_error": 1}
    databases = pq.read_table(path / "databases.parquet").to_pylist()
    assert {(d["database"], d["dialect"]) for d in databases if d["source"] == "spider1"} == {
        ("shop", "postgres"),
        ("shop", "oracle"),
    }
    pg = next(d for d in databases if d["dialect"] == "postgres")
    assert pg["loaded"] and pg["verified"] and pg["rows"] == 9
    assert pg["data_path"] == "spider1/shop/postgres/data.sql"
    assert (config.normalized_dir / pg["data_path"]).read_text().startswith("COPY customer")
    decisions = json.loads((config.normalized_dir / "spider1/shop/postgres/decisions.json").read_text())
    assert pg["decisions"] == json.dumps(decisions, sort_keys=True)  # the file, read into the release
    assert {d["table"] for d in decisions if "target_type" in d} == {"customer", "order"}
    oracle = next(d for d in databases if d["dialect"] == "oracle")
    assert oracle["loaded"] is None and oracle["not_run"].startswith("PLBENCH_ORACLE_DSN is not set")
    assert '"ORDER"' in oracle["ddl"]  # a reserved word stays a quoted name
    gold = pq.read_table(path / "gold_queries.parquet").to_pylist()
    assert len(gold) == len(SPIDER_DEV) - 1 + 1  # the dev questions on shop, and its one train query
    failed = next(g for g in gold if g["class"] == "source_error")
    assert failed["sql"] == "SELECT nonexistent FROM customer" and "no such column" in failed["detail"]
    assert all(g["postgres_sql"] and g["oracle_sql"] for g in gold if g["class"] == "identical")
    texts = (config.normalized_dir / "spider1/shop/oracle/gold_queries.sql").read_text()
    assert texts.count("-- dev ") == len(SPIDER_DEV) - 1 and "FROM CUSTOMER" in texts


def test_each_database_partition_carries_its_own_metadata(setup):
    _, instance = setup
    for dialect, shown in (("postgres", "verified"), ("oracle", "not_run")):
        records = instance.fetch_materializations(dg.AssetKey(f"normalized_databases_{dialect}"), limit=50).records
        latest = {}
        for record in records:  # newest first
            latest.setdefault(record.partition_key, record.asset_materialization.metadata)
        shop = latest["spider1.shop"]
        assert shop["tables"].value == 2 and shop["rows"].value == 9 and shown in shop
        assert set(latest) == set(instance.get_dynamic_partitions("database"))


def test_a_run_plans_each_database_stage_once_for_all_its_partitions(setup):
    _, instance = setup
    run = instance.get_runs()[-1]  # the fixture's build, the first run (later tests rerun stages)
    planned = [
        event.dagster_event.event_specific_data
        for event in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED)
        if event.dagster_event.asset_key.path[0].startswith("normalized_databases_")
    ]
    partitions = set(instance.get_dynamic_partitions("database"))
    assert len(partitions) > 1 and len(planned) == 2, planned  # one event a stage, not one a partition
    assert all(p.partition is None and set(p.partitions_subset.get_partition_keys()) == partitions for p in planned)


def test_spider_plsql_tasks_are_validated_on_postgres_and_reconcile(setup):
    config, _ = setup
    _, manifest, tasks, rejections = _release(config)
    counts = manifest["subsets"]["spider_plsql"]
    assert counts["input"] == len(SPIDER_DEV)
    assert counts["reconciles"] == {"oracle": True, "postgres": True}
    assert counts["rejected"]["database_missing"] == 1 and counts["rejected"]["gold_source_error"] == 1
    released = counts["released"]["postgres"]
    assert released == len(SPIDER_DEV) - sum(counts["rejected"].values())
    rows = [t for t in tasks if t["subset"] == "spider_plsql"]
    pg = next(t for t in rows if t["source_id"] == "1" and t["dialect"] == "postgres")
    assert json.loads(pg["test_cases"]) == {
        "expected_lines": ["Ann", "Bob", "Cé'line", 'Dan "the man"'],
        "ordered": True,
    }
    assert pg["replay_status"] == "passed" and pg["database"] == "shop"
    assert "RAISE NOTICE" in pg["prompt"] and "CREATE TABLE customer" in pg["prompt"]
    avg = next(t for t in rows if t["source_id"] == "2" and t["dialect"] == "postgres")
    assert json.loads(avg["test_cases"])["expected_lines"] == ["2.6167"]  # (4.5 + 3.25 + 0.1) / 3, 4 places
    oracle = next(t for t in rows if t["source_id"] == "1" and t["dialect"] == "oracle")
    assert oracle["replay_status"] == "not_run" and "DBMS_OUTPUT.PUT_LINE" in oracle["reference_code"]
    assert {r["reason_code"] for r in rejections if r["subset"] == "spider_plsql"} >= {"database_missing"}


def test_one_database_partition_rebuilds_alone(setup):
    config, instance = setup
    assert not list(config.normalized_dir.rglob("*.pkl"))  # the reports travel through Dagster, not beside the SQL
    stored = config.storage_dir / "normalized_databases_postgres/spider1.shop"
    before = stored.stat().st_mtime_ns
    result = execute(config, [["normalized_databases_postgres"]], instance=instance, partition="spider1.shop")
    assert result.success
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"}
    assert ran == {"normalized_databases_postgres"}
    assert stored.stat().st_mtime_ns > before
    assert pickle.loads(stored.read_bytes()).load.verified
    materialized = [e for e in result.get_asset_materialization_events()]
    assert [e.materialization.partition for e in materialized] == ["spider1.shop"]
    assert materialized[0].materialization.metadata["verified"].value is True

    def outdated() -> set[str]:
        partitions = instance.get_dynamic_partitions("database")
        return {k.to_user_string() for k in build_plan(build_definitions(config), instance, partitions).outdated}

    downstream = {"normalization_report", "spider_plsql_tasks"}
    assert not outdated() & downstream  # the partition holds what it held when they ran
    # the partition as it is but for its content: same code version and tags, another digest
    key = dg.AssetKey("normalized_databases_postgres")
    [latest] = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=["spider1.shop"]), limit=1
    ).records
    same = latest.asset_materialization
    instance.report_runless_asset_event(
        same._replace(metadata={**same.metadata, PARTITION_DIGEST: dg.MetadataValue.text("other")})
    )
    assert outdated() >= downstream
    assert execute(config, [["normalized_databases_postgres"]], instance=instance, partition="spider1.shop").success
    assert not outdated() & downstream  # the same content as before they ran, again


def test_crosscheck_runs_the_configured_candidates_and_marks_each_task(setup):
    config, _ = setup
    _, manifest, tasks, _ = _release(config)
    entry = manifest["crosscheck"]
    assert entry["ran"] and entry["source"] == "file:solutions.jsonl"
    group = entry["groups"]["mbpp/postgres"]
    assert group["candidates"] == 2 and group["pass_fail_level"] == {"agree": 1, "of": 2, "rate": 0.5}
    assert [d["task_id"] for d in group["disagreements"]] == ["mbpp/6"]
    status = {(r["task_id"], r["dialect"]): r["crosscheck_status"] for r in tasks}
    assert status[("mbpp/1", "postgres")] == "agree" and status[("mbpp/6", "postgres")] == "disagree"
    assert status[("mbpp/1", "oracle")] == "not_run"


def test_every_release_table_passed_its_quality_suite(setup):
    config, _ = setup
    _, manifest, tasks, _ = _release(config)
    quality = manifest["quality"]
    assert set(quality) == {"tasks", "rejections", "types", "databases", "gold_queries"}
    assert all(s["success"] and s["failed"] == 0 and s["expectations"] > 0 for s in quality.values()), quality
    accuracy = manifest["metadata_accuracy"]
    assert accuracy["rows"] == len(tasks) and accuracy["plainly_wrong_count"] == 0
    # Every claim is what the checked code shows: a Spider 2.0 gold that did not run on the samples is kept
    # as the bare query (bq001, both dialects), whose rows claim only the scaffold's anonymous block.
    assert accuracy["constructs_over"] == accuracy["constructs_under"] == {}, accuracy["examples"]
    bare = [t for t in tasks if t["subset"] == "spider2" and t["source_id"] == "bq001"]
    # its Oracle row fails the grammar check when that runs (BigQuery's three-part wildcard table name)
    assert len(bare) == (1 if manifest["oracle_syntax"]["ran"] else 2)
    assert all(list(t["plsql_constructs"]) == ["anonymous_block"] for t in bare)


def test_the_release_report_plots_are_pngs_listed_in_the_manifest_and_shown_in_the_ui(setup):
    config, instance = setup
    path, manifest, _, _ = _release(config)
    names = ("constructs", "funnel", "rejections", "timings", "types")
    assert sorted(manifest["report"]) == [f"report/{n}.png" for n in names]
    for name, sha256 in manifest["report"].items():
        data = (path / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and hashlib.sha256(data).hexdigest() == sha256
        height, width, _ = matplotlib.image.imread(path / name).shape  # decodes as a PNG
        assert height > 100 and width > 100
    metadata = instance.get_latest_materialization_event(dg.AssetKey("release")).asset_materialization.metadata
    for stem in names:
        assert metadata[f"report_{stem}"].value.startswith(f"![{stem}](data:image/png;base64,")
        assert metadata[f"report_{stem}_path"].value.endswith(f"report/{stem}.png")


def test_every_oracle_statement_is_parsed_and_a_row_that_fails_is_rejected(setup):
    config, _ = setup
    _, manifest, tasks, rejections = _release(config)
    section = manifest["oracle_syntax"]
    if not section["ran"]:  # no Node or no installed parser here: said so, nothing counted as parsed
        assert section["reason"] and "parsed" not in section
        return
    kinds = {kind for by_kind in section["by_subset"].values() for kind in by_kind}
    assert {"setup", "scaffold", "test_block", "reference", "type_ddl", "database_ddl", "gold_query"} <= kinds
    # bq001's Oracle gold keeps BigQuery's three-part wildcard name: the one statement that fails
    (failure,) = section["failures"]
    assert failure["owner"] == "spider2/bq001" and '."events_*"' in failure["detail"]
    assert section["parsed"] == section["statements"] - 1
    (rejected,) = [r for r in rejections if r["reason_code"] == "oracle_syntax"]
    assert (rejected["source_id"], rejected["dialect"], rejected["stage"]) == ("bq001", "oracle", "oracle_syntax")
    assert ("spider2/bq001", "oracle") not in {(t["task_id"], t["dialect"]) for t in tasks}


def test_spider2_records_carry_gold_metadata_and_say_what_was_not_run(setup):
    config, _ = setup
    path, manifest, tasks, rejections = _release(config)
    lite = manifest["normalization"]["spider2_lite"]
    assert lite["failed"] == {} and lite["loaded"]["postgres"] == lite["databases"] == 3
    counts = manifest["subsets"]["spider2"]
    assert counts["input"] == 4 and counts["rejected"] == {"database_not_found": 1, "no_gold_sql": 1}
    assert counts["reconciles"] == {"oracle": True, "postgres": True}
    assert manifest["validation"]["spider2"]["postgres"]["replay"]["ran"] is False
    rows = {(t["source_id"], t["dialect"]): t for t in tasks if t["subset"] == "spider2"}
    local = rows[("local001", "postgres")]
    assert local["replay_status"] == "not_run" and "ran without error: yes" in local["replay_detail"]
    assert json.loads(local["test_cases"])["reference_results"] == {"local001.csv": "name,total\nZoë,4.0\n"}
    assert local["tables_required"] == ["customers", "orders"]  # as the PostgreSQL schema names them
    assert {"customers.name", "orders.amount", "orders.customer_id"} <= set(local["columns_required"])
    assert rows[("local001", "oracle")]["tables_required"] == ["CUSTOMERS", "ORDERS"]
    assert "External knowledge (rules.md)" in local["prompt"] and local["database"] == "sqlite.SQLITE_SHOP"
    assert local["reference_code"].startswith("DO $plbench$")  # the gold ran on the samples: a block over it
    bq = rows[("bq001", "postgres")]
    assert "ran without error: no" in bq["replay_detail"]  # a wildcard table
    assert not bq["reference_code"].startswith("DO")  # output types unknown: the transpiled gold itself
    databases = pq.read_table(path / "databases.parquet").to_pylist()
    assert {d["source"] for d in databases} == {"spider1", "spider2_lite"}


def test_mbpp_ile_rows_carry_proposer_and_rounds_and_the_manifest_the_operator_rates(setup):
    config, _ = setup
    _, manifest, tasks, rejections = _release(config)
    counts = manifest["subsets"]["mbpp_ile"]
    assert counts["reconciles"] == {"oracle": True, "postgres": True}
    assert counts["input"] == manifest["subsets"]["mbpp"]["input"] - 4  # the MBPP tasks that were typed
    ile = [r for r in tasks if r["subset"] == "mbpp_ile" and r["dialect"] == "postgres"]
    assert len(ile) == counts["released"]["postgres"] >= 5
    assert all(r["proposer"] == "deterministic" and r["ile_rounds"] in (1, 2) for r in ile)
    assert all("\n\nAdditional requirements:\n1. " in r["prompt"] for r in ile)
    assert all(r["replay_status"] == "passed" and r["mutants_killed"] == r["mutants_total"] == 3 for r in ile)
    assert all(r["proposer"] is None and r["ile_rounds"] is None for r in tasks if r["subset"] == "mbpp")
    operator = manifest["operators"]["ile_mbpp"]
    assert operator["proposals"] == operator["accepted"] + operator["rejected"]
    assert operator["accepted"] >= sum(r["ile_rounds"] for r in ile)
    assert operator["rejected"] == sum(operator["rejected_by_reason"].values())
    for row in (r for r in ile if r["task_id"] == "mbpp_ile/1"):  # sort_list, as the source
        assert row["python_reference"].startswith("def sort_list_base(xs):")
        assert "\ndef sort_list(xs" in row["python_reference"]
    assert {r["reason_code"] for r in rejections if r["subset"] == "mbpp_ile" and r["level"] == "task"} <= {
        "no_round_accepted",
        "reference_fails_own_inputs",
        "unsupported_value",
    }


def test_the_releases_own_spider_reference_code_scores_one_and_trivial_candidates_fail(setup, pg_engine):
    from plbench.evaluate import Candidate, evaluate, read_release, task_kind
    from plbench.grading.results import summarize
    from plbench.grading.trivial import run_trivial

    config, _ = setup
    path, manifest, tasks, rejections = _release(config)
    spider = [t for t in tasks if t["subset"] == "spider_plsql" and t["dialect"] == "postgres"]
    candidates = [Candidate(t["task_id"], "postgres", t["reference_code"]) for t in spider]
    summary = summarize(evaluate(path, candidates, {"postgres": pg_engine}))["spider_plsql/postgres"]
    assert summary["tasks"] == len(spider) > 0 and summary["suite_pass@1"] == 1.0
    # The release gate ran every subset's trivial candidates: no released block task passes one, and
    # the function tasks a constant passes are the ones the manifest lists.
    gate = manifest["trivial_candidates"]
    assert set(gate) >= {"mbpp", "mbpp_plus", "spider_plsql", "spider2"} and all(g["ran"] for g in gate.values())
    results = run_trivial(tasks, pg_engine, read_release(path).schemas)
    assert len(results) == sum(t["dialect"] == "postgres" for t in tasks)
    kinds = {(t["task_id"], t["dialect"]): task_kind(t) for t in tasks}
    passed = {key for key, verdicts in results.items() if any(verdicts.values())}
    assert {key for key in passed if kinds[key] == "block"} == set()
    listed = {
        i
        for section in gate.values()
        for group in section["groups"].values()
        for entry in group["candidates"].values()
        for i in entry["passed"]
    }
    assert {key[0] for key in passed} == listed
    trivial = [r for r in rejections if r["reason_code"] == "trivial_candidate_passes"]
    assert {r["subset"] for r in trivial} <= {"spider_plsql", "spider2"}


def test_procedures_are_in_the_default_build_and_their_references_score_one(setup, pg_engine):
    from plbench.evaluate import Candidate, evaluate
    from plbench.grading.results import summarize

    config, _ = setup
    path, manifest, tasks, rejections = _release(config)
    counts = manifest["subsets"]["procedures"]
    assert counts["reconciles"] == {"oracle": True, "postgres": True}
    rows = [t for t in tasks if t["subset"] == "procedures"]
    postgres = [t for t in rows if t["dialect"] == "postgres"]
    assert counts["released"] == {"postgres": len(postgres), "oracle": len(rows) - len(postgres)} and postgres
    assert {t["replay_status"] for t in rows if t["dialect"] == "oracle"} == {"not_run"}
    assert {t["scenario"] for t in postgres} >= {"a1", "a2", "a3", "a4", "b1", "b3", "b4", "c2"}
    section = manifest["procedures"]
    assert section["seeds"]["validated"] > 0 and section["seeds"]["databases"] == 1
    gate = manifest["trivial_candidates"]["procedures"]["groups"]["procedures/postgres"]
    assert gate["tasks"] == len(postgres) and all(
        c == {"ran": len(postgres), "passed": []} for c in gate["candidates"].values()
    )
    if manifest["oracle_syntax"]["ran"]:
        parsed = manifest["oracle_syntax"]["by_subset"]["procedures"]
        assert {kind: v["failed"] for kind, v in parsed.items()} == dict.fromkeys(parsed, 0)
        assert set(parsed) == {"call", "reference", "scaffold", "setup"}
    candidates = [Candidate(t["task_id"], "postgres", t["reference_code"]) for t in postgres]
    summary = summarize(evaluate(path, candidates, {"postgres": pg_engine}))["procedures/postgres"]
    assert summary["tasks"] == len(postgres) and summary["suite_pass@1"] == 1.0


def test_procedures_ile_and_multiturn_are_in_the_default_build(setup, pg_engine):
    from plbench.evaluate import Candidate, evaluate, read_tasks
    from plbench.grading.episodes import episodes_of
    from plbench.grading.results import summarize

    config, _ = setup
    path, manifest, tasks, _ = _release(config)
    for name in ("procedures_ile", "multiturn"):
        assert manifest["subsets"][name]["reconciles"] == {"oracle": True, "postgres": True}
        gate = manifest["trivial_candidates"][name]["groups"][f"{name}/postgres"]
        assert all(c["passed"] == [] for c in gate["candidates"].values())
    ile = [t for t in tasks if t["subset"] == "procedures_ile" and t["dialect"] == "postgres"]
    assert ile and all(t["proposer"] == "deterministic" and t["ile_rounds"] >= 1 for t in ile)
    assert manifest["operators"]["ile_procedures"]["proposals"] >= len(ile)
    section = manifest["procedures_ile"]
    assert section["enhanced"] == len(ile) and section["seeds"] == manifest["subsets"]["procedures_ile"]["input"]
    turns = [t for t in tasks if t["subset"] == "multiturn" and t["dialect"] == "postgres"]
    assert turns and all(3 <= t["turn_count"] <= 5 and t["turns"] == t["turn_count"] for t in turns)
    assert len(turns) == sum(t["turn_count"] for t in turns if t["turn_index"] == 1)  # every turn of an episode
    assert len({t["conversation_id"] for t in turns}) == manifest["multiturn"]["episodes"]
    candidates = [Candidate(t["task_id"], "postgres", t["reference_code"]) for t in ile + turns]
    rows = evaluate(path, candidates, {"postgres": pg_engine})
    summary = summarize(rows, episodes_of(read_tasks(path)))
    assert summary["procedures_ile/postgres"]["suite_pass@1"] == 1.0
    mt = summary["multiturn/postgres"]
    assert (mt["episode_pass@1"], mt["turn_suite_pass@1"], mt["episodes"]) == (
        1.0,
        1.0,
        manifest["multiturn"]["episodes"],
    )


def test_interactive_rows_carry_ledgers_and_their_direct_twins_are_released(setup):
    config, _ = setup
    _, manifest, tasks, rejections = _release(config)
    counts = manifest["subsets"]["interactive"]
    assert counts["reconciles"] == {"oracle": True, "postgres": True}
    rows = [t for t in tasks if t["subset"] == "interactive"]
    released = {(t["task_id"], t["dialect"]) for t in tasks}
    assert (counts["input"], counts["released"]) == (2, {"oracle": 2, "postgres": 2})  # the fixture's 2 seeds
    # both seeds were enhanced by procedural ILE: their final rounds are perturbed, twins their procedures_ile tasks,
    # and each masked clause is proven by the previous round's reference
    assert {k: manifest["interactive"][k] for k in ("variants_of", "omissions_proven_by_previous_round")} == {
        "variants_of": {"ile_final_round": 2, "plain_seed": 0},
        "omissions_proven_by_previous_round": 2,
    }
    assert manifest["interactive"]["hidden_facts_by_op"] == {"contradiction": 2, "jargon": 2, "mask": 2}
    assert manifest["operators"]["information_omission"]["accepted"] == 2
    assert rows and all((t["direct_task_id"], t["dialect"]) in released for t in rows)
    assert {(t["direct_task_id"], t["ile_rounds"]) for t in rows} == {
        ("procedures_ile/shop/train/1/result_table", 2),
        ("procedures_ile/shop/train/1/status_update", 2),
    }
    assert all(json.loads(t["ledger"]) and t["proposer"] == "deterministic" for t in rows)
    gate = manifest["trivial_candidates"]["interactive"]["groups"]["interactive/postgres"]
    postgres = [t for t in rows if t["dialect"] == "postgres"]
    assert gate["tasks"] == len(postgres) and all(
        c == {"ran": len(postgres), "passed": []} for c in gate["candidates"].values()
    )


def test_each_validation_stage_has_its_report_beside_the_release(setup):
    config, _ = setup
    _, manifest, _, _ = _release(config)
    folder = config.validation_dir / "t1"
    assert sorted(p.name for p in folder.iterdir()) == [
        "crosscheck.json",
        "normalization.json",
        "quality.json",
        "replay.oracle.json",
        "replay.postgres.json",
        "roundtrip.oracle.json",
        "roundtrip.postgres.json",
    ]
    replay = json.loads((folder / "replay.postgres.json").read_text())
    assert replay["ran"] and replay["engine"].startswith("PostgreSQL ") and replay["failed"] == 0
    mbpp_ids = {t["task_id"] for t in replay["tasks"]}
    assert len(mbpp_ids) == replay["passed"] and "mbpp/2" in mbpp_ids and "seconds" not in replay
    oracle = json.loads((folder / "replay.oracle.json").read_text())
    assert oracle == {
        "dialect": "oracle",
        "ran": False,
        "reason": "PLBENCH_ORACLE_DSN is not set: no Oracle server configured",
        "mutants": None,
        "tasks": [],
    }
    normalization = json.loads((folder / "normalization.json").read_text())
    assert normalization["sources"] == manifest["normalization"]
    shop = next(d for d in normalization["databases"] if d["database"] == "shop" and d["dialect"] == "postgres")
    assert shop["verified"] is True and shop["rows"] == 9
    assert json.loads((folder / "crosscheck.json").read_text()) == manifest["crosscheck"]
    assert json.loads((folder / "quality.json").read_text())["suites"] == manifest["quality"]
