"""Subset `interactive` through its declared stages on the fixture database: one row per seed and dialect
with its ledger, Direct twin and proposer, counts that reconcile, a seed without a Direct twin rejected,
the operators' acceptance in the manifest, and the seeds' trivial candidates for the release gate. Two seeds
are enhanced by procedural ILE: one's final round is perturbed (twin: its procedures_ile task), the other's
procedures_ile task is taken out, so it keeps its plain variant (twin: its A1 task)."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from plbench.config import NO_ORACLE, BuildConfig
from plbench.operators.perturbations import PREVIOUS_ROUND
from plbench.operators.procedural_ile import ProcedureRuleProposer
from plbench.operators.procedural_stage import ProceduralIle, database_ile, ile_rows
from plbench.procedures.build import database_procedures
from plbench.procedures.stages import ProcedureSeeds, ProcedureTasks
from plbench.procedures.strength import trivial_candidates, trivial_texts
from plbench.subsets import interactive
from plbench.subsets.base import Staged

ORPHAN = "procfix/train/1/status_update"  # its A1 task is taken out below: no Direct twin
ENHANCED = "procfix/train/5/status_update"  # two ILE rounds: its final round is perturbed
UNTWINNED = "procfix/train/6/raise_missing"  # enhanced, but its procedures_ile task is taken out: plain variant


@pytest.fixture(scope="module")
def procedures(pg_engine, fixture):
    """The procedures subset's built stage (A1 only), as the `procedures_tasks` asset holds it."""
    built = database_procedures(pg_engine, fixture.pg, fixture.oracle, fixture.equivalence, scenarios={"a1"})
    built = dataclasses.replace(built, tasks=[t for t in built.tasks if t.seed_id != ORPHAN])
    stage = ProcedureTasks(ProcedureSeeds({"procfix": built.seeds}), [built], ("postgres",), pg_engine.version())
    return Staged(stage, 11, len(built.tasks))


@pytest.fixture(scope="module")
def ile(pg_engine, fixture, seeds):
    """Procedural ILE (2 rounds) on two seeds, as the `procedural_ile` asset holds it; UNTWINNED's A1 check failed."""
    database = database_ile(
        pg_engine, fixture.pg, fixture.oracle, [seeds[ENHANCED], seeds[UNTWINNED]], ProcedureRuleProposer(), 2
    )
    assert [(e.final.seed.seed_id, e.rules) for e in database.enhanced] == [
        (ENHANCED, ("threshold_parameter", "empty_input_error")),
        (UNTWINNED, ("audit_row",)),
    ]
    database.tasks = [t for t in database.tasks if t.seed_id != UNTWINNED]
    return ProceduralIle([database], ("postgres",), pg_engine.version(), rounds=2)


def _stages(pg_engine, fixture, procedures, ile, config):
    spider = SimpleNamespace(inputs={"spider/spider.zip": "ab" * 32})
    with pytest.MonkeyPatch.context() as patch:  # the fixture's databases, not the mirror's
        patch.setattr(interactive, "databases_of", lambda config, inputs, name: (fixture.pg, fixture.oracle))
        stages = interactive.SUBSET.stages
        inputs = {"spider1_raw": spider, "procedures_tasks": procedures, "procedural_ile": ile}
        built = stages.tasks(config, inputs, {"postgres": pg_engine})
        return built, stages.validation(config, built, {}).value


@pytest.fixture(scope="module")
def part(pg_engine, fixture, procedures, ile):
    return _stages(
        pg_engine, fixture, procedures, ile, BuildConfig(subsets=("procedures", "procedures_ile", "interactive"))
    )


