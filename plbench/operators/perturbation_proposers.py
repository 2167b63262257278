"""The two proposers of requirement perturbations behind the framework's one interface.

`DeterministicPerturbationProposer` draws from the fact catalogue (`plbench.operators.facts`): for the
requested op, each fact of the seed not yet perturbed, in an order seeded by the task id, its texts
filled from the catalogue row and the jargon term drawn from the same seed. `LLMPerturbationProposer`
asks an OpenAI-compatible model (answers cached by request hash) for one JSON object and repairs
from the gate's diagnostics when its text or its alternative implementation is unusable.
"""

from __future__ import annotations

from collections.abc import Iterator

from plbench.operators.facts import JARGON_WORDS, TEXT_OPS, Fact, facts_of
from plbench.operators.framework import DETERMINISTIC, ProposalError
from plbench.operators.inputs import task_rng
from plbench.operators.perturbations import Perturbation, PerturbRequest
from plbench.operators.proposers import ChatProposer, ask_json

FACTS = "perturbation facts"  # the AdapterContext.checked key of seed_facts


def jargon_term(task_id: str) -> str:
    return task_rng(task_id, "jargon").choice(JARGON_WORDS)


def catalogue_perturbation(fact: Fact, op: str, term: str) -> Perturbation:
    """The perturbation `op` of one catalogue fact (its texts as the catalogue row writes them)."""
    rule_id = f"{op}:{fact.kind.kind}"
    ignored, opposite = fact.ignored.render("postgres"), fact.opposite.render("postgres")
    if op == "jargon":
        name = f"{term} {fact.kind.noun}"
        replacement = fact.text("jargon", term)
        answer = f"The {name}: {fact.explicit[0].lower()}{fact.explicit[1:]}"
        return Perturbation(
            rule_id, op, fact.stated, replacement, f"What is the {name}?", answer, ignored, fact.fact_id
        )
    if op == "mask":
        topic = fact.text("topic")
        return Perturbation(rule_id, op, fact.stated, fact.text("masked"), topic, fact.explicit, ignored, fact.fact_id)
    other = fact.text("other")
    key = f"Which statement about {fact.text('topic')} is correct?"
    answer = f'{fact.explicit} The statement "{other}" is wrong.'
    return Perturbation(rule_id, op, "", other, key, answer, opposite, fact.fact_id)


def seed_facts(request: PerturbRequest) -> list[Fact]:
    """The catalogue's facts of the request's seed (and previous ILE round), found once for every op asked
    of it: kept in the context, with the previous round they were found with."""
    previous, held = request.state.previous, request.ctx.checked.get(FACTS)
    if held is None or held[0] is not previous:
        held = request.ctx.checked[FACTS] = (previous, facts_of(request.ctx.seed, previous))
    return held[1]


class DeterministicPerturbationProposer:
    name = DETERMINISTIC

    def proposals(self, request: PerturbRequest) -> Iterator[Perturbation]:
        state = request.state
        facts = [f for f in seed_facts(request) if request.op in f.kind.ops]
        task_rng(state.task_id, f"facts:{request.op}").shuffle(facts)
        facts.sort(key=lambda f: f.kind.ops == TEXT_OPS)  # a kind made for this op first (an ILE task's last clause)
        # an env contradiction conflicts with the database, so the words it is about may be perturbed already
        about_text = request.op != "env_contradiction"
        for fact in facts:
            if fact.fact_id not in state.used and (fact.stated in state.text or not about_text):
                yield catalogue_perturbation(fact, request.op, jargon_term(state.task_id))

    def repair(self, request: PerturbRequest, proposal: Perturbation, diagnostics: str) -> Perturbation | None:
        return None  # catalogue rows are tested; a rejected one is recorded and the next fact tried


WHAT = {
    "jargon": "Replace one explicit fact of the requirement by a term it does not define (jargon, a reasoning "
    "step or a commonsense reference). `stated`: the exact words replaced; `replacement`: the words with "
    "the term; `key`: the question that asks what the term means; `answer`: the explicit fact.",
    "mask": "Mask one fact of the requirement: say less, so that the solver must ask. `stated`: the exact "
    "words removed; `replacement`: the vaguer words in their place; `key`: what is left open; `answer`: "
    "the masked fact.",
    "contradiction": "Add one statement that conflicts with a fact of the requirement. `stated`: empty; "
    "`replacement`: the conflicting statement; `key`: the question that asks which is right; `answer`: "
    "which statement is right and which is wrong.",
    "env_contradiction": "State one thing about the database (its tables, columns or values) that its data "
    "contradicts, as if the requirement assumed it. `stated`: empty; `replacement`: the false statement; `key`: "
    "the question that asks whether it holds; `answer`: what the database holds and that the statement is wrong.",
}
SYSTEM = (
    "You perturb the requirement of a PostgreSQL stored procedure for an interactive benchmark. {what} "
    "`alternative`: the complete PostgreSQL CREATE PROCEDURE, same name and parameters as the reference, "
    "that {reading}. The key and answer are in plain words, never code. Reply with one JSON object and "
    'nothing else: {{"stated": "...", "replacement": "...", "key": "...", "answer": "...", "alternative": "..."}}.'
)
READING = {
    "jargon": "implements the requirement without the fact",
    "mask": "implements the requirement without the fact",
    "contradiction": "implements the conflicting statement instead of the fact",
    "env_contradiction": "implements the requirement trusting the false statement about the database",
}


class LLMPerturbationProposer(ChatProposer):
    """One proposal per operator from a model; up to two repairs from the gates' diagnostics."""

    feedback = "Rejected: {diagnostics}\nReply with the corrected JSON object only."

    def _messages(self, request: PerturbRequest) -> list[dict]:
        numbered = "\n".join(f"{i}. {line}" for i, line in enumerate(request.state.lines, start=1))
        reference = request.ctx.seed.procedure.render("postgres")
        system = SYSTEM.format(what=WHAT[request.op], reading=READING[request.op])
        user = f"Requirement:\n{numbered}\n\nReference procedure:\n```sql\n{reference}\n```"
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _ask(self, messages: list[dict], request: PerturbRequest, attempt: int) -> Perturbation:
        required = ("replacement", "key", "answer", "alternative")
        parsed, answer = ask_json(self.client, messages, required)
        stated = parsed.get("stated", "")  # empty for a contradiction, which replaces nothing
        if not isinstance(stated, str):
            raise ProposalError("answer_missing_fields", f"stated must be a string: {answer[:200]!r}")
        conversation = (*messages, {"role": "assistant", "content": answer})
        fields = {k: parsed[k] for k in required}
        return Perturbation(
            "llm", request.op, stated, **fields, fact_id=f"llm:{stated}", attempt=attempt, conversation=conversation
        )
