"""Requirement perturbations of procedural tasks, each leaving a hidden-fact ledger entry (issue 11 §4).

Three operators of the one framework (`plbench.operators.framework`), each accepting a change only
by execution on the task's call suite (`AdapterContext.fails`, PostgreSQL):
- knowledge injection (op `jargon`): a stated fact becomes a term the requirement does not define;
  the ledger holds the explicit fact. Accepted only if an implementation that misses the fact
  diverges, so resolving the term matters;
- information omission (op `mask`): a fact is masked. Accepted only if an implementation ignoring
  it diverges on the call suite (that implementation is executed). On a task from procedural ILE,
  masking the last round's clause also needs the previous round's reference, executed, to diverge;
  the ledger entry's evidence names it;
- contradiction injection (op `contradiction`, or `env_contradiction` when the text contradicts the
  database): a conflicting statement is added. Accepted only if exactly one reading reproduces the
  reference: the reference is executed and reproduces the suite, and the other reading's
  implementation is executed and gives a different result on some call.
Every proposal ends in the framework's ledger with its verdict; an accepted one becomes an entry
`{id, op, key, answer}` of the task's hidden-fact ledger, with the execution evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from plbench.operators.framework import Ledger, Operator, Proposer, Rejected, run_round
from plbench.operators.procedural_ile import previous_reference
from plbench.procedures.archetypes import Seed
from plbench.procedures.scenarios.a3 import LEAKAGE
from plbench.procedures.tasks import AdapterContext
from plbench.records import Rejection

SUBSET = "interactive"
STAGE = "perturbations"
ID_PREFIX = {"jargon": "J", "mask": "M", "contradiction": "C", "env_contradiction": "E"}
PROPOSALS_PER_OPERATOR = 4
CONTRADICTIONS = ("contradiction", "env_contradiction")
PREVIOUS_ROUND = "the previous ILE round's reference differs"


@dataclass(frozen=True)
class Perturbation:
    """One proposed change of the requirement, with the implementation its gate executes.

    mask / jargon: `stated` (words of the requirement) becomes `replacement`; contradiction:
    `replacement` is a statement added to the requirement. `alternative` is the PostgreSQL procedure
    that ignores the fact (mask, jargon) or implements the conflicting reading (contradiction)."""

    rule_id: str  # "<op>:<fact id>" for a catalogue fact, "llm" for a model's
    op: str
    stated: str
    replacement: str
    key: str
    answer: str
    alternative: str
    fact_id: str = ""
    attempt: int = 1
    conversation: tuple = ()


@dataclass(frozen=True)
class HiddenFact:
    """A ledger entry of an Interactive task, with how execution proved it matters."""

    id: str
    op: str
    key: str
    answer: str
    evidence: str
    wrong: str = ""  # a contradiction's added statement: the reading the answer rejects

    def to_json(self) -> dict:
        out = {"id": self.id, "op": self.op, "key": self.key, "answer": self.answer, "evidence": self.evidence}
        return {**out, "wrong": self.wrong} if self.wrong else out


@dataclass(frozen=True)
class PerturbedState:
    """The requirement lines so far and the ledger they hide; `last` is the perturbation just applied."""

    task_id: str
    lines: tuple[str, ...]
    entries: tuple[HiddenFact, ...] = ()
    used: tuple[str, ...] = ()  # fact ids already perturbed (one perturbation per fact)
    last: Perturbation | None = None
    previous: Seed | None = None  # the previous ILE round's seed, when the task comes from procedural ILE

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def next_id(self, op: str) -> str:
        return f"{ID_PREFIX[op]}{1 + sum(e.op == op for e in self.entries)}"


@dataclass(frozen=True)
class PerturbRequest:
    """What a proposer is asked: a perturbation of kind `op` of this state."""

    state: PerturbedState
    op: str
    ctx: AdapterContext


def _applied(old: PerturbedState, p: Perturbation) -> tuple[str, ...] | Rejected:
    if p.op in ("mask", "jargon"):
        if not p.stated or p.stated not in old.text:
            return Rejected("fact_not_in_requirement", f"{p.stated[:200]!r} is not in the requirement", repairable=True)
        lines = tuple(line.replace(p.stated, p.replacement).strip() for line in old.lines)
        return tuple(line for line in lines if line)
    if not p.replacement.strip():
        return Rejected("no_statement_added", "a contradiction adds a statement", repairable=True)
    return old.lines + (p.replacement.strip(),)


def realize_for(ops: tuple[str, ...], evidence: str):
    """The realize step of an operator whose proposals have one of `ops`: the changed requirement and
    the ledger entry the change hides (kept only when every gate passes)."""

    def realize(old: PerturbedState, p: Perturbation, ctx: AdapterContext) -> PerturbedState | Rejected:
        if p.op not in ops:
            return Rejected("wrong_op", f"{p.op!r} is not one of {ops}", repairable=True)
        lines = _applied(old, p)
        if isinstance(lines, Rejected):
            return lines
        used = old.used + ((p.fact_id,) if p.fact_id else ())
        wrong = p.replacement.strip() if p.op in CONTRADICTIONS else ""
        entry = HiddenFact(old.next_id(p.op), p.op, p.key.strip(), p.answer.strip(), evidence, wrong)
        return replace(old, lines=lines, entries=old.entries + (entry,), used=used, last=p)

    return realize


def no_code(old: PerturbedState, new: PerturbedState, ctx: AdapterContext) -> Rejected | None:
    """The user must never reveal code: the ledger's key and answer, and the new text, hold none."""
    p = new.last
    for label, text in (("key", p.key), ("answer", p.answer), ("requirement", p.replacement)):
        if leak := LEAKAGE.search(text):
            return Rejected("ledger_leaks_code", f"the {label} holds {leak.group(0)[:60]!r}")
    if not p.key.strip() or not p.answer.strip():
        return Rejected("empty_ledger_entry", "a ledger entry needs a key and an answer", repairable=True)
    return None


