"""The subset protocol: a subset the test registers flows through the release and the quality suites,
and the trivial candidates each built-in subset names are well-formed code that fails its task."""

import json

import pyarrow.parquet as pq
import pytest

from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.quality import check_release, failed_suites
from plbench.records import Rejection
from plbench.release import prepare_release, publish
from plbench.spider.plsql_tasks import SCAFFOLDS
from plbench.subsets import SUBSETS, Subset, SubsetRelease
from plbench.taskrow import TaskRow


class EchoSubset(Subset):
    """Tasks that print one number: two inputs, one released in both dialects, one rejected."""

    name = "echo"
    source_dataset = "a test's own records"
    licence = "CC0-1.0"
    summary = "blocks that print a number"
    required_columns = ("database",)
    release_inputs = ()

    def release_part(self, config, values) -> SubsetRelease:
        rows = [
            TaskRow(
                task_id="echo/1",
                subset="echo",
                dialect=d,
                source_dataset=self.source_dataset,
                source_id="1",
                database="none",
                prompt="Print 42, then 43.",
                scaffold=SCAFFOLDS[d],
                test_cases=json.dumps({"expected_lines": ["42", "43"], "ordered": True}),
                comparison=json.dumps({"ordered": True}),
                replay_status="not_run",
                replay_detail="no reference run in this test",
                scenario="echo",
            )
            for d in DIALECT_NAMES
        ]
        rejected = [Rejection("echo", "2", "echo_build", "nothing_to_print", "echo/2 has no number")]
        validation = {d: {"replay": {"ran": False, "reason": "a test subset"}} for d in DIALECT_NAMES}
        return SubsetRelease("echo", 2, {"echo/records.jsonl": "0" * 64}, rows, rejected, validation)


@pytest.fixture
def echo(monkeypatch):
    subset = EchoSubset()
    monkeypatch.setitem(SUBSETS, "echo", subset)
    return subset


def test_a_registered_subset_flows_through_release_and_quality_suites(echo, tmp_path):
    config = BuildConfig(out_dir=tmp_path, version="e1")
    prepared = prepare_release(config, [echo.release_part(config, {}), None])
    assert prepared.manifest["subsets"]["echo"]["reconciles"] == {d: True for d in DIALECT_NAMES}
    assert prepared.manifest["subsets"]["echo"]["released"] == {d: 1 for d in DIALECT_NAMES}
    quality = check_release(prepared)
    assert failed_suites(quality) == {} and quality["tasks"]["expectations"] > 10
    path = publish(config, prepared)
    rows = pq.read_table(path / "tasks.parquet").to_pylist()
    assert [(r["task_id"], r["dialect"], r["scenario"]) for r in rows] == [
        ("echo/1", "oracle", "echo"),
        ("echo/1", "postgres", "echo"),
    ]
    assert rows[0]["build_id"] == prepared.manifest["build_id"]
    assert pq.read_table(path / "rejections.parquet").to_pylist()[0]["reason_code"] == "nothing_to_print"
    assert "echo: CC0-1.0" in (path / "README.md").read_text()


def test_the_suites_apply_a_registered_subsets_required_columns_and_name(echo):
    config = BuildConfig(version="e2")
    part = echo.release_part(config, {})
    part.rows[0] = part.rows[0].with_(database=None)
    failures = failed_suites(check_release(prepare_release(config, [part])))["tasks"]
    assert len(failures) == 1 and "'database'" in failures[0] and "subset == 'echo'" in failures[0]
    SUBSETS.pop("echo")
    failures = failed_suites(check_release(prepare_release(config, [echo.release_part(config, {})])))["tasks"]
    assert any("'subset'" in f and "['echo', 'echo']" in f for f in failures)  # no longer a known subset


def test_two_parts_of_one_subset_are_refused(echo):
    config = BuildConfig(version="e3")
    with pytest.raises(ValueError, match="two parts"):
        prepare_release(config, [echo.release_part(config, {}), echo.release_part(config, {})])


def test_a_subset_gets_the_trivial_candidates_of_its_kind_of_task(echo, pg_engine):
    """A block task (no signature): a block printing nothing and one printing only the first line."""
    part = echo.release_part(None, {})
    for row in part.rows:
        assert [name for name, _ in echo.trivial_candidates(row)] == ["prints_nothing", "prints_the_first_line"]
    postgres = dict(echo.trivial_candidates(next(r for r in part.rows if r.dialect == "postgres")))
    with pg_engine.session() as session:
        assert session.execute(postgres["prints_nothing"]).lines == []
        assert session.execute(postgres["prints_the_first_line"]).lines == ["42"]
