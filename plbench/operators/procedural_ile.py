"""Iterative Logic Enhancement on procedural seeds (subsets `procedures_ile` and `multiturn`).

A round adds one business rule to a validated seed's reference procedure (both dialects) and one
clause to its requirement, through the operator framework (plbench.operators.framework):
- realize: the new reference installs and runs on PostgreSQL (a compile error, or a call failing
  with an error the procedure does not define, goes back to the proposer with the diagnostics, up to
  the repair budget); the Oracle text passes the static block checks; then the seed is validated
  as any seed is (call suite rebuilt from the database, deterministic on two fresh runs and a
  shuffled copy, mutants killed, trivial candidates failing);
- gates: some call of the new suite distinguishes the new reference from the previous round's
  (run with the new signature, ignoring what the rule added), and the clause is aligned with the
  change: it names every table, column, parameter and value the change adds to the code (always),
  and a model agrees when a judge is configured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp

from plbench.dialects.static_checks import check_block_structure
from plbench.operators.framework import DETERMINISTIC, Ledger, Operator, Proposal, Rejected, run_round
from plbench.operators.inputs import task_rng
from plbench.operators.procedural_rules import TEMPLATES, RuleContext, apply
from plbench.procedures.archetypes import Seed
from plbench.procedures.dialect_text import ERROR_CODES
from plbench.procedures.model import Procedure
from plbench.procedures.seeds import ValidatedSeed, validate
from plbench.procedures.strength import fails_suite
from plbench.procedures.suites import SuiteRejected, explore
from plbench.records import Rejection

SUBSET = "procedures_ile"
STAGE = "procedural_ile"
OPERATOR_NAME = "ile_procedures"
DEFAULT_ROUNDS = 3
DEFINED_ERRORS = frozenset(codes["postgres"].reported for codes in ERROR_CODES.values())


@dataclass
class ProcEnv:
    """The executor of procedural rounds: a workspace on the seed's database (and its shuffled twin),
    both databases' names, and the LLM judge of alignment when a model is configured."""

    workspace: object
    shuffled: object
    pg_db: object
    oracle_db: object | None
    judge: object | None = None  # judge(old_text, new_text, clause) -> why not aligned, or None


@dataclass(frozen=True)
class TextProcedure:
    """A reference written as text (a model's proposal), with the seed's name and parameters.

    It has no statement model, so no mutants are made of it; `with_body` gives the model procedures
    the trivial candidates need. Statements and cyclomatic complexity are read off the PostgreSQL text."""

    name: str
    params: tuple
    texts: dict[str, str]  # dialect -> CREATE PROCEDURE text
    body: tuple = ()
    counters: tuple[str, ...] = ()

    def render(self, dialect: str) -> str:
        return self.texts[dialect]

    def dialects(self) -> tuple[str, ...]:
        return tuple(sorted(self.texts))

    def with_body(self, body: tuple) -> Procedure:
        return Procedure(self.name, self.params, body)

    @property
    def statements(self) -> int:
        return len(_STATEMENT.findall(_body_text(self.texts["postgres"])))

    @property
    def cyclomatic(self) -> int:
        return 1 + len(_DECISION.findall(_body_text(self.texts["postgres"])))


_STATEMENT = re.compile(r";[ \t]*$", re.M)
_DECISION = re.compile(r"(?<!END )\bIF\b|\bELSIF\b|\bWHEN\b|\bAND\b|\bOR\b", re.I)
_BLOCK_END = re.compile(r"^\s*END( IF| LOOP| CASE)?\b[^;]*;\s*$", re.I | re.M)


def _body_text(text: str) -> str:
    """The statements between the first BEGIN and the end, without the END lines."""
    body = text.split("BEGIN", 1)[-1]
    return _BLOCK_END.sub("", body)


@dataclass(frozen=True)
class ProcIleState:
    """One version of an enhanced seed: the validated seed, every earlier version, the rules so far."""

    validated: ValidatedSeed
    history: tuple[ValidatedSeed, ...]  # every accepted version, the original seed first
    clauses: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    env: ProcEnv | None = field(default=None, compare=False)

    @property
    def seed(self) -> Seed:
        return self.validated.seed

    @property
    def round(self) -> int:
        return len(self.rules)

    def rule_context(self) -> RuleContext:
        return RuleContext(self.seed, self.env.pg_db, self.env.oracle_db, self.env.workspace, self.round + 1)


# ---- realize: install, run, repair diagnostics, then validate as a seed --------------------------


def _runs(seed: Seed, env: ProcEnv) -> Rejected | tuple:
    """The new reference installs and no call fails with an error the procedure does not define; the
    candidate calls' run (suites.explore), which the suite is then built from."""
    for target in seed.dialects:
        problems = check_block_structure(seed.procedure.render(target))
        if problems:
            return Rejected("does_not_compile", f"{target}: {'; '.join(problems)}", repairable=True)
    args, trace = explore(seed, env.workspace)
    if trace.install_error:
        return Rejected("does_not_compile", f"postgres: {trace.install_error}", repairable=True)
    for i, call in enumerate(trace.calls, start=1):
        if call.error is not None and call.error not in DEFINED_ERRORS:
            detail = f"postgres call {i} ({call.call}) failed: {call.error} {call.message}"
            return Rejected("does_not_run", detail[:500], repairable=True)
    return args, trace


def realize(old: ProcIleState, proposal: Proposal, env: ProcEnv) -> ProcIleState | Rejected:
    seed: Seed = proposal.payload
    explored = _runs(seed, env)
    if isinstance(explored, Rejected):
        return explored
    try:
        validated = validate(seed, env.workspace, env.shuffled, explored)
    except SuiteRejected as exc:
        return Rejected(exc.reason_code, exc.detail)
    return replace(
        old,
        validated=validated,
        history=old.history + (validated,),
        clauses=old.clauses + (proposal.clause,),
        rules=old.rules + (proposal.rule_id,),
    )


