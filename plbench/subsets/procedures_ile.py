"""Procedures with business rules added by Iterative Logic Enhancement, as two subsets (plbench.operators).

- `procedures_ile`: one A1 task per enhanced seed and dialect: the seed's numbered requirement with one clause
  per accepted round, and the final round's reference and call suite. Rows are procedures rows (graded the same
  way, one case per call) that also carry `proposer`, `ile_rounds`, `statements` and `cyclomatic`.
- `multiturn`: one row per turn of an episode (3 to 5 turns: the seed, then each round asking to "update the
  procedure ... to also" do one more rule), with `conversation_id`, `turn_index`, `turn_count`, each turn with
  its own reference and call suite; `plbench evaluate` reports Episode and Turn Suite Pass@1.

Both are `StagedSubset`s over the one ILE run of the `procedural_ile` asset (assets/procedural_ile.py), which both
read: ingest takes that run's units (and its rejections), build makes the rows, validate the release part.

Counts: procedures_ile's inputs are the validated seeds (each enhanced or rejected with the reasons of every
proposal); multiturn's are the turns of the enhanced seeds (an episode refused is rejected once per turn). A
task missing in a dialect (a seed without an Oracle text) is rejected there as `not_in_dialect`. The manifest's
`operators` section holds the acceptance and rejection rates per operator, `procedures_ile` the rounds and the
mean statements and cyclomatic complexity per round. The trivial candidates are each version's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from plbench.config import DIALECT_NAMES
from plbench.operators.procedural_ile import SUBSET as ILE
from plbench.operators.procedural_stage import MULTITURN, ProceduralIle, ile_rows, multiturn_rows, summary
from plbench.procedures.strength import trivial_candidates, trivial_texts
from plbench.records import Rejection
from plbench.spider.stages import SpiderInputs
from plbench.subsets.base import Staged, StagedSubset, Stages, SubsetRelease
from plbench.subsets.procedures import not_run_reason, validation_of
from plbench.taskrow import TaskRow


@dataclass
class Ingested:
    inputs: dict[str, str]  # the raw files read (relative path -> sha256)
    stage: ProceduralIle


@dataclass
class Built:
    """One subset's rows of the ILE run, and what its release part needs besides them."""

    subset: str
    ingested: Ingested
    rows: list[TaskRow]
    input_count: int
    units: list[tuple[str, str]]  # (source id, why it may lack a dialect) of every released unit
    versions: dict[str, object] = field(default_factory=dict)  # task id -> the version it was made from
    manifest: dict[str, dict] = field(default_factory=dict)


def _enhanced(stage: ProceduralIle) -> list:
    return [e for db in stage.databases for e in db.enhanced]


def _why(enhanced) -> str:
    return enhanced.final.seed.lifted.oracle_problem or "no text of this seed in this dialect"


def ile_ingest(config, spider1_raw: SpiderInputs, procedural_ile: ProceduralIle) -> Staged:
    """The enhanced seeds; a seed no round was accepted for is rejected with the proposals' reasons."""
    rejected = [r for db in procedural_ile.databases for r in db.rejections]
    seeds = sum(db.seeds for db in procedural_ile.databases)
    enhanced = len(_enhanced(procedural_ile))
    return Staged(Ingested(spider1_raw.inputs, procedural_ile), seeds, enhanced, rejected)


def ile_build(config, ingested: Ingested) -> Staged:
    """One A1 row per enhanced seed and dialect, from its final round."""
    stage = ingested.stage
    enhanced = _enhanced(stage)
    rows = ile_rows(stage.databases, stage.engine_version)
    built = Built(
        ILE,
        ingested,
        rows,
        sum(db.seeds for db in stage.databases),
        [(e.final.seed.seed_id, _why(e)) for e in enhanced],
        {f"{ILE}/{e.final.seed.seed_id}": e.final for e in enhanced},
        {"operators": stage.ledger.summary(), ILE: summary(stage)},
    )
    return Staged(built, len(enhanced), len(rows))


def multiturn_ingest(config, spider1_raw: SpiderInputs, procedural_ile: ProceduralIle) -> Staged:
    """The turns of the enhanced seeds; an episode refused is rejected once per turn."""
    rejected = [r for db in procedural_ile.databases for r in db.multiturn_rejections]
    turns = sum(len(e.history) for e in _enhanced(procedural_ile))
    kept = {(t.conversation_id, t.turn_index) for db in procedural_ile.databases for t in db.turns}
    return Staged(Ingested(spider1_raw.inputs, procedural_ile), turns, len(kept), rejected)


