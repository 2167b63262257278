"""The model side of procedural ILE: a proposer that writes the new reference in both dialects, and
the judge of alignment. Both go through `plbench.llm` (answers cached by request hash) and
`plbench.operators.proposers.ask_json` (one JSON object, or a recorded rejection)."""

from __future__ import annotations

from dataclasses import replace

from plbench.operators.framework import Proposal, ProposalError
from plbench.operators.procedural_ile import ProcIleState, TextProcedure
from plbench.operators.proposers import ChatProposer, ask_json
from plbench.procedures.tasks import DIALECT_NAMES, requirement_text

FIELDS = ("clause", "postgres", "oracle")
SYSTEM = (
    "You add one business rule to a stored procedure. Reply with one JSON object and nothing else: "
    '{"clause": "<one sentence stating the new rule to the user, naming every table, column and value it uses>", '
    '"postgres": "<the complete new CREATE PROCEDURE in PL/pgSQL>", '
    '"oracle": "<the complete new CREATE OR REPLACE PROCEDURE in Oracle PL/SQL>"}. '
    "Keep the name {name} and the parameters ({params}); write only the tables it writes now; keep its behaviour "
    "except where the rule applies, and make the rule change what some call does."
)
JUDGE = (
    "You check that a requirement clause describes a change to a stored procedure exactly: what the new code "
    'does differently, with the same tables, columns and values. Reply with one JSON object: {"aligned": "yes" or '
    '"no", "reason": "<one sentence>"}.'
)


class ProcedureLLMProposer(ChatProposer):
    """One proposal per round from a model; up to two repairs from the compiler's or the calls' diagnostics."""

    def _messages(self, state: ProcIleState) -> list[dict]:
        proc = state.seed.procedure
        params = ", ".join(p.name for p in proc.params)
        code = "\n\n".join(f"{DIALECT_NAMES[d]}:\n{proc.render(d)}" for d in state.seed.dialects)
        user = f"Requirement:\n{requirement_text(state.seed.requirement_lines)}\n\nCurrent code:\n{code}"
        system = SYSTEM.replace("{name}", proc.name).replace("{params}", params)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _ask(self, messages: list[dict], state: ProcIleState, attempt: int) -> Proposal:
        parsed, answer = ask_json(self.client, messages, FIELDS)
        seed = state.seed
        texts = {d: parsed[d] for d in seed.dialects}
        proc = TextProcedure(seed.procedure.name, seed.procedure.params, texts)
        clause = parsed["clause"].strip()
        new = replace(seed, procedure=proc, requirement_lines=seed.requirement_lines + (clause,))
        conversation = (*messages, {"role": "assistant", "content": answer})
        params = tuple(p.name for p in proc.params)
        return Proposal("llm", clause, texts["postgres"], params, (), attempt, conversation, new)


class LLMJudge:
    """judge(old, new, clause): why the clause does not describe the change, or None when the model agrees."""

    def __init__(self, client):
        self.client = client

    def __call__(self, old_code: str, new_code: str, clause: str) -> str | None:
        user = f"Clause:\n{clause}\n\nCode before:\n{old_code}\n\nCode after:\n{new_code}"
        parsed, _ = ask_json(
            self.client,
            [{"role": "system", "content": JUDGE}, {"role": "user", "content": user}],
            ("aligned", "reason"),
        )
        verdict = parsed["aligned"].strip().lower()
        if verdict not in ("yes", "no"):
            raise ProposalError("answer_missing_fields", f"aligned must be yes or no: {parsed['aligned'][:50]!r}")
        return (
            None if verdict == "yes" else f"the judge says the clause does not describe the change: {parsed['reason']}"
        )
