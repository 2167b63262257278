"""The build stage of subset `interactive`: every validated procedural seed of a database perturbed into an
Interactive task (one row per dialect), or rejected with the reason.

Counts reconcile per dialect: each seed is one input; it ends as its row, or as a rejection (every
perturbation rejected: `no_perturbation_accepted`; a seed without text in a dialect: `dialect_not_rendered`).
Every proposal's verdict is in the ledger, so the manifest reports acceptance per operator.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from plbench.interactive.tasks import seed_rows
from plbench.normalize.emit import NormalizedDatabase
from plbench.operators.framework import Ledger, Proposer
from plbench.operators.perturbations import STAGE, SUBSET
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
        """The manifest's view: tasks per dialect, hidden facts per op, entries per task."""
        entries = list({r.task_id: json.loads(r.ledger) for r in self.rows}.values())  # one a task, any dialect
        return {
            "seeds": self.seeds,
            "tasks": dict(sorted(Counter(r.dialect for r in self.rows).items())),
            "hidden_facts_by_op": dict(sorted(Counter(e["op"] for ledger in entries for e in ledger).items())),
            "entries_per_task": dict(sorted(Counter(len(ledger) for ledger in entries).items())),
            "rejected": dict(sorted(Counter(r.reason_code for r in self.rejections).items())),
        }


def database_variants(
    engine,
    pg_db: NormalizedDatabase,
    oracle_db: NormalizedDatabase | None,
    seeds: list[ValidatedSeed],
    proposer: Proposer,
) -> InteractiveOutput:
    """The Interactive rows of one database's validated seeds, perturbed on a PostgreSQL workspace of it."""
    out = InteractiveOutput(seeds=len(seeds))
    if not seeds:
        return out
    version = engine.version()
    with engine.session(reads=(pg_db.schema_name,)) as session:
        workspace = Workspace(session, pg_db)
        for validated in seeds:
            ctx = context(validated, pg_db, oracle_db, workspace, frozenset({engine.dialect}))
            rows = seed_rows(ctx, proposer, out.ledger, version)
            if isinstance(rows, Rejection):
                out.rejections.append(rows)
                continue
            out.rows += rows
            for target in sorted(set(DIALECT_NAMES) - {r.dialect for r in rows}):
                why = f"the seed's procedure has no {target} text"
                out.rejections.append(
                    Rejection(SUBSET, validated.seed.seed_id, STAGE, "dialect_not_rendered", why, target)
                )
    return out
