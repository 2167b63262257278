"""What every operator shares: proposals, gates, verdicts and the ledger of every proposal.

An operator holds a validated task as a *state*. For each proposal a proposer makes, the operator
*realizes* it (executes the proposed code and builds the new state), then runs its *gates*; a gate
is a function of the old state, the new state and an executor that returns a rejection or None. A
realization that fails for a repairable reason (the code does not compile or run) goes back to the
proposer with the diagnostics, within the repair budget. Every proposal ends in the ledger, accepted
or rejected with a reason code, so acceptance rates per operator and the rejection reasons can be
reported. Procedural operators plug in with their own states, realize step and gates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from plbench.config import NotConfigured

REPAIR_BUDGET = 3  # attempts per proposal: the first one and two repairs from diagnostics
DETERMINISTIC = "deterministic"


def configured_proposer(choice: str, client: Callable[[], Any], rules: Callable, model: Callable):
    """The proposer a build chose (`PLBENCH_ILE_PROPOSER`): `rules()` (the rule templates) for
    "deterministic", `model(client())` for "llm"; ValueError for another choice or no configured model."""
    if choice == DETERMINISTIC:
        return rules()
    if choice != "llm":
        raise ValueError(f"PLBENCH_ILE_PROPOSER={choice!r}: expected 'deterministic' or 'llm'")
    configured = client()
    if isinstance(configured, NotConfigured):
        raise ValueError(f"PLBENCH_ILE_PROPOSER=llm but {configured.reason}")
    return model(configured)


@dataclass(frozen=True)
class Proposal:
    """One suggested change: which rule, the requirement clause and the code that implements it."""

    rule_id: str  # a template id, or "llm"
    clause: str
    code: str
    params: tuple[str, ...]  # the parameter names of the changed reference
    inputs: tuple[tuple, ...] = ()  # argument tuples to run the changed reference on
    attempt: int = 1
    conversation: tuple = ()  # an LLM proposer's messages so far, for a repair
    payload: Any = None  # the operator's own form of the change (a procedural ILE round: the new seed)


@dataclass(frozen=True)
class Rejected:
    """Why a proposal was not accepted; `repairable` sends the diagnostics back to the proposer."""

    reason_code: str
    detail: str = ""
    repairable: bool = False


class ProposalError(Exception):
    """A proposer could not produce a proposal (endpoint error, an answer that is not the format)."""

    def __init__(self, reason_code: str, detail: str):
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


class Proposer(Protocol):
    name: str  # "deterministic" or "llm:<model>"

    def proposals(self, request: Any) -> Iterator[Proposal]:
        """Proposals for one round, best first; may raise ProposalError."""

    def repair(self, request: Any, proposal: Proposal, diagnostics: str) -> Proposal | None:
        """A corrected proposal from the diagnostics, or None when the proposer cannot repair."""


Gate = Callable[[Any, Any, Any], Rejected | None]  # (old state, new state, executor) -> rejection or None


@dataclass(frozen=True)
class LedgerEntry:
    operator: str
    task_id: str
    round: int
    proposer: str
    rule_id: str
    attempts: int
    verdict: str  # "accepted" | "rejected"
    reason_code: str = ""
    detail: str = ""


@dataclass
class Ledger:
    """Every proposal any operator saw, with its verdict."""

    entries: list[LedgerEntry] = field(default_factory=list)

    def record(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)

    def extend(self, other: Ledger) -> None:
        self.entries.extend(other.entries)

    def summary(self) -> dict:
        """Per operator: proposals, accepted, rejected, acceptance rate, rejections by reason."""
        out = {}
        for op in sorted({e.operator for e in self.entries}):
            mine = [e for e in self.entries if e.operator == op]
            accepted = sum(e.verdict == "accepted" for e in mine)
            reasons = Counter(e.reason_code for e in mine if e.verdict == "rejected")
            out[op] = {
                "proposals": len(mine),
                "accepted": accepted,
                "rejected": len(mine) - accepted,
                "acceptance_rate": round(accepted / len(mine), 6),
                "rejection_rate": round(1 - accepted / len(mine), 6),
                "rejected_by_reason": dict(sorted(reasons.items())),
                "by_proposer": dict(sorted(Counter(e.proposer for e in mine).items())),
            }
        return out


@dataclass(frozen=True)
class Operator:
    """A named change with its realize step and gates."""

    name: str
    realize: Callable[[Any, Proposal, Any], Any]  # (old state, proposal, executor) -> new state | Rejected
    gates: tuple[Gate, ...]

    def judge(self, old: Any, proposal: Proposal, executor: Any) -> Any:
        """The new state when every gate passes, else the first rejection."""
        new = self.realize(old, proposal, executor)
        if isinstance(new, Rejected):
            return new
        for gate in self.gates:
            rejected = gate(old, new, executor)
            if rejected is not None:
                return rejected
        return new


def run_round(
    operator: Operator,
    old: Any,
    request: Any,
    proposer: Proposer,
    executor: Any,
    ledger: Ledger,
    where: tuple[str, int],
    max_proposals: int,
) -> Any | None:
    """Ask for proposals until one passes every gate; record each verdict. None when none passed."""
    task_id, round_no = where

    def entry(rule_id: str, attempts: int, verdict: str, reason: str = "", detail: str = "") -> LedgerEntry:
        return LedgerEntry(operator.name, task_id, round_no, proposer.name, rule_id, attempts, verdict, reason, detail)

    try:
        for n, proposal in enumerate(proposer.proposals(request)):
            if n >= max_proposals:
                break
            outcome = _judge_with_repairs(operator, old, request, proposal, proposer, executor)
            final, result = outcome
            if not isinstance(result, Rejected):
                ledger.record(entry(final.rule_id, final.attempt, "accepted"))
                return result
            ledger.record(entry(final.rule_id, final.attempt, "rejected", result.reason_code, result.detail[:500]))
    except ProposalError as exc:
        ledger.record(entry("-", 1, "rejected", exc.reason_code, exc.detail[:500]))
    return None


def _judge_with_repairs(operator, old, request, proposal, proposer, executor) -> tuple[Proposal, Any]:
    while True:
        try:
            result = operator.judge(old, proposal, executor)
        except ProposalError as exc:
            return proposal, Rejected(exc.reason_code, exc.detail)
        if not (isinstance(result, Rejected) and result.repairable and proposal.attempt < REPAIR_BUDGET):
            return proposal, result
        try:
            repaired = proposer.repair(request, proposal, result.detail)
        except ProposalError as exc:
            return proposal, Rejected(exc.reason_code, exc.detail)
        if repaired is None:
            return proposal, result
        proposal = repaired
