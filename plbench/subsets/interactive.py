"""Interactive as a subset: procedural tasks whose requirement hides facts the solver must recover by asking
(ProcArena's Interactive variants), each paired with its Direct twin, the seed's A1 task of `procedures`.

Stages (a `StagedSubset`): ingest takes the procedures subset's built stage (`procedures_tasks`: its seeds
and A1 tasks); build perturbs every
seed whose A1 task was released (plbench.interactive.stages: knowledge injection, information omission,
contradiction injection and an environment contradiction, each accepted only by execution on the seed's call
suite, on PostgreSQL);
validate assembles the release part. A row carries `ledger` (its hidden facts, each with the execution
evidence), `direct_task_id` and `proposer`. Counts: one input per validated seed and dialect; a seed ends
as its row or a rejection (`no_direct_twin`, `no_perturbation_accepted`, `dialect_not_rendered`). The
manifest's `operators` section has each operator's acceptance and rejection rates, `interactive` the
hidden facts per op. The trivial candidates are the seed's (no-op, first call only, no state change).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from plbench.config import DIALECT_NAMES, NotConfigured
from plbench.interactive.stages import InteractiveOutput, database_variants
from plbench.llm import LLMClient
from plbench.operators.framework import DETERMINISTIC
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer, LLMPerturbationProposer
from plbench.operators.perturbations import STAGE
from plbench.operators.perturbations import SUBSET as NAME
from plbench.procedures.scenarios import a1
from plbench.procedures.stages import ProcedureTasks, databases_of
from plbench.procedures.strength import trivial_candidates, trivial_texts
from plbench.records import Rejection
from plbench.subsets.base import Staged, StagedSubset, Stages, SubsetRelease
from plbench.subsets.procedures import not_run_reason


@dataclass
class Sources:
    """What the build perturbs: the procedures stage and the Spider inputs its databases are read from."""

    procedures: ProcedureTasks
    spider: object  # SpiderInputs

    def seeds(self):
        return [v for db in self.procedures.databases for v in db.seeds.seeds]


def proposer(config):
    """The construction operators' proposer (PLBENCH_ILE_PROPOSER): the fact catalogue, or the model."""
    if config.ile_proposer == DETERMINISTIC:
        return DeterministicPerturbationProposer()
    if config.ile_proposer != "llm":
        raise ValueError(f"PLBENCH_ILE_PROPOSER={config.ile_proposer!r}: expected 'deterministic' or 'llm'")
    if isinstance(config.llm, NotConfigured):
        raise ValueError(f"PLBENCH_ILE_PROPOSER={config.ile_proposer} but {config.llm.reason}")
    return LLMPerturbationProposer(LLMClient(config.llm, config.cache_dir / "llm"))


def ingest(config, spider1_raw, procedures_tasks: Staged | None) -> Staged:
    """The seeds of the procedures subset's build (the `procedures_tasks` asset's value)."""
    if procedures_tasks is None or spider1_raw is None:
        raise ValueError(f"subset {NAME} perturbs the seeds of subset procedures: select both (PLBENCH_SUBSETS)")
    sources = Sources(procedures_tasks.value, spider1_raw)
    count = len(sources.seeds())
    return Staged(sources, count, count)


def build(config, sources: Sources, engines: dict) -> Staged:
    engine, chosen = engines["postgres"], proposer(config)
    twins = {t.seed_id for db in sources.procedures.databases for t in db.tasks if t.scenario == a1.SCENARIO}
    out = InteractiveOutput()
    for database in sources.procedures.databases:
        seeds = database.seeds
        orphans = [v for v in seeds.seeds if v.seed.seed_id not in twins]
        out.seeds += len(orphans)
        out.rejections += [
            Rejection(NAME, v.seed.seed_id, STAGE, "no_direct_twin", "the seed's A1 task was not released")
            for v in orphans
        ]
        kept = [v for v in seeds.seeds if v.seed.seed_id in twins]
        if kept:
            pg_db, oracle_db = databases_of(config, sources.spider, seeds.database)
            out.extend(database_variants(engine, pg_db, oracle_db, kept, chosen))
    details = {"interactive": out.summary(), "operators": out.ledger.summary()}
    return Staged((sources, out), out.seeds, len({r.task_id for r in out.rows}), out.rejections, details)


def validate(config, built: tuple, engines: dict) -> Staged:
    sources, out = built
    version = sources.procedures.engine_version
    validation, not_replayed = {}, {"ran": False, "reason": not_run_reason(config)}
    for target in DIALECT_NAMES:
        mine = [r for r in out.rows if target == r.dialect]
        entries = sum(len(json.loads(r.ledger)) for r in mine)
        validation[target] = {"replay": not_replayed, "hidden_facts": entries, "verified_on": "postgres"}
        if target in sources.procedures.executed:  # each row's reference and suite are its seed's, validated
            validation[target]["replay"] = {"ran": True, "engine": version, "passed": len(mine), "failed": 0}
            validation[target]["mutants"] = {
                "total": sum(r.mutants_total for r in mine),
                "killed": sum(r.mutants_killed for r in mine),
            }
    of_seed = {v.seed.seed_id: trivial_candidates(v.seed, v.suite) for v in sources.seeds()}
    trivial = {
        r.key: trivial_texts(of_seed[r.source_id], r.dialect)
        for r in out.rows
        if r.replay_status == "passed"  # the dialects whose references ran
    }
    manifest = {"interactive": out.summary(), "operators": out.ledger.summary()}
    part = SubsetRelease(
        NAME, out.seeds, sources.spider.inputs, out.rows, [], validation, manifest=manifest, trivial_candidates=trivial
    )
    return Staged(part, len(out.rows), len(out.rows))


class InteractiveSubset(StagedSubset):
    name = NAME
    source_dataset = "Spider 1.0 (train and dev gold SQL), through the procedures subset"
    licence = "CC-BY-SA-4.0"
    summary = (
        "procedural tasks whose requirement hides facts (jargon, masked facts, contradictions) that the solver "
        "recovers by asking a simulated user within a budget; every hidden fact is proven by execution to "
        "matter, and each task is paired with its Direct twin"
    )
    required_columns = ("database", "reference_code", "call_suite", "ledger", "direct_task_id", "proposer")
    stages = Stages(
        ingest,
        build,
        validate,
        inputs=("spider1_raw", "procedures_tasks"),
        build_engines=("postgres",),
        validate_engines=(),
    )


SUBSET = InteractiveSubset()
