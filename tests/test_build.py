"""The whole asset graph on a miniature mirror the tests write: release contents, reconciliation,
determinism, immutability of versions, and rerunning one stage from stored upstream values."""

import json

import dagster as dg
import pyarrow.parquet as pq
import pytest

from pipelines.cli import execute, failure_messages, report
from plbench.config import BuildConfig
from plbench.sandbox import SandboxLimits
from tests.fixtures import MBPP, write_mirror


@pytest.fixture(scope="module")
def setup(tmp_path_factory, pg_engine):
    root = tmp_path_factory.mktemp("mirror")
    catalog = write_mirror(root)
    config = BuildConfig(raw_dir=root, cache_dir=tmp_path_factory.mktemp("cache"),
                         out_dir=tmp_path_factory.mktemp("releases"), catalog=catalog, pg_dsn=pg_engine._dsn,
                         version="t1", min_retention=0.5,
                         sandbox=SandboxLimits(cpu_seconds=5, wall_seconds=15, case_seconds=2))
    instance = dg.DagsterInstance.local_temp(str(tmp_path_factory.mktemp("dagster")),
                                             overrides={"telemetry": {"enabled": False}})
    result = execute(config, instance=instance)
    assert report(result) == 0
    return config, instance


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
    assert mbpp["released"] == {"oracle": 8, "postgres": 8}
    assert mbpp["rejected"] == {"inconsistent_types": 1, "malformed_record": 1, "needs_setup_code": 1,
                                "non_literal_expression": 1}
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
    assert {r["reason_code"] for r in rejections if r["level"] == "task"} >= {"malformed_record", "reference_timeout"}


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
    statuses = {(r["dialect"], r["replay_status"]) for r in tasks}
    assert statuses == {("postgres", "passed"), ("oracle", "not_run")}


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
    assert json.loads(row["test_cases"])[0] == {"args": [[3, 1]], "expected": {"$tuple": [1, "min"]},
                                                "origin": "test_list[0]"}
    assert row["raw_sha256"] == manifest["inputs"]["mbpp/mbpp.jsonl"] and row["build_id"] == manifest["build_id"]
    plus = next(r for r in tasks if r["task_id"] == "mbpp_plus/1" and r["dialect"] == "oracle")
    assert any("mutates its arguments" in n for n in plus["notes"])
    assert len(json.loads(plus["test_cases"])) == 4  # the bool-list plus input does not fit list[int]


def test_the_same_inputs_give_byte_identical_tables_and_versions_are_never_overwritten(setup, tmp_path):
    config, instance = setup
    again = config.with_(out_dir=tmp_path)
    assert report(execute(again, instance=instance)) == 0
    for table in ("tasks.parquet", "rejections.parquet", "types.parquet"):
        assert (tmp_path / "t1" / table).read_bytes() == (config.out_dir / "t1" / table).read_bytes()
    result = execute(config, instance=instance)
    assert not result.success
    [(step, message)] = failure_messages(result)
    assert step == "release" and "already exists: a version is never overwritten" in message
    assert not [p for p in config.out_dir.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_replay_alone_reruns_from_stored_upstream_values(setup):
    config, instance = setup
    result = execute(config.with_(version="t2"), [["replay_validation", "postgres"], ["release"]], instance=instance)
    assert result.success
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"}
    assert ran == {"replay_validation__postgres", "replay_validation__postgres_retention_floor", "release"}
    assert "roundtrip__postgres" not in ran  # read back from storage, not recomputed
    _, manifest, _, _ = _release(config, "t2")
    assert manifest["subsets"]["mbpp"]["released"]["postgres"] == 8
    assert manifest["diff"] == {"against": "t1", "added": 0, "removed": 0, "changed": 0}