def multiturn_build(config, ingested: Ingested) -> Staged:
    """One row per turn and dialect, each with its own version's reference and call suite."""
    stage = ingested.stage
    enhanced = _enhanced(stage)
    rows = multiturn_rows(stage.databases, stage.engine_version)
    episodes = {t.conversation_id for db in stage.databases for t in db.turns}
    versions = {
        f"{MULTITURN}/{e.final.seed.seed_id}/turn{k}": version
        for e in enhanced
        for k, version in enumerate(e.history, start=1)
    }
    units = [
        (f"{e.final.seed.seed_id}/turn{k}", _why(e))
        for e in enhanced
        if f"{MULTITURN}/{e.final.seed.seed_id}" in episodes
        for k in range(1, len(e.history) + 1)
    ]
    section = {"episodes": len(episodes), "turns": len(units)}
    built = Built(
        MULTITURN, ingested, rows, sum(len(e.history) for e in enhanced), units, versions, {MULTITURN: section}
    )
    return Staged(built, len(units), len(rows))


def _missing(subset: str, units: list[tuple[str, str]], rows) -> list[Rejection]:
    """A rejection in every dialect a unit (source id, why it may lack a dialect) was not released in."""
    released = {(r.source_id, r.dialect) for r in rows}
    return [
        Rejection(subset, unit, "dialects", "not_in_dialect", why[:1000], dialect=target)
        for unit, why in units
        for target in DIALECT_NAMES
        if (unit, target) not in released
    ]


def _trivial(versions: dict[str, object], rows) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(task id, dialect) -> the trivial candidates of the row's own version, for the rows whose reference ran."""
    out = {}
    for row in rows:
        if row.replay_status == "passed":
            v = versions[row.task_id]
            out[row.key] = trivial_texts(trivial_candidates(v.seed, v.suite), row.dialect)
    return out


def validate(config, built: Built, engines: dict) -> Staged:
    """The subset's release part: rows not replayed say why, a unit missing in a dialect is rejected there."""
    stage = built.ingested.stage
    rows = [r if r.replay_status == "passed" else r.with_(replay_detail=not_run_reason(config)) for r in built.rows]
    missing = _missing(built.subset, built.units, rows)
    part = SubsetRelease(
        built.subset,
        built.input_count,
        built.ingested.inputs,
        rows,
        missing,
        validation_of(config, stage, rows),
        manifest=built.manifest,
        trivial_candidates=_trivial(built.versions, rows),
    )
    return Staged(part, len(rows) + len(missing), len(rows), missing)


class ProcedureIleSubset(StagedSubset):
    source_dataset = "Spider 1.0 (train and dev gold SQL)"
    licence = "CC-BY-SA-4.0"

    def __init__(self, name: str, summary_text: str, columns: tuple[str, ...], ingest, build):
        self.name, self.summary = name, summary_text
        self.required_columns = (
            "database",
            "reference_code",
            "scenario",
            "call_suite",
            "statements",
            "cyclomatic",
            "proposer",
            *columns,
        )
        self.stages = Stages(
            ingest=ingest, build=build, validate=validate, inputs=("spider1_raw", "procedural_ile"), validate_engines=()
        )


PROCEDURES_ILE = ProcedureIleSubset(
    ILE,
    "the procedures' A1 tasks with business rules added by Iterative Logic Enhancement: each round adds one rule "
    "to the reference (both dialects) and one clause to the requirement, and is kept only when the new reference "
    "runs, a call of its rebuilt suite tells it from the previous one, and the clause names what the change touches",
    ("ile_rounds",),
    ile_ingest,
    ile_build,
)
MULTITURN_SUBSET = ProcedureIleSubset(
    MULTITURN,
    "multi-turn episodes from ILE history: turn 1 asks for a seed procedure, each later turn to update it to also "
    "follow one more business rule, every turn with its own reference and call suite (one row per turn)",
    ("conversation_id", "turn_index", "turn_count"),
    multiturn_ingest,
    multiturn_build,
)
SUBSETS = (PROCEDURES_ILE, MULTITURN_SUBSET)