# ---- gates ------------------------------------------------------------------------------------------


def previous_procedure(old: Seed, new: Seed) -> Procedure:
    """The previous round's reference with the new signature (ignoring any added parameter)."""
    if tuple(p.name for p in old.procedure.params) == tuple(p.name for p in new.procedure.params):
        return old.procedure
    return replace(old.procedure, params=new.procedure.params, _rendered={})


def previous_reference(old: Seed, new: Seed) -> str:
    """The previous round's PostgreSQL reference with the new signature."""
    return previous_procedure(old, new).render("postgres")


def distinguishes(old: ProcIleState, new: ProcIleState, env: ProcEnv) -> Rejected | None:
    """Some call of the rebuilt suite tells the new reference from the previous one (executed; the verdict is
    kept with the new version's, for an Interactive variant's omission of the round's clause, which asks it)."""
    previous = previous_reference(old.seed, new.seed)
    new.validated.strength.verdicts[previous] = fails_suite(env.workspace, new.seed, new.validated.suite, previous)
    if not new.validated.strength.verdicts[previous]:
        calls = len(new.validated.suite.args)
        return Rejected("changes_nothing", f"the previous reference reproduces all {calls} calls of the new suite")
    return None


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_STRING = re.compile(r"'((?:[^']|'')*)'")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _setup_names(seed: Seed) -> set[str]:
    names = set()
    for statement in seed.setup.get("postgres", []):
        tree = sqlglot.parse_one(statement, read="postgres")
        names |= {n.name.lower() for n in tree.find_all(exp.Table, exp.ColumnDef, exp.Column)}
    return names


def _tokens(text: str, names: set[str]) -> set[str]:
    """Names of the database, literals and numbers in a procedure's text (a message, with spaces, is not
    observable: the grader compares the error code)."""
    strings = {s for s in _STRING.findall(text) if " " not in s}
    bare = _STRING.sub(" ", text)
    words = {w.lower() for w in _WORD.findall(bare) if w.lower() in names}
    return strings | words | set(_NUMBER.findall(bare))


def touched(old: Seed, new: Seed, db) -> list[str]:
    """What the change adds to the PostgreSQL text: tables, columns, parameters, literals and numbers."""
    names = {t.target.name.lower() for t in db.tables} | {c.target.name.lower() for t in db.tables for c in t.columns}
    names |= {p.name.lower() for p in new.procedure.params} | _setup_names(new)
    before = _tokens(old.procedure.render("postgres"), names)
    return sorted(_tokens(new.procedure.render("postgres"), names) - before)


def _named(token: str, clause: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(token)}(?!\w)", clause, re.I) is not None


def aligned(old: ProcIleState, new: ProcIleState, env: ProcEnv) -> Rejected | None:
    clause = new.clauses[-1]
    missing = [t for t in touched(old.seed, new.seed, env.pg_db) if not _named(t, clause)]
    if missing:
        return Rejected("clause_misaligned", f"the clause does not name {missing}: {clause[:300]}")
    if env.judge is not None:
        why = env.judge(old.seed.procedure.render("postgres"), new.seed.procedure.render("postgres"), clause)
        if why:
            return Rejected("judge_misaligned", why[:500])
    return None


OPERATOR = Operator(OPERATOR_NAME, realize, (distinguishes, aligned))


# ---- the deterministic proposer ---------------------------------------------------------------------


class ProcedureRuleProposer:
    """The templates of plbench.operators.procedural_rules, in an order seeded by the seed id."""

    name = DETERMINISTIC

    def __init__(self, templates=TEMPLATES):
        self.templates = templates

    def proposals(self, state: ProcIleState):
        if not isinstance(state.seed.procedure, Procedure):
            return  # a model wrote the current reference as text: the templates edit the model only
        order = list(self.templates)
        task_rng(state.seed.seed_id, "procedure_rules").shuffle(order)
        for template in order:
            if template.rule_id in state.rules:
                continue
            change = apply(template, state.rule_context())
            if change is not None:
                proc = change.seed.procedure
                params = tuple(p.name for p in proc.params)
                yield Proposal(template.rule_id, change.clause, proc.render("postgres"), params, payload=change.seed)

    def repair(self, state: ProcIleState, proposal: Proposal, diagnostics: str) -> Proposal | None:
        return None  # templates are tested; a rejected one is recorded, the next one tried


# ---- rounds -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EnhancedSeed:
    history: tuple[ValidatedSeed, ...]  # the seed, then one version per accepted round
    clauses: tuple[str, ...]
    rules: tuple[str, ...]
    proposer: str

    @property
    def rounds(self) -> int:
        return len(self.rules)

    @property
    def final(self) -> ValidatedSeed:
        return self.history[-1]


def enhance(validated: ValidatedSeed, env: ProcEnv, proposer, rounds: int, ledger: Ledger) -> EnhancedSeed | Rejection:
    """Up to `rounds` accepted rounds on one seed; rejected with the reasons when none is accepted."""
    state = ProcIleState(validated, (validated,), env=env)
    seed_id = validated.seed.seed_id
    for round_no in range(1, rounds + 1):
        new = run_round(OPERATOR, state, state, proposer, env, ledger, (seed_id, round_no), len(TEMPLATES))
        if new is None:
            break
        state = new
    if not state.rules:
        reasons = sorted({e.reason_code for e in ledger.entries if e.task_id == seed_id}) or ["no template applies"]
        return Rejection(
            SUBSET, seed_id, STAGE, "no_round_accepted", "every proposal was rejected: " + ", ".join(reasons)
        )
    return EnhancedSeed(state.history, state.clauses, state.rules, proposer.name)
