"""Subset `interactive` through its declared stages on the fixture database: one row per seed and dialect
with its ledger, Direct twin and proposer, counts that reconcile, a seed without a Direct twin rejected,
the operators' acceptance in the manifest, and the seeds' trivial candidates for the release gate."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from plbench.config import NO_ORACLE, BuildConfig
from plbench.procedures.build import database_procedures
from plbench.procedures.stages import ProcedureSeeds, ProcedureTasks
from plbench.subsets import interactive
from plbench.subsets.base import Staged

ORPHAN = "procfix/train/1/status_update"  # its A1 task is taken out below: no Direct twin


@pytest.fixture(scope="module")
def procedures(pg_engine, fixture):
    """The procedures subset's built stage (A1 only), as the `procedures_tasks` asset holds it."""
    built = database_procedures(pg_engine, fixture.pg, fixture.oracle, fixture.equivalence, scenarios={"a1"})
    built = dataclasses.replace(built, tasks=[t for t in built.tasks if t.seed_id != ORPHAN])
    stage = ProcedureTasks(ProcedureSeeds({"procfix": built.seeds}), [built], ("postgres",), pg_engine.version())
    return Staged(stage, 11, len(built.tasks))


@pytest.fixture(scope="module")
def part(pg_engine, fixture, procedures):
    config = BuildConfig(subsets=("procedures", "interactive"))
    spider = SimpleNamespace(inputs={"spider/spider.zip": "ab" * 32})
    with pytest.MonkeyPatch.context() as patch:  # the fixture's databases, not the mirror's
        patch.setattr(interactive, "databases_of", lambda config, inputs, name: (fixture.pg, fixture.oracle))
        stages = interactive.SUBSET.stages
        inputs = {"spider1_raw": spider, "procedures_tasks": procedures}
        built = stages.tasks(config, inputs, {"postgres": pg_engine})
        return built, stages.validation(config, built, {}).value


def test_rows_carry_their_ledger_twin_and_proposer_and_counts_reconcile(part):
    built, release = part
    assert (built.count_in, built.count_out) == (11, 10)
    assert release.input_count == 11 and {r.reason_code for r in release.rejections} == {"no_direct_twin"}
    for dialect in ("postgres", "oracle"):
        rows = [r for r in release.rows if r.dialect == dialect]
        rejected = [r for r in release.rejections if r.dialect in (None, dialect)]
        assert len(rows) == 10 and len(rows) + len(rejected) == release.input_count
    for row in release.rows:
        assert row.subset == "interactive" and row.direct_task_id == f"procedures/a1/{row.source_id}"
        assert row.proposer == "deterministic" and json.loads(row.ledger)
        assert all(getattr(row, c) is not None for c in interactive.SUBSET.required_columns)
    assert ORPHAN not in {r.source_id for r in release.rows}


def test_manifest_validation_and_trivial_candidates(part):
    _, release = part
    operators = release.manifest["operators"]
    assert set(operators) == {"contradiction_injection", "information_omission", "knowledge_injection"}
    assert all(s["acceptance_rate"] == 1.0 for s in operators.values())
    assert release.manifest["interactive"] == {
        "seeds": 11,
        "tasks": {"oracle": 10, "postgres": 10},
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
