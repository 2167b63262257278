"""Interactive as a subset: procedural tasks whose requirement hides facts the solver must recover by asking
(ProcArena's Interactive variants), each paired with its Direct twin.

Stages (a `StagedSubset`): ingest takes the procedures subset's built stage (`procedures_tasks`: its seeds
and A1 tasks) and procedural ILE's (`procedural_ile`: the enhanced seeds and their procedures_ile tasks); build
perturbs, per seed (plbench.interactive.stages.variant_sources), ILE's final round when ILE enhanced the seed
and made its procedures_ile task (the Direct twin; subset procedures_ile selected), else the seed itself when
its A1 task was released (the twin): knowledge injection, information omission, contradiction injection and
an environment contradiction, each accepted only by execution on the version's call suite, on PostgreSQL (an
omission of the last round's clause also only when the previous round's reference, executed, diverges);
validate assembles the release part. A row carries `ledger` (its hidden facts, each with the execution
evidence), `direct_task_id`, `proposer`, and `ile_rounds` when it is a final round. Counts: one input per
validated seed and dialect; a seed ends as its row or a rejection (`no_direct_twin`,
`no_perturbation_accepted`, `dialect_not_rendered`). The manifest's `operators` section has each operator's
acceptance and rejection rates, `interactive` the hidden facts per op, the variants of final rounds and of
plain seeds, and the omissions the previous round's reference proved. The trivial candidates are the
perturbed version's (no-op, first call only, no state change).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from plbench.config import DIALECT_NAMES, NotConfigured
from plbench.interactive.stages import InteractiveOutput, database_variants, ile_twins, variant_sources
from plbench.llm import LLMClient
from plbench.operators.framework import DETERMINISTIC
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer, LLMPerturbationProposer
from plbench.operators.perturbations import STAGE
from plbench.operators.perturbations import SUBSET as NAME
from plbench.operators.procedural_ile import SUBSET as ILE
from plbench.operators.procedural_stage import ProceduralIle
from plbench.procedures.parallel import each_database
from plbench.procedures.scenarios import a1
from plbench.procedures.stages import ProcedureTasks, databases_of
from plbench.procedures.strength import trivial_candidates, trivial_texts
from plbench.records import Rejection
from plbench.subsets.base import Staged, StagedSubset, Stages, SubsetRelease
from plbench.subsets.procedures import not_run_reason


@dataclass
class Sources:
    """What the build perturbs: the procedures stage, procedural ILE's (None when it did not run), and the
    Spider inputs their databases are read from."""

    procedures: ProcedureTasks
    spider: object  # SpiderInputs
    ile: ProceduralIle | None = None

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


def ingest(config, spider1_raw, procedures_tasks: Staged | None, procedural_ile: ProceduralIle | None = None) -> Staged:
    """The seeds of the procedures subset's build (the `procedures_tasks` asset's value), and procedural ILE's
    rounds of them (the `procedural_ile` asset's), whose final rounds are perturbed when procedures_ile is
    released too (its tasks are their Direct twins)."""
    if procedures_tasks is None or spider1_raw is None:
        raise ValueError(f"subset {NAME} perturbs the seeds of subset procedures: select both (PLBENCH_SUBSETS)")
    ile = procedural_ile if ILE in config.subsets else None
    sources = Sources(procedures_tasks.value, spider1_raw, ile)
    count = len(sources.seeds())
    return Staged(sources, count, count)


def _has_twin(source, a1_twins: set[str]) -> bool:
    """A final round's twin is its procedures_ile task (made, by ile_twins); a plain seed's its A1 task."""
    return source.previous is not None or source.seed_id in a1_twins


def build(config, sources: Sources, engines: dict) -> Staged:
    engine, chosen = engines["postgres"], proposer(config)
    twins = {t.seed_id for db in sources.procedures.databases for t in db.tasks if t.scenario == a1.SCENARIO}
    enhanced = ile_twins(sources.ile.databases) if sources.ile is not None else {}
    orphaned, kept, versions = [], [], {}
    for database in sources.procedures.databases:
        mine, orphans = [], []
        for source in variant_sources(database.seeds.seeds, enhanced):
            (mine if _has_twin(source, twins) else orphans).append(source)
        why = "neither the seed's A1 task nor a procedures_ile task of it was made"
        refused = [Rejection(NAME, s.seed_id, STAGE, "no_direct_twin", why) for s in orphans]
        orphaned.append(InteractiveOutput(rejections=refused, seeds=len(orphans)))
        kept.append((database.seeds.database, mine))
        versions |= {s.seed_id: s.validated for s in mine}

    def perturbed(item: tuple[str, list]) -> InteractiveOutput:
        name, mine = item
        if not mine:
            return InteractiveOutput()
        return database_variants(engine, *databases_of(config, sources.spider, name), mine, chosen)

    # databases side by side, as procedural ILE runs them (each in its own session); merged in database order
    out = InteractiveOutput()
    for orphans, variants in zip(orphaned, each_database(perturbed, kept, config.procedure_workers)):
        out.extend(orphans)
        out.extend(variants)
    details = {"interactive": out.summary(), "operators": out.ledger.summary()}
    return Staged((sources, out, versions), out.seeds, len({r.task_id for r in out.rows}), out.rejections, details)


def validate(config, built: tuple, engines: dict) -> Staged:
    sources, out, versions = built  # versions: seed id -> the version perturbed (the seed or ILE's final round)
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
    of_seed = {seed_id: trivial_candidates(v.seed, v.suite) for seed_id, v in versions.items()}
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
        "procedural tasks (the final ILE round of a seed ILE enhanced, else the plain seed) whose requirement hides "
        "facts (jargon, masked facts, contradictions) that the solver recovers by asking a simulated user within a "
        "budget; every hidden fact is proven by execution to matter (a masked ILE clause also by the previous "
        "round's reference), and each task is paired with its Direct twin (its procedures_ile or A1 task)"
    )
    required_columns = ("database", "reference_code", "call_suite", "ledger", "direct_task_id", "proposer")
    stages = Stages(
        ingest,
        build,
        validate,
        inputs=("spider1_raw", "procedures_tasks", "procedural_ile"),
        build_engines=("postgres",),
        validate_engines=(),
    )


SUBSET = InteractiveSubset()
