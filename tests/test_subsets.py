"""The subset protocol: a subset the test registers with its stages gets its assets from the factory
(assets/subsets.py) and flows through the graph, the release, the quality suites and `plbench evaluate`;
the trivial candidates a subset names are well-formed code that fails its task."""

import json

import pyarrow.parquet as pq
import pytest

from plbench.config import DIALECT_NAMES, BuildConfig, NotConfigured
from plbench.dialects import DIALECTS
from plbench.evaluate import grade
from plbench.mbpp.artifacts import repr_sql
from plbench.quality import check_release, failed_suites
from plbench.records import Rejection
from plbench.release import prepare_release
from plbench.spider.plsql_tasks import SCAFFOLDS
from plbench.subsets import SUBSETS, SubsetRelease
from plbench.subsets.base import Staged, StagedSubset, Stages
from plbench.taskrow import TaskRow, as_record

RECORDS = [{"id": "1", "numbers": [42, 43]}, {"id": "2", "numbers": []}]
NO_ENGINES = {d: NotConfigured(f"no {d} engine in this test", dialect=d) for d in DIALECT_NAMES}


def echo_ingest(config) -> Staged:
    return Staged(RECORDS, len(RECORDS), len(RECORDS))


def _printing(dialect: str, numbers: list[int]) -> str:
    target = DIALECTS[dialect]
    return target.anonymous_block("", "\n".join(f"  {target.emit_line(repr_sql(str(n)))}" for n in numbers))


def echo_build(config, records: list[dict]) -> Staged:
    """A block task per record and dialect printing its numbers; a record without numbers is rejected."""
    rows, rejected = [], []
    for record in records:
        if not record["numbers"]:
            rejected.append(Rejection("echo", record["id"], "echo_build", "nothing_to_print", "echo/2 has no number"))
            continue
        lines = [str(n) for n in record["numbers"]]
        rows += [
            TaskRow(
                task_id=f"echo/{record['id']}",
                subset="echo",
                dialect=d,
                source_dataset=EchoSubset.source_dataset,
                source_id=record["id"],
                prompt=f"Print {', then '.join(lines)}.",
                scaffold=SCAFFOLDS[d],
                reference_code=_printing(d, record["numbers"]),
                test_cases=json.dumps({"expected_lines": lines, "ordered": True}),
                comparison=json.dumps({"ordered": True}),
                plsql_constructs=("anonymous_block",),
                replay_status="not_run",
                scenario="echo",
            )
            for d in DIALECT_NAMES
        ]
    return Staged(rows, len(records), len({r.task_id for r in rows}), rejected)


def echo_validate(config, rows: list[TaskRow], engines) -> Staged:
    """Each reference block graded as a candidate on its dialect's engine (not_run without one)."""
    validated, validation = [], {}
    for d in DIALECT_NAMES:
        engine, mine = engines[d], [r for r in rows if r.dialect == d]
        if isinstance(engine, NotConfigured):
            validated += [r.with_(replay_detail=engine.reason) for r in mine]
            validation[d] = {"replay": {"ran": False, "reason": engine.reason}}
            continue
        for row in mine:
            verdicts = grade(engine, as_record(row), row.reference_code)
            assert [v["verdict"] for v in verdicts] == ["PASS"], verdicts
            validated.append(row.with_(replay_status="passed", replay_engine=engine.version()))
        validation[d] = {"replay": {"ran": True, "engine": engine.version(), "passed": len(mine), "failed": 0}}
    part = SubsetRelease("echo", 2, {"echo/records.jsonl": "0" * 64}, validated, [], validation)
    return Staged(part, len(rows), len(validated), details={"validation": validation})


class EchoSubset(StagedSubset):
    """Tasks that print numbers: two records, one released in both dialects, one rejected at build."""

    name = "echo"
    source_dataset = "a test's own records"
    licence = "CC0-1.0"
    summary = "blocks that print a number"
    required_columns = ("reference_code",)
    stages = Stages(ingest=echo_ingest, build=echo_build, validate=echo_validate)


def echo_part(config, engines=NO_ENGINES) -> SubsetRelease:
    """The subset's release part from its stages run without Dagster, as its assets run them."""
    stages = EchoSubset.stages
    return stages.validation(config, stages.tasks(config, {}, engines), engines).value


@pytest.fixture
def echo(monkeypatch):
    subset = EchoSubset()
    monkeypatch.setitem(SUBSETS, "echo", subset)
    return subset


def test_the_suites_apply_a_registered_subsets_required_columns_and_name(echo):
    config = BuildConfig(version="e2")
    part = echo_part(config)
    part.rows[0] = part.rows[0].with_(reference_code=None)
    failures = failed_suites(check_release(prepare_release(config, [part])))["tasks"]
    assert len(failures) == 1 and "'reference_code'" in failures[0] and "subset == 'echo'" in failures[0]
    SUBSETS.pop("echo")
    failures = failed_suites(check_release(prepare_release(config, [echo_part(config)])))["tasks"]
    assert any("'subset'" in f and "['echo', 'echo']" in f for f in failures)  # no longer a known subset


def test_two_parts_of_one_subset_are_refused(echo):
    config = BuildConfig(version="e3")
    with pytest.raises(ValueError, match="two parts"):
        prepare_release(config, [echo_part(config), echo_part(config)])


