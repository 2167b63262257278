"""Oracle procedure text over columns named by reserved words (date, level, comment, user): every name the
procedures write is spelt as the normalized Oracle DDL declares its names, in the setup, the reference, its
mutants and B2's row-by-row baseline, so the release's Oracle grammar gate has nothing to reject."""

from __future__ import annotations

import os

import pytest
import sqlglot
from sqlglot import exp

from plbench.dialects.oracle import ORACLE_RESERVED
from plbench.dialects.oracle_grammar import unavailable_reason
from plbench.dialects.oracle_syntax import oracle_syntax_gate
from plbench.procedures.build import database_procedures
from plbench.procedures.dialect_text import PROCEDURE_TEXT
from plbench.procedures.model import CountInto, Procedure, RowLoop, Sql, walk
from plbench.procedures.mutants import mutants_of, wrong_target_column
from plbench.procedures.rows import task_row
from plbench.procedures.scenarios.b2 import row_by_row
from tests.procedure_fixtures import RESERVED_GOLD, RESERVED_SCHEMA, load_fixture, subset_part


@pytest.fixture(scope="module")
def reserved(pg_engine, tmp_path_factory):
    return load_fixture(pg_engine, tmp_path_factory.mktemp("resw"), "resw", RESERVED_SCHEMA, RESERVED_GOLD)


@pytest.fixture(scope="module")
def reserved_build(pg_engine, reserved):
    return database_procedures(pg_engine, reserved.pg, reserved.oracle, reserved.equivalence)


def _seed(build, seed_id):
    return next(v.seed for v in build.seeds.seeds if v.seed.seed_id == seed_id)


def test_reserved_column_names_are_quoted_as_the_oracle_ddl_declares_them(reserved, reserved_build):
    ddl = reserved.oracle.ddl_text()
    assert '"DATE" VARCHAR2(4000 BYTE)' in ddl and '"LEVEL" NUMBER(19)' in ddl and '"USER" VARCHAR2' in ddl
    assert [v.seed.seed_id for v in reserved_build.seeds.seeds] == [
        "resw/train/1/result_table",
        "resw/train/1/status_update",
        "resw/train/2/result_table",
        "resw/train/2/status_update",
        "resw/train/3/result_table",
        "resw/train/3/status_update",
        "resw/train/3/raise_missing",
    ]
    report = _seed(reserved_build, "resw/train/1/result_table")
    assert report.setup["oracle"] == ['CREATE TABLE event_report ("DATE" VARCHAR2(4000))']
    assert report.procedure.render("oracle") == (
        'CREATE OR REPLACE PROCEDURE sp_report_event(para_level IN EVENT."LEVEL"%TYPE)\nIS\nBEGIN\n'
        "  DELETE FROM event_report;\n"
        '  INSERT INTO event_report ("DATE") SELECT "DATE" FROM EVENT WHERE "LEVEL" > para_level;\n'
        "END sp_report_event;"
    )
    # PostgreSQL reserves `user`, not `date`: each dialect quotes by its own list, as its DDL does
    both = _seed(reserved_build, "resw/train/2/result_table").setup
    assert both == {
        "postgres": ['CREATE TABLE event_report (comment text, "user" text)'],
        "oracle": ['CREATE TABLE event_report ("COMMENT" VARCHAR2(4000), "USER" VARCHAR2(4000))'],
    }
    level = _seed(reserved_build, "resw/train/3/result_table")
    assert level.setup["oracle"] == ['CREATE TABLE event_report ("LEVEL" NUMBER)']
    assert '  INSERT INTO event_report ("LEVEL") SELECT "LEVEL" FROM EVENT WHERE ID = para_id;' in (
        level.procedure.render("oracle")
    )


def _declared(reserved, setup: list[str]) -> dict[str, bool]:
    """Stored column name -> quoted, as the Oracle DDL and the seed's setup declare them."""
    names = {c.target.name: c.target.quoted for t in reserved.oracle.tables for c in t.columns}
    for statement in setup:
        for column in sqlglot.parse_one(statement, read="oracle").find_all(exp.ColumnDef):
            names[column.this.name if column.this.quoted else column.this.name.upper()] = column.this.quoted
    return names


def _misspelt(tree: exp.Expression, declared: dict[str, bool]) -> list[str]:
    """Names in `tree` that Oracle reserves unquoted, or that reach a declared column by another spelling."""
    found = []
    for ident in tree.find_all(exp.Identifier):
        stored = ident.name if ident.quoted else ident.name.upper()
        if not ident.quoted and stored in ORACLE_RESERVED - {PROCEDURE_TEXT["oracle"].row_id}:  # ROWID: B2's
            found.append(f"{ident.name} is reserved")
        elif stored in declared and declared[stored] != ident.quoted:
            found.append(f"{ident.sql(dialect='oracle')} is declared otherwise")
    return found


def _trees(procedure) -> list[exp.Expression]:
    """The Oracle trees of a procedure's SQL statements (a row loop's query and its statement apart)."""
    out = []
    for statement in walk(procedure.body):
        if isinstance(statement, (Sql, CountInto)):
            out.append(statement.trees["oracle"])
        elif isinstance(statement, RowLoop):
            out += [statement.trees["oracle"], statement.inner["oracle"]]
    return out


def _oracle_sql(tree: exp.Expression) -> str:
    """A tree as the procedure text writes it (plbench.procedures.model renders with the same dialect)."""
    return tree.sql(dialect=PROCEDURE_TEXT["oracle"].sqlglot)