def fact_hidden(old: PerturbedState, new: PerturbedState, ctx: AdapterContext) -> Rejected | None:
    """A masked or renamed fact is no longer stated anywhere in the requirement."""
    if new.last.stated in new.text:
        return Rejected("fact_still_stated", f"{new.last.stated[:200]!r} is still in the requirement")
    return None


def _differs(ctx: AdapterContext, procedure: str) -> str | Rejected:
    """Where `procedure` first differs from the reference on the suite (executed); Rejected when it
    does not install, since a procedure that cannot run proves nothing about a reading."""
    where = ctx.fails(procedure)
    if where.startswith("install:"):
        error = where.split(" vs ", 1)[-1]  # "install: None vs <the alternative's error>"
        return Rejected("alternative_does_not_install", f"the alternative does not install: {error}"[:500], True)
    return where


def _must_diverge(ctx: AdapterContext, alternative: str, code: str, detail: str) -> Rejected | None:
    """Rejected (`code`, `detail`) unless `alternative`, executed, differs from the reference on some call."""
    where = _differs(ctx, alternative)
    if isinstance(where, Rejected):
        return where
    return None if where else Rejected(code, detail)


def previous_round_text(state: PerturbedState, p: Perturbation, ctx: AdapterContext) -> str | None:
    """The previous ILE round's PostgreSQL reference when `p` masks (part of) the last round's clause."""
    clause = ctx.seed.requirement_lines[-1]
    if state.previous is None or p.op != "mask" or not p.stated or clause in state.previous.requirement_lines:
        return None
    if p.stated not in clause and clause not in p.stated:
        return None
    return previous_reference(state.previous, ctx.seed)


def previous_round_differs(old: PerturbedState, new: PerturbedState, ctx: AdapterContext) -> Rejected | None:
    """Masking the last ILE round's clause: the previous round's reference, which ignores it, diverges."""
    previous = previous_round_text(new, new.last, ctx)
    if previous is None:
        return None
    detail = "the previous ILE round's reference reproduces every call"
    return _must_diverge(ctx, previous, "previous_round_reproduces", detail)