def test_a_subset_gets_the_trivial_candidates_of_its_kind_of_task(echo, pg_engine):
    """A block task (no signature): a block printing nothing and one printing only the first line."""
    part = echo_part(None)
    for row in part.rows:
        assert [name for name, _ in echo.trivial_candidates(row)] == ["prints_nothing", "prints_the_first_line"]
    postgres = dict(echo.trivial_candidates(next(r for r in part.rows if r.dialect == "postgres")))
    with pg_engine.session() as session:
        assert session.execute(postgres["prints_nothing"]).lines == []
        assert session.execute(postgres["prints_the_first_line"]).lines == ["42"]


def _evaluate(release, candidates: list[tuple[str, str]], out, capsys) -> list[str]:
    """`plbench evaluate` on (task id, code) PostgreSQL candidates; its printed summary lines."""
    from pipelines import cli

    path = out.with_suffix(".jsonl")
    path.write_text("".join(json.dumps({"task_id": t, "dialect": "postgres", "code": c}) + "\n" for t, c in candidates))
    capsys.readouterr()
    assert cli.main(["evaluate", "--release", str(release), "--solutions", str(path), "--out", str(out)]) == 0
    return [line for line in capsys.readouterr().out.splitlines() if "Pass@1" in line]


def test_a_registered_subset_flows_through_its_assets_the_release_and_evaluate(
    echo, pg_engine, tmp_path, monkeypatch, capsys
):
    """The graph makes the subset's assets from its stages; a build selecting it alone releases its
    validated rows with the rejection reconciled, and `plbench evaluate` scores its reference code 1.0
    and its trivial candidates 0."""
    import dagster as dg

    from pipelines.cli import execute, report
    from pipelines.definitions import build_definitions

    config = BuildConfig(
        subsets=("echo",),
        pg_dsn=pg_engine._dsn,
        cache_dir=tmp_path / "cache",
        out_dir=tmp_path / "releases",
        normalized_dir=tmp_path / "normalized",
        validation_dir=tmp_path / "validation",
        version="e4",
    )
    graph = build_definitions(config).resolve_asset_graph()
    tasks, validation = (graph.get(dg.AssetKey(f"echo_{stage}")) for stage in ("tasks", "validation"))
    assert tasks.group_name == validation.group_name == "echo" and tasks.code_version == validation.code_version
    assert dg.AssetKey("echo_validation") in graph.get(dg.AssetKey("release_tables")).parent_keys
    (tmp_path / "dagster").mkdir()
    with dg.DagsterInstance.local_temp(str(tmp_path / "dagster"), overrides={"telemetry": {"enabled": False}}) as inst:
        result = execute(config, instance=inst, quiet=True)
    assert report(result) == 0
    meta = {
        e.asset_key.to_user_string(): {k: v.value for k, v in e.materialization.metadata.items()}
        for e in result.get_asset_materialization_events()
    }
    assert (meta["echo_tasks"]["count_in"], meta["echo_tasks"]["count_out"]) == (2, 1)
    assert meta["echo_tasks"]["rejected"] == {"nothing_to_print": 1}
    assert (meta["echo_validation"]["count_in"], meta["echo_validation"]["count_out"]) == (2, 2)  # rows: 2 dialects
    release = config.out_dir / "e4"
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["subsets"]["echo"]["reconciles"] == {d: True for d in DIALECT_NAMES}
    assert manifest["subsets"]["echo"]["released"] == {d: 1 for d in DIALECT_NAMES}
    assert failed_suites(manifest["quality"]) == {} and manifest["quality"]["tasks"]["expectations"] > 10
    assert manifest["trivial_candidates"]["echo"]["ran"] is True
    rows = {(r["task_id"], r["dialect"]): r for r in pq.read_table(release / "tasks.parquet").to_pylist()}
    assert set(rows) == {("echo/1", "oracle"), ("echo/1", "postgres")}
    assert {r["scenario"] for r in rows.values()} == {"echo"}
    assert {r["build_id"] for r in rows.values()} == {manifest["build_id"]}
    assert rows[("echo/1", "postgres")]["replay_status"] == "passed"
    assert rows[("echo/1", "oracle")]["replay_status"] == "not_run"
    assert [r["reason_code"] for r in pq.read_table(release / "rejections.parquet").to_pylist()] == ["nothing_to_print"]
    assert "echo: CC0-1.0" in (release / "README.md").read_text()

    monkeypatch.setenv("PLBENCH_PG_DSN", pg_engine._dsn)
    reference = [("echo/1", rows[("echo/1", "postgres")]["reference_code"])]
    lines = _evaluate(release, reference, tmp_path / "reference", capsys)
    assert lines == [
        "echo/postgres: Mean Test Pass@1 1.0, Suite Pass@1 1.0 over 1 tasks (1 candidates; 0 reference errors excluded)"
    ]
    trivial = [("echo/1", code) for _, code in echo.trivial_candidates(TaskRow(**rows[("echo/1", "postgres")]))]
    lines = _evaluate(release, trivial, tmp_path / "trivial", capsys)
    assert lines == [
        "echo/postgres: Mean Test Pass@1 0.0, Suite Pass@1 0.0 over 1 tasks (2 candidates; 0 reference errors excluded)"
    ]


def test_stages_for_a_hand_written_asset_are_refused():
    from assets.subsets import subset_assets

    class Shadow(EchoSubset):
        name = "spider_plsql"  # its tasks asset would be the hand-written spider_plsql_tasks

    with pytest.raises(ValueError, match=r"'spider_plsql' declares stages, but \['spider_plsql_tasks'\] are hand"):
        subset_assets([Shadow()], {"spider_plsql_tasks", "spider1_raw"})
    assert [a.key.to_user_string() for a in subset_assets([EchoSubset()], set())] == ["echo_tasks", "echo_validation"]
