"""The procedures stages over several databases: the same output whether the databases are built one at a time
or side by side (PLBENCH_PROCEDURE_WORKERS), which is why the number of workers is no part of the fingerprint."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from plbench.config import BuildConfig
from plbench.procedures import stages
from plbench.procedures.rows import task_row
from plbench.spider.gold import GoldQuery
from plbench.spider.stages import Spider1Inputs
from plbench.taskrow import as_record
from tests.procedure_fixtures import RESERVED_SCHEMA, SCHEMA, load_fixture

SMALL = {  # database -> (SQLite schema, its one gold query): two small databases, seeds in each
    "wone": (RESERVED_SCHEMA, "SELECT date FROM event WHERE level > 2"),
    "wtwo": (SCHEMA, "SELECT name FROM customer WHERE score > 50"),
}
UNLOADED = "wthree"  # a database whose rows did not verify: its gold query is rejected


@pytest.fixture(scope="module")
def spider(pg_engine, tmp_path_factory):
    """(inputs, reports) as the Spider stages hand them to build_seeds, for the two databases and one not loaded."""
    folder = tmp_path_factory.mktemp("workers")
    loaded = {name: load_fixture(pg_engine, folder, name, schema, [gold]) for name, (schema, gold) in SMALL.items()}
    golds = [GoldQuery("1", name, "", gold, "train") for name, (_, gold) in SMALL.items()]
    golds.append(GoldQuery("1", UNLOADED, "", "SELECT 1", "train"))
    paths = {name: folder / f"{name}.sqlite" for name in SMALL} | {UNLOADED: folder / "wone.sqlite"}
    inputs = Spider1Inputs(subset="spider_plsql", source="spider1", databases=paths, questions=[], train_queries=golds)
    reports = {
        n: SimpleNamespace(load=SimpleNamespace(verified=True), equivalence=f.equivalence) for n, f in loaded.items()
    }
    reports[UNLOADED] = SimpleNamespace(load=None, not_run="a test database that was not loaded", equivalence=[])
    return inputs, reports


def _output(built: stages.ProcedureTasks) -> str:
    """Everything the stages made that reaches the release (seeds, task rows, rejections), as one JSON text."""
    rejections = built.seeds.not_loaded + [r for db in built.databases for r in db.seeds.rejections + db.rejections]
    return json.dumps(
        {
            "seeds": {db.seeds.database: [v.suite.to_json(v.seed) for v in db.seeds.seeds] for db in built.databases},
            "tasks": [as_record(task_row(t, "PostgreSQL 16")) for db in built.databases for t in db.tasks],
            "rejections": [dataclasses.asdict(r) for r in rejections],
            "reference_failures": [db.reference_failures for db in built.databases],
        },
        sort_keys=True,
        default=str,
    )


def test_one_and_two_workers_build_byte_identical_procedures(pg_engine, spider, tmp_path, monkeypatch):
    inputs, reports = spider
    asked = []
    each_database = stages.each_database
    monkeypatch.setattr(stages, "each_database", lambda *a: asked.append(a[2]) or each_database(*a))
    outputs = {}
    for workers in (1, 2):
        config = BuildConfig(cache_dir=tmp_path / str(workers), procedure_databases=0, procedure_workers=workers)
        seeds = stages.build_seeds(config, inputs, reports, pg_engine)
        outputs[workers] = stages.build_tasks(config, inputs, seeds, pg_engine)
    assert asked == [1, 1, 2, 2]  # seeds and tasks, each stage with the configured workers
    assert _output(outputs[1]) == _output(outputs[2])
    built = outputs[2]
    assert [db.seeds.database for db in built.databases] == ["wone", "wtwo"]
    assert all(db.tasks for db in built.databases)
    assert [(r.source_id, r.reason_code) for r in built.seeds.not_loaded] == [("train/1", "database_not_loaded")]


def test_the_number_of_workers_is_read_from_the_environment_and_is_no_part_of_the_fingerprint(monkeypatch):
    monkeypatch.setenv("PLBENCH_PROCEDURE_WORKERS", "3")
    assert BuildConfig.from_env().procedure_workers == 3
    assert BuildConfig(procedure_workers=1).fingerprint() == BuildConfig(procedure_workers=2).fingerprint()


def test_one_and_two_workers_enhance_the_seeds_into_byte_identical_ile_tasks_and_episodes(pg_engine, spider, tmp_path):
    from plbench.operators.procedural_ile import ProcedureRuleProposer
    from plbench.operators.procedural_stage import build_ile, ile_rows, multiturn_rows

    inputs, reports = spider
    config = BuildConfig(cache_dir=tmp_path, procedure_databases=0, procedure_workers=1)
    seeds = stages.build_seeds(config, inputs, reports, pg_engine)
    outputs = {}
    for workers in (1, 2):
        built = build_ile(
            seeds.databases,
            lambda name: stages.databases_of(config, inputs, name),
            pg_engine,
            ProcedureRuleProposer(),
            2,
            workers=workers,
        )
        outputs[workers] = json.dumps(
            {
                "databases": [db.database for db in built.databases],
                "ile": [as_record(r) for r in ile_rows(built.databases, "PostgreSQL 16")],
                "multiturn": [as_record(r) for r in multiturn_rows(built.databases, "PostgreSQL 16")],
                "rejections": [dataclasses.asdict(r) for db in built.databases for r in db.rejections],
                "ledger": built.ledger.summary(),
            },
            sort_keys=True,
            default=str,
        )
    assert outputs[1] == outputs[2]
    assert json.loads(outputs[2])["databases"] == ["wone", "wtwo"]
    assert json.loads(outputs[2])["ile"], "the fixture's seeds give enhanced tasks"


def test_ile_takes_the_capped_databases_with_seeds_and_names_the_others(pg_engine, spider, tmp_path):
    from plbench.operators.procedural_ile import ProcedureRuleProposer
    from plbench.operators.procedural_stage import build_ile, summary

    inputs, reports = spider
    config = BuildConfig(cache_dir=tmp_path, procedure_databases=0, procedure_workers=1)
    seeds = stages.build_seeds(config, inputs, reports, pg_engine)
    built = build_ile(
        seeds.databases,
        lambda name: stages.databases_of(config, inputs, name),
        pg_engine,
        ProcedureRuleProposer(),
        1,
        cap=1,
    )
    assert [db.database for db in built.databases] == ["wone"] and built.left_out == ["wtwo"]
    section = summary(built)
    assert section["databases"] == {"taking_part": 1, "left_out": 1}
    assert section["seeds"] == len(seeds.databases["wone"].seeds)


def test_the_procedures_take_every_database_and_ile_a_capped_share_by_default(monkeypatch):
    assert (BuildConfig().procedure_databases, BuildConfig().procedure_ile_databases) == (0, 60)
    monkeypatch.setenv("PLBENCH_PROCEDURE_ILE_DATABASES", "7")
    config = BuildConfig.from_env()
    assert config.procedure_ile_databases == 7 and config.fingerprint()["procedure_ile_databases"] == 7