def fact_matters(old: PerturbedState, new: PerturbedState, ctx: AdapterContext) -> Rejected | None:
    """An implementation that ignores the fact diverges from the reference on some call."""
    detail = "an implementation ignoring the fact reproduces every call"
    return _must_diverge(ctx, new.last.alternative, "fact_does_not_matter", detail)


def one_reading(old: PerturbedState, new: PerturbedState, ctx: AdapterContext) -> Rejected | None:
    """The stated reading (the reference) reproduces the suite and the conflicting one does not."""
    if reference := ctx.fails(ctx.seed.procedure.render("postgres")):
        return Rejected("reference_does_not_reproduce", reference)
    detail = "both readings give the same result on every call"
    return _must_diverge(ctx, new.last.alternative, "readings_behave_alike", detail)


KNOWLEDGE_INJECTION = Operator(
    "knowledge_injection",
    realize_for(("jargon",), "an implementation missing the fact differs"),
    (no_code, fact_hidden, fact_matters),
)
INFORMATION_OMISSION = Operator(
    "information_omission",
    realize_for(("mask",), "an implementation ignoring the fact differs"),
    (no_code, fact_hidden, previous_round_differs, fact_matters),
)
CONTRADICTION_INJECTION = Operator(
    "contradiction_injection",
    realize_for(
        ("contradiction", "env_contradiction"), "the reference reproduces the suite; the other reading differs"
    ),
    (no_code, one_reading),
)
PERTURBATIONS: tuple[tuple[Operator, str], ...] = (
    (KNOWLEDGE_INJECTION, "jargon"),
    (INFORMATION_OMISSION, "mask"),
    (CONTRADICTION_INJECTION, "contradiction"),
    (CONTRADICTION_INJECTION, "env_contradiction"),
)


@dataclass(frozen=True)
class Perturbed:
    """An Interactive variant of one seed: the perturbed requirement lines and its ledger."""

    seed_id: str
    lines: tuple[str, ...]
    ledger: tuple[HiddenFact, ...]
    proposer: str


def _with_evidence(new: PerturbedState, ctx: AdapterContext) -> PerturbedState:
    """The accepted state, its new entry saying which executed implementation diverged and where (the
    gates' cached runs): the alternative, or the previous ILE round's reference, or both."""
    *kept, entry = new.entries
    proofs = [(entry.evidence, new.last.alternative)]
    previous = previous_round_text(new, new.last, ctx)
    if previous is not None:
        proofs = [(PREVIOUS_ROUND, previous)] + ([] if previous == new.last.alternative else proofs)
    evidence = "; ".join(f"{label}: {ctx.fails(text)}" for label, text in proofs)
    return replace(new, entries=(*kept, replace(entry, evidence=evidence)), last=None)


def perturb(
    ctx: AdapterContext, proposer: Proposer, ledger: Ledger, previous: Seed | None = None
) -> Perturbed | Rejection:
    """One perturbation per operator on the seed's A1 requirement, each on another fact; `previous` is the
    previous ILE round's seed when `ctx` holds an enhanced one."""
    seed = ctx.seed
    state = PerturbedState(f"{SUBSET}/{seed.seed_id}", tuple(seed.requirement_lines), previous=previous)
    for round_no, (operator, op) in enumerate(PERTURBATIONS, start=1):
        request = PerturbRequest(state, op, ctx)
        new = run_round(
            operator, state, request, proposer, ctx, ledger, (state.task_id, round_no), PROPOSALS_PER_OPERATOR
        )
        if new is not None:
            state = _with_evidence(new, ctx)
    if not state.entries:
        reasons = sorted({e.reason_code for e in ledger.entries if e.task_id == state.task_id})
        detail = "every perturbation was rejected: " + (", ".join(reasons) or "no fact to perturb")
        return Rejection(SUBSET, seed.seed_id, STAGE, "no_perturbation_accepted", detail)
    return Perturbed(seed.seed_id, state.lines, state.entries, proposer.name)