def test_rows_carry_their_ledger_twin_and_proposer_and_counts_reconcile(part):
    built, release = part
    assert (built.count_in, built.count_out) == (11, 10)
    assert release.input_count == 11 and {r.reason_code for r in release.rejections} == {"no_direct_twin"}
    for dialect in ("postgres", "oracle"):
        rows = [r for r in release.rows if r.dialect == dialect]
        rejected = [r for r in release.rejections if r.dialect in (None, dialect)]
        assert len(rows) == 10 and len(rows) + len(rejected) == release.input_count
    for row in release.rows:
        assert row.subset == "interactive" and row.proposer == "deterministic" and json.loads(row.ledger)
        assert all(getattr(row, c) is not None for c in interactive.SUBSET.required_columns)
        if row.source_id != ENHANCED:
            assert (row.direct_task_id, row.ile_rounds) == (f"procedures/a1/{row.source_id}", None)
    assert ORPHAN not in {r.source_id for r in release.rows}


def test_the_final_ile_round_of_an_enhanced_seed_is_perturbed_and_paired_with_its_procedures_ile_task(part, ile):
    _, release = part
    rows = {r.dialect: r for r in release.rows if r.source_id == ENHANCED}
    twins = {(r.task_id, r.dialect): r for r in ile_rows(ile.databases, ile.engine_version)}
    final = ile.databases[0].enhanced[0].final
    for dialect, row in rows.items():
        twin = twins[(row.direct_task_id, dialect)]  # the id the procedures_ile rows carry
        assert (row.direct_task_id, row.ile_rounds) == (f"procedures_ile/{ENHANCED}", 2)
        assert (row.reference_code, row.call_suite) == (twin.reference_code, twin.call_suite)
        assert row.reference_code == final.seed.procedure.render(dialect)
    ledger = json.loads(rows["postgres"].ledger)
    masked = next(e for e in ledger if e["op"] == "mask")
    assert masked["key"] == "which further business rule the procedure applies"
    assert masked["evidence"].startswith(PREVIOUS_ROUND + ": call ") and masked["answer"] not in rows["postgres"].prompt
    # the release gate runs the final round's trivial candidates, not the plain seed's
    key = (f"interactive/{ENHANCED}", "postgres")
    assert release.trivial_candidates[key] == trivial_texts(trivial_candidates(final.seed, final.suite), "postgres")


def test_without_procedures_ile_every_variant_is_of_a_plain_seed(fixture, procedures, ile):
    config = BuildConfig(subsets=("procedures", "multiturn", "interactive"))  # procedural ILE ran for multiturn
    ingested = interactive.ingest(config, SimpleNamespace(inputs={}), procedures, ile)
    assert ingested.value.ile is None and (ingested.count_in, ingested.count_out) == (11, 11)
    selected = interactive.ingest(BuildConfig(), SimpleNamespace(inputs={}), procedures, ile)
    assert selected.value.ile is ile


def test_manifest_validation_and_trivial_candidates(part):
    _, release = part
    operators = release.manifest["operators"]
    assert set(operators) == {"contradiction_injection", "information_omission", "knowledge_injection"}
    assert all(s["acceptance_rate"] == 1.0 for s in operators.values())
    assert release.manifest["interactive"] == {
        "seeds": 11,
        "tasks": {"oracle": 10, "postgres": 10},
        "variants_of": {"ile_final_round": 1, "plain_seed": 9},
        "omissions_proven_by_previous_round": 1,
        "hidden_facts_by_op": {"contradiction": 6, "env_contradiction": 2, "jargon": 10, "mask": 10},
        "entries_per_task": {2: 3, 3: 6, 4: 1},
        "rejected": {"no_direct_twin": 1},
    }
    assert release.validation["oracle"]["replay"] == {"ran": False, "reason": NO_ORACLE}
    postgres = release.validation["postgres"]
    assert (postgres["replay"]["passed"], postgres["replay"]["failed"]) == (10, 0)
    assert postgres["mutants"]["killed"] == postgres["mutants"]["total"] > 0
    assert set(release.trivial_candidates) == {r.key for r in release.rows if r.dialect == "postgres"}
    names = {name for candidates in release.trivial_candidates.values() for name, _ in candidates}
    assert names == {"noop", "first_call_only", "state_change_removed"}


def test_without_the_procedures_subset_the_stage_says_what_to_select():
    with pytest.raises(ValueError, match="select both"):
        interactive.ingest(BuildConfig(), None, None)
