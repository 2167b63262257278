"""How strong a call suite is: the share of mutants it kills, and whether trivial candidates fail it.

Trivial candidates keep the reference's signature: `noop` does nothing, `first_call_only` does the
reference's work only for the first call's arguments, `state_change_removed` is the reference without
its DML statements. A released task must be failed by all three.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from plbench.procedures.archetypes import Seed
from plbench.procedures.model import IfElse, Procedure, Sql
from plbench.procedures.mutants import Mutant, mutants_of
from plbench.procedures.suites import (
    CallSuite,
    call_text,
    first_difference,
    literal,
    record_suite,
    run_seed,
    wide_args,
)
from plbench.procedures.workspace import Trace, Workspace


@dataclass
class Strength:
    total: int = 0
    killed: int = 0
    by_operator: dict[str, list[int]] = field(default_factory=dict)  # operator -> [total, killed]
    survivors: list[str] = field(default_factory=list)  # "<operator>: <description>"
    surviving: list[Mutant] = field(default_factory=list)
    trivial_passed: list[str] = field(default_factory=list)  # trivial candidates that pass the suite
    # procedure text -> fails_suite's answer on the suite, for every mutant and trivial candidate measured, and
    # what procedural ILE ran on it (the round's reference, the previous round's): the adapters and the
    # perturbation gates ask about some of them again (AdapterContext.verdicts starts from these)
    verdicts: dict[str, str] = field(default_factory=dict)

    @property
    def kill_rate(self) -> float:
        return self.killed / self.total if self.total else 1.0


def expected_trace(suite: CallSuite) -> Trace:
    return Trace(initial=suite.initial, calls=list(suite.expected))


def fails_suite(workspace: Workspace, seed: Seed, suite: CallSuite, procedure: str) -> str:
    """'' when `procedure` reproduces the suite, else where it first differs (the run stops there)."""
    calls = [r.call for r in suite.expected]

    def same_so_far(index: int, result) -> bool:
        return result.observed() == suite.expected[index].observed()

    trace = run_seed(workspace, seed, calls, procedure, inspect=same_so_far)
    return first_difference(expected_trace(suite), trace)


def _without_dml(body: tuple) -> tuple:
    out = []
    for s in body:
        if isinstance(s, IfElse):
            out.append(IfElse(s.condition, _without_dml(s.then), _without_dml(s.orelse)))
        elif not isinstance(s, Sql):
            out.append(s)
    return tuple(out)


def trivial_candidates(seed: Seed, suite: CallSuite) -> dict[str, Procedure]:
    proc = seed.procedure
    first = " AND ".join(
        f"{p.name} IS NOT DISTINCT FROM {literal(v, p, 'postgres')}" for p, v in zip(proc.params, suite.args[0])
    )
    return {
        "noop": proc.with_body(()),
        "first_call_only": proc.with_body((IfElse(first, proc.body, ()),)),
        "state_change_removed": proc.with_body(_without_dml(proc.body)),
    }


def trivial_texts(candidates: dict[str, Procedure], dialect: str) -> list[tuple[str, str]]:
    """(name, text in `dialect`) of each trivial candidate, as the release gate runs them."""
    return [(name, proc.render(dialect)) for name, proc in candidates.items()]


def text_columns(workspace: Workspace, seed: Seed) -> dict[str, list[str]]:
    """Text columns of the tables the seed writes (targets for the wrong-column mutant)."""
    return {t: list(workspace.db.text_columns[t]) for t in seed.writes if t in workspace.db.text_columns}


def measure(workspace: Workspace, seed: Seed, suite: CallSuite, previous: Strength | None = None) -> Strength:
    """Run every mutant and trivial candidate of the seed against its suite (PostgreSQL).

    With `previous`, the strength of a suite whose calls this one begins with, only its survivors and the
    trivial candidates that passed it run again: what a deterministic suite's first calls tell apart, the
    whole suite does (and, stopping at the first difference, says it as the first calls did)."""
    strength = Strength(verdicts=dict(previous.verdicts) if previous else {})
    counts: Counter = Counter()
    if previous is None:
        mutants = mutants_of(seed.procedure, {"text_columns": text_columns(workspace, seed)})
        trivial = trivial_candidates(seed, suite)
    else:
        mutants = previous.surviving
        trivial = {n: p for n, p in trivial_candidates(seed, suite).items() if n in previous.trivial_passed}
        strength.total = strength.killed = previous.killed
        counts.update({(op, True): killed for op, (_, killed) in previous.by_operator.items()})
    for mutant in mutants:
        killed = bool(_verdict(strength, workspace, seed, suite, mutant.procedure.render("postgres")))
        counts[(mutant.operator, killed)] += 1
        strength.total += 1
        strength.killed += killed
        if not killed:
            strength.survivors.append(f"{mutant.operator}: {mutant.description}")
            strength.surviving.append(mutant)
    for op in sorted({op for op, _ in counts}):
        strength.by_operator[op] = [counts[(op, True)] + counts[(op, False)], counts[(op, True)]]
    for name, proc in trivial.items():
        if not _verdict(strength, workspace, seed, suite, proc.render("postgres")):
            strength.trivial_passed.append(name)
    return strength


def _verdict(strength: Strength, workspace: Workspace, seed: Seed, suite: CallSuite, procedure: str) -> str:
    strength.verdicts[procedure] = fails_suite(workspace, seed, suite, procedure)
    return strength.verdicts[procedure]


def _diverging_index(a: Trace, b: Trace) -> int | None:
    for i, (x, y) in enumerate(zip(a.calls, b.calls)):
        if x.observed() != y.observed():
            return i
    return None


def strengthen(
    workspace: Workspace, shuffled: Workspace, seed: Seed, suite: CallSuite, survivors: list[Mutant]
) -> CallSuite:
    """The suite with a call appended for each surviving mutant that some wider argument tells apart.

    The wider arguments run after the suite in one reference run and one run per survivor, which stops at
    the first call where the survivor differs: that call is appended (it may still survive there, since the
    state before that call differs; `measure` says so afterwards)."""
    pool = [a for a in wide_args(seed, workspace) if a not in suite.args]
    if not pool or not survivors:
        return suite
    base = [r.call for r in suite.expected]
    calls = base + [call_text(seed, a, "postgres") for a in pool]
    reference = run_seed(workspace, seed, calls)

    def same_so_far(index: int, result) -> bool:
        return index < len(reference.calls) and result.observed() == reference.calls[index].observed()

    added = list(suite.args)
    for mutant in survivors:
        run = run_seed(workspace, seed, calls, mutant.procedure.render("postgres"), inspect=same_so_far)
        index = _diverging_index(reference, run)
        if index is not None and index >= len(base) and pool[index - len(base)] not in added:
            added.append(pool[index - len(base)])
    return suite if len(added) == len(suite.args) else record_suite(seed, added, workspace, shuffled)