def test_every_oracle_statement_of_references_mutants_and_baselines_parses_and_names_declared_columns(
    reserved, reserved_build
):
    checked = 0
    for validated in reserved_build.seeds.seeds:
        seed = validated.seed
        declared = _declared(reserved, seed.setup["oracle"])
        for statement in seed.setup["oracle"]:
            assert _misspelt(sqlglot.parse_one(statement, read="oracle"), declared) == [], statement
        procedures = [seed.procedure, *(m.procedure for m in mutants_of(seed.procedure))]
        procedures += [slow] if (slow := row_by_row(seed.procedure)) else []
        for procedure in procedures:
            for text in map(_oracle_sql, _trees(procedure)):
                assert _misspelt(sqlglot.parse_one(text, read="oracle"), declared) == [], text
                checked += 1
    assert checked >= 40, checked


def test_the_oracle_grammar_gate_rejects_no_procedure_row_over_reserved_column_names(reserved_build):
    reason = unavailable_reason()
    if reason:
        if os.environ.get("PLBENCH_REQUIRE_ORACLE_GRAMMAR"):
            pytest.fail(f"the Oracle grammar check cannot run: {reason}")
        pytest.skip(f"the Oracle grammar check cannot run: {reason}")
    rows = [task_row(t, None) for t in reserved_build.tasks]
    gate = oracle_syntax_gate(rows, workers=1)
    assert sum(r.dialect == "oracle" for r in rows) >= 60
    assert gate.section["failed"] == 0 and gate.rejections == [], gate.section["failures"][:3]


# ---- the manifest's per-scenario counts, taken on what the release keeps -----------------------------------


@pytest.fixture(scope="module")
def part(pg_engine, reserved_build):
    return subset_part(pg_engine, "resw", reserved_build)


BROKEN = "procedures/a1/resw/train/1/result_table"  # its Oracle row gets a reference that does not parse


def _broken(part):
    import dataclasses

    rows = [
        r.with_(reference_code=r.reference_code.replace("BEGIN", "BEGIN BEGIN", 1))
        if r.key == (BROKEN, "oracle")
        else r
        for r in part.rows
    ]
    return dataclasses.replace(part, rows=rows)


def _every_scenario_reconciles(scenarios: dict) -> None:
    for key, counts in scenarios.items():
        assert counts["reconciles"] and counts["input"] == counts["released"] + sum(counts["rejected"].values()), key


def test_the_part_counts_every_scenario_input_as_released_or_rejected(part):
    scenarios = part.manifest["procedures"]["scenarios"]
    _every_scenario_reconciles(scenarios)
    assert scenarios["a1/oracle"] == {
        "input": 7,
        "released": 7,
        "rejected": {},
        "reconciles": True,
        "mutants_total": scenarios["a1/postgres"]["mutants_total"],
        "mutants_killed": scenarios["a1/postgres"]["mutants_killed"],
        "kill_rate": 1.0,
        "trivial_candidates_passed": 0,
        "determinism_checked": 7,
    }
    b2 = scenarios["b2/oracle"]
    assert b2["rejected"]["b2_database_cap"] == 3 and b2["released"] + sum(b2["rejected"].values()) == 7, b2


def test_a_row_the_grammar_gate_rejects_leaves_its_scenarios_released_count(part, tmp_path):
    from plbench.config import BuildConfig
    from plbench.release import prepare_release

    reason = unavailable_reason()
    if reason:
        if os.environ.get("PLBENCH_REQUIRE_ORACLE_GRAMMAR"):
            pytest.fail(f"the Oracle grammar check cannot run: {reason}")
        pytest.skip(f"the Oracle grammar check cannot run: {reason}")
    config = BuildConfig(version="g1", out_dir=tmp_path / "releases", cache_dir=tmp_path / "cache", workers=1)
    manifest = prepare_release(config, [_broken(part)]).manifest
    assert manifest["oracle_syntax"]["failed"] == 1 and manifest["oracle_syntax"]["failures"][0]["owner"] == BROKEN
    scenarios = manifest["procedures"]["scenarios"]
    _every_scenario_reconciles(scenarios)
    a1 = scenarios["a1/oracle"]
    assert (a1["released"], a1["rejected"], a1["determinism_checked"]) == (6, {"oracle_syntax": 1}, 6)
    assert scenarios["a1/postgres"]["released"] == 7 and scenarios["a2/oracle"]["released"] == 7
    counts = manifest["subsets"]["procedures"]
    assert counts["reconciles"] == {"oracle": True, "postgres": True}
    assert counts["released"]["oracle"] == sum(s["released"] for k, s in scenarios.items() if k.endswith("/oracle"))


@pytest.mark.parametrize(
    "table, columns, update",
    [
        ("event", ['"user"', "comment"], "UPDATE event SET \"user\" = 'selected' WHERE level > 1;"),
        ('"order"', ["note"], "UPDATE \"order\" SET note = 'selected' WHERE level > 1;"),
    ],
)
def test_a_mutant_writing_another_column_names_it_as_the_workspace_does(table, columns, update):
    """The workspace names columns and tables as PostgreSQL text (`"user"`: reserved there), read back as names."""
    tree = sqlglot.parse_one(f"UPDATE {table} SET review_status = 'selected' WHERE level > 1", read="postgres")
    proc = Procedure("sp_flag", (), (Sql("update", {"postgres": tree}),))
    (mutant,) = wrong_target_column(proc, {"text_columns": {table: columns}})
    assert mutant.procedure.render("postgres").splitlines()[4] == "  " + update
