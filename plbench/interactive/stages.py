"""The build stage of subset `interactive`: every validated procedural seed of a database perturbed into an
Interactive task (one row per dialect), or rejected with the reason.

Which version of a seed is perturbed (`variant_sources`): the final round when procedural ILE enhanced the seed
and made its procedures_ile task (the Direct twin), else the seed itself (twin: its A1 task), so a seed ILE did
not enhance still gets its variant. Counts reconcile per dialect: each seed is one input; it ends as its row,
or as a rejection (every perturbation rejected: `no_perturbation_accepted`; a seed without text in a dialect:
`dialect_not_rendered`). Every proposal's verdict is in the ledger, so the manifest reports acceptance per
operator.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from plbench.interactive.tasks import VariantSource, enhanced_source, plain_source, seed_rows
from plbench.normalize.emit import NormalizedDatabase
from plbench.operators.framework import Ledger, Proposer
from plbench.operators.perturbations import PREVIOUS_ROUND, STAGE, SUBSET
from plbench.operators.procedural_ile import EnhancedSeed
from plbench.procedures.build import context
from plbench.procedures.seeds import ValidatedSeed
from plbench.procedures.tasks import DIALECT_NAMES
from plbench.procedures.workspace import Workspace
from plbench.records import Rejection
from plbench.taskrow import TaskRow


@dataclass
class InteractiveOutput:
    rows: list[TaskRow] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    seeds: int = 0  # the inputs: validated seeds

    def extend(self, other: InteractiveOutput) -> None:
        self.rows += other.rows
        self.rejections += other.rejections
        self.ledger.extend(other.ledger)
        self.seeds += other.seeds

    def summary(self) -> dict:
        """The manifest's view: tasks per dialect, tasks made of ILE final rounds and of plain seeds, masks the
        previous ILE round's reference proved, hidden facts per op, entries per task."""
        tasks = {r.task_id: r for r in self.rows}  # one row a task, any dialect: they share the ledger
        entries = [json.loads(r.ledger) for r in tasks.values()]
        proven = [e for ledger in entries for e in ledger if e["evidence"].startswith(PREVIOUS_ROUND)]
        return {
            "seeds": self.seeds,
            "tasks": dict(sorted(Counter(r.dialect for r in self.rows).items())),
            "variants_of": {
                "ile_final_round": sum(r.ile_rounds is not None for r in tasks.values()),
                "plain_seed": sum(r.ile_rounds is None for r in tasks.values()),
            },
            "omissions_proven_by_previous_round": len(proven),
            "hidden_facts_by_op": dict(sorted(Counter(e["op"] for ledger in entries for e in ledger).items())),
            "entries_per_task": dict(sorted(Counter(len(ledger) for ledger in entries).items())),
            "rejected": dict(sorted(Counter(r.reason_code for r in self.rejections).items())),
        }


def ile_twins(databases) -> dict[str, tuple[EnhancedSeed, str]]:
    """seed id -> (what procedural ILE made of it, the id its procedures_ile task carries), for every enhanced
    seed whose procedures_ile task was made (`databases`: the procedural_ile asset's DatabaseIle list)."""
    made = {t.seed_id: t.task_id for db in databases for t in db.tasks}
    enhanced = (e for db in databases for e in db.enhanced)
    return {e.final.seed.seed_id: (e, made[e.final.seed.seed_id]) for e in enhanced if e.final.seed.seed_id in made}


def variant_sources(seeds: list[ValidatedSeed], twins: dict[str, tuple[EnhancedSeed, str]]) -> list[VariantSource]:
    """Each seed's version to perturb: ILE's final round when `twins` (ile_twins) has the seed, else the seed."""
    return [enhanced_source(*twins[v.seed.seed_id]) if v.seed.seed_id in twins else plain_source(v) for v in seeds]


def database_variants(
    engine,
    pg_db: NormalizedDatabase,
    oracle_db: NormalizedDatabase | None,
    sources: list[VariantSource],
    proposer: Proposer,
) -> InteractiveOutput:
    """The Interactive rows of one database's seeds (`sources`: variant_sources), perturbed on a PostgreSQL
    workspace of it."""
    out = InteractiveOutput(seeds=len(sources))
    if not sources:
        return out
    version = engine.version()
    with engine.session(reads=(pg_db.schema_name,)) as session:
        workspace = Workspace(session, pg_db)
        for source in sources:
            ctx = context(source.validated, pg_db, oracle_db, workspace, frozenset({engine.dialect}))
            rows = seed_rows(ctx, source, proposer, out.ledger, version)
            if isinstance(rows, Rejection):
                out.rejections.append(rows)
                continue
            out.rows += rows
            for target in sorted(set(DIALECT_NAMES) - {r.dialect for r in rows}):
                why = f"the seed's procedure has no {target} text"
                out.rejections.append(Rejection(SUBSET, source.seed_id, STAGE, "dialect_not_rendered", why, target))
    return out
